// Host code for the mgpu integration test: the two-level decode cascade of
// examples/cascade_two_level_planned.mlir in CUDA-graph mode, split into a
// plan function (run once per step on the host copies of the index arrays)
// and a run function (the launches), as FlashInfer's wrapper splits plan()
// and run(). B = 64 requests; every replan keeps the plans' device
// addresses and launch sizes (graph_rows = 64).
!shared = !cascade.plan<prefill, heads = 64 / 8, head_dim = 128, page_size = 16, graph_rows = 64>
!unique = !cascade.plan<decode, heads = 64 / 8, head_dim = 128, page_size = 16, graph_rows = 64>

func.func @plan_graph(%sqo: memref<2xi32>, %skv: memref<2xi32>, %slast: memref<1xi32>,
                      %ukv: memref<65xi32>, %ulast: memref<64xi32>) -> (!shared, !unique)
    attributes {llvm.emit_c_interface} {
  %shared = cascade.plan qo_indptr(%sqo : memref<2xi32>) kv_indptr(%skv : memref<2xi32>)
      kv_last_page_len(%slast : memref<1xi32>) : !shared
  %unique = cascade.plan kv_indptr(%ukv : memref<65xi32>) kv_last_page_len(%ulast : memref<64xi32>) : !unique
  return %shared, %unique : !shared, !unique
}

func.func @run_graph(%q: memref<64x64x128xf16>, %cache: memref<?x2x16x8x128xf16>,
    %sqo: memref<2xi32>, %skv: memref<2xi32>, %sidx: memref<?xi32>, %slast: memref<1xi32>,
    %uqo: memref<65xi32>, %ukv: memref<65xi32>, %uidx: memref<?xi32>, %ulast: memref<64xi32>,
    %shared: !shared, %unique: !unique, %o: memref<64x64x128xf16>, %lse: memref<64x64xf32>)
    attributes {llvm.emit_c_interface} {
  cascade.multi_level_attention q(%q : memref<64x64x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%sqo, %uqo : memref<2xi32>, memref<65xi32>)
      kv_indptr(%skv, %ukv : memref<2xi32>, memref<65xi32>)
      kv_indices(%sidx, %uidx : memref<?xi32>, memref<?xi32>)
      kv_last_page_len(%slast, %ulast : memref<1xi32>, memref<64xi32>)
      plans(%shared, %unique : !shared, !unique)
      outs(%o, %lse : memref<64x64x128xf16>, memref<64x64xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>}
  return
}
