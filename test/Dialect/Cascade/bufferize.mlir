// RUN: cascade-opt %s -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s
// RUN: cascade-opt %s -cascade-decompose-levels=fuse-merges=false -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=DECOMP
// RUN: cascade-opt %s -cascade-decompose-levels -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=FUSED

// One-Shot Bufferize of the cascade ops: each op becomes its memref form (no
// results) writing into the buffers of its destinations. Function arguments
// are writable, so a destination that is a function argument is updated in
// place; a destination whose old value is still needed gets a new buffer,
// with a copy of the old contents only for merge_state_in_place (the one op
// that reads its destinations).

// CHECK-LABEL: func.func @merge_state
// CHECK-SAME: (%[[VA:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[SA:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>,
// CHECK-SAME: %[[VB:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[SB:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>,
// CHECK-SAME: %[[V:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[S:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: cascade.merge_state ins(%[[VA]], %[[SA]], %[[VB]], %[[SB]] : {{.*}}) outs(%[[V]], %[[S]] : memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, memref<?x32xf32, strided<[?, ?], offset: ?>>) {lse_base = #cascade.lse_base<base_e>}{{$}}
// CHECK-NEXT: return %[[V]], %[[S]]
func.func @merge_state(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>,
                       %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>,
                       %v: tensor<?x32x128xf16>, %s: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>) {lse_base = #cascade.lse_base<base_e>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// tensor.empty destinations become fresh buffers; nothing is copied.
// CHECK-LABEL: func.func @merge_state_into_empty
// CHECK: %[[N:.*]] = memref.dim
// CHECK: %[[AV:.*]] = memref.alloc(%[[N]]) {{.*}} : memref<?x32x128xf16>
// CHECK: %[[AS:.*]] = memref.alloc(%[[N]]) {{.*}} : memref<?x32xf32>
// CHECK-NOT: memref.copy
// CHECK: cascade.merge_state ins({{.*}}) outs(%[[AV]], %[[AS]] : memref<?x32x128xf16>, memref<?x32xf32>){{$}}
// CHECK-NOT: memref.copy
// CHECK: return %[[AV]], %[[AS]]
func.func @merge_state_into_empty(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>,
                                  %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %va, %c0 : tensor<?x32x128xf16>
  %v = tensor.empty(%n) : tensor<?x32x128xf16>
  %s = tensor.empty(%n) : tensor<?x32xf32>
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// A destination that aliases an input is not written in place: merge_state
// reads its inputs while it writes its destinations.
// CHECK-LABEL: func.func @merge_state_dest_aliases_input
// CHECK-SAME: (%[[VA:[^:]*]]: memref<4x8x64xf16, strided<[?, ?, ?], offset: ?>>, %[[SA:[^:]*]]: memref<4x8xf32, strided<[?, ?], offset: ?>>,
// CHECK: %[[AV:.*]] = memref.alloc() {{.*}} : memref<4x8x64xf16>
// CHECK: %[[AS:.*]] = memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK-NOT: memref.copy
// CHECK: cascade.merge_state ins(%[[VA]], %[[SA]], {{.*}}) outs(%[[AV]], %[[AS]] : memref<4x8x64xf16>, memref<4x8xf32>)
// CHECK: return %[[AV]], %[[AS]]
func.func @merge_state_dest_aliases_input(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>,
                                          %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>)
    -> (tensor<4x8x64xf16>, tensor<4x8xf32>) {
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%va, %sa : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x8x64xf16>, tensor<4x8xf32>
}

// merge_state_in_place on function arguments updates their buffers in place:
// no allocation, no copy; the mask is passed through.
// CHECK-LABEL: func.func @merge_state_in_place_masked
// CHECK-SAME: (%[[VO:[^:]*]]: memref<?x8x128xf32, strided<[?, ?, ?], offset: ?>>, %[[SO:[^:]*]]: memref<?x8xf32, strided<[?, ?], offset: ?>>,
// CHECK-SAME: %[[M:[^:]*]]: memref<?xi8, strided<[?], offset: ?>>,
// CHECK-SAME: %[[V:[^:]*]]: memref<?x8x128xf32, strided<[?, ?, ?], offset: ?>>, %[[S:[^:]*]]: memref<?x8xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: cascade.merge_state_in_place ins(%[[VO]], %[[SO]] : {{.*}}) mask(%[[M]] : memref<?xi8, strided<[?], offset: ?>>) outs(%[[V]], %[[S]] : memref<?x8x128xf32, strided<[?, ?, ?], offset: ?>>, memref<?x8xf32, strided<[?, ?], offset: ?>>){{$}}
// CHECK-NEXT: return %[[V]], %[[S]]
func.func @merge_state_in_place_masked(%vo: tensor<?x8x128xf32>, %so: tensor<?x8xf32>, %m: tensor<?xi8>,
                                       %v: tensor<?x8x128xf32>, %s: tensor<?x8xf32>)
    -> (tensor<?x8x128xf32>, tensor<?x8xf32>) {
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<?x8x128xf32>, tensor<?x8xf32>) mask(%m : tensor<?xi8>)
      outs(%v, %s : tensor<?x8x128xf32>, tensor<?x8xf32>) -> tensor<?x8x128xf32>, tensor<?x8xf32>
  return %r#0, %r#1 : tensor<?x8x128xf32>, tensor<?x8xf32>
}

// When the old value of `v` is still used, `v` gets a new buffer that must
// start as a copy of the old one (masked-off rows keep their old value and the
// merge reads them); `s` is still updated in place.
// CHECK-LABEL: func.func @merge_state_in_place_old_value_used
// CHECK-SAME: %[[V:[^:]*]]: memref<?x8x128xf32, strided<[?, ?, ?], offset: ?>>, %[[S:[^:]*]]: memref<?x8xf32, strided<[?, ?], offset: ?>>)
// CHECK: %[[NEW:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x8x128xf32>
// CHECK: memref.copy %[[V]], %[[NEW]]
// CHECK-NOT: memref.copy
// CHECK: cascade.merge_state_in_place ins({{.*}}) mask({{.*}}) outs(%[[NEW]], %[[S]] : memref<?x8x128xf32>, memref<?x8xf32, strided<[?, ?], offset: ?>>)
// CHECK: return %[[NEW]], %[[S]], %[[V]]
func.func @merge_state_in_place_old_value_used(%vo: tensor<?x8x128xf32>, %so: tensor<?x8xf32>, %m: tensor<?xi1>,
                                               %v: tensor<?x8x128xf32>, %s: tensor<?x8xf32>)
    -> (tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?x8x128xf32>) {
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<?x8x128xf32>, tensor<?x8xf32>) mask(%m : tensor<?xi1>)
      outs(%v, %s : tensor<?x8x128xf32>, tensor<?x8xf32>) -> tensor<?x8x128xf32>, tensor<?x8xf32>
  return %r#0, %r#1, %v : tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?x8x128xf32>
}

// CHECK-LABEL: func.func @merge_states
// CHECK-SAME: (%[[VIN:[^:]*]]: memref<?x16x32x128xbf16, strided<[?, ?, ?, ?], offset: ?>>, %[[SIN:[^:]*]]: memref<?x16x32xf32, strided<[?, ?, ?], offset: ?>>,
// CHECK-SAME: %[[V:[^:]*]]: memref<?x32x128xbf16, strided<[?, ?, ?], offset: ?>>, %[[S:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK: cascade.merge_states ins(%[[VIN]], %[[SIN]] : {{.*}}) outs(%[[V]], %[[S]] : memref<?x32x128xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x32xf32, strided<[?, ?], offset: ?>>){{$}}
// CHECK-NEXT: return %[[V]], %[[S]]
func.func @merge_states(%vs: tensor<?x16x32x128xbf16>, %ss: tensor<?x16x32xf32>,
                        %v: tensor<?x32x128xbf16>, %s: tensor<?x32xf32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %r:2 = cascade.merge_states ins(%vs, %ss : tensor<?x16x32x128xbf16>, tensor<?x16x32xf32>)
      outs(%v, %s : tensor<?x32x128xbf16>, tensor<?x32xf32>) -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func.func @paged_decode
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[C:[^:]*]]: memref<?x2x16x8x128xf16, strided<[?, ?, ?, ?, ?], offset: ?>>,
// CHECK-SAME: %[[KVP:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>, %[[KVI:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>, %[[LAST:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>,
// CHECK-SAME: %[[O:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[LSE:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK: cascade.paged_attention q(%[[Q]] : {{[^)]*}}) kv(%[[C]] : {{[^)]*}}) kv_indptr(%[[KVP]] : {{[^)]*}}) kv_indices(%[[KVI]] : {{[^)]*}}) kv_last_page_len(%[[LAST]] : {{[^)]*}})
// CHECK-SAME: outs(%[[O]], %[[LSE]] : memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, memref<?x32xf32, strided<[?, ?], offset: ?>>) {page_size = 16 : i64, window_left = 1024 : i64}{{$}}
// CHECK-NEXT: return %[[O]], %[[LSE]]
func.func @paged_decode(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                        %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                        %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, window_left = 1024 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// paged_attention overwrites its destinations completely: when the old `o` is
// still used, `o` gets a new buffer but nothing is copied into it.
// CHECK-LABEL: func.func @paged_decode_old_value_used
// CHECK-SAME: %[[O:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[LSE:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// CHECK: %[[NEW:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x32x128xf16>
// CHECK-NOT: memref.copy
// CHECK: cascade.paged_attention {{.*}} outs(%[[NEW]], %[[LSE]] : memref<?x32x128xf16>, memref<?x32xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.copy
// CHECK: return %[[NEW]], %[[LSE]], %[[O]]
func.func @paged_decode_old_value_used(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                                       %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                                       %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1, %o : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>
}

// Prefill with a (k, v) pair, HND: every operand keeps its position.
// CHECK-LABEL: func.func @paged_prefill_pair
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x8x64xbf16, strided<[?, ?, ?], offset: ?>>, %[[K:[^:]*]]: memref<?x1x8x64xbf16, strided<[?, ?, ?, ?], offset: ?>>, %[[V:[^:]*]]: memref<?x1x8x64xbf16, strided<[?, ?, ?, ?], offset: ?>>,
// CHECK-SAME: %[[QO:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>, %[[KVP:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>, %[[KVI:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>, %[[LAST:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>,
// CHECK-SAME: %[[O:[^:]*]]: memref<?x8x64xbf16, strided<[?, ?, ?], offset: ?>>, %[[LSE:[^:]*]]: memref<?x8xf32, strided<[?, ?], offset: ?>>)
// CHECK: cascade.paged_attention q(%[[Q]] : {{[^)]*}}) kv(%[[K]], %[[V]] : {{[^)]*}}) qo_indptr(%[[QO]] : {{[^)]*}}) kv_indptr(%[[KVP]] : {{[^)]*}}) kv_indices(%[[KVI]] : {{[^)]*}}) kv_last_page_len(%[[LAST]] : {{[^)]*}}) outs(%[[O]], %[[LSE]] : {{[^)]*}})
// CHECK-SAME: {causal, kv_layout = #cascade.kv_layout<hnd>, page_size = 8 : i64}{{$}}
func.func @paged_prefill_pair(%q: tensor<?x8x64xbf16>, %k: tensor<?x1x8x64xbf16>, %v: tensor<?x1x8x64xbf16>,
                              %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                              %o: tensor<?x8x64xbf16>, %lse: tensor<?x8xf32>)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x8x64xbf16>) kv(%k, %v : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x8x64xbf16>, tensor<?x8xf32>) {page_size = 8 : i64, kv_layout = #cascade.kv_layout<hnd>, causal}
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %r#0, %r#1 : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// multi_level_attention bufferizes as a whole (its operand segments are kept).
// CHECK-LABEL: func.func @two_level
// CHECK-SAME: %[[O:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[LSE:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: memref.alloc
// CHECK: cascade.multi_level_attention q(%{{[^ ]*}} : {{[^)]*}}) kv(%{{[^ ]*}} : {{[^)]*}})
// CHECK-SAME: qo_indptr(%{{[^,]*}}, %{{[^ ]*}} : memref<2xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>)
// CHECK-SAME: kv_indptr(%{{[^,]*}}, %{{[^ ]*}} : memref<2xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>)
// CHECK-SAME: kv_indices(%{{[^,]*}}, %{{[^ ]*}} : memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>)
// CHECK-SAME: kv_last_page_len(%{{[^,]*}}, %{{[^ ]*}} : memref<1xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>)
// CHECK-SAME: outs(%[[O]], %[[LSE]] : memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, memref<?x32xf32, strided<[?, ?], offset: ?>>) {causal, page_size = 16 : i64}{{$}}
// CHECK-NEXT: return %[[O]], %[[LSE]]

// After cascade-decompose-levels: level 0 writes into the destination
// buffers, level 1 into fresh buffers (from the tensor.empty temporaries,
// never copied), merged in place into the destination buffers.
// DECOMP-LABEL: func.func @two_level
// DECOMP-SAME: %[[O:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[LSE:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// DECOMP-NOT: memref.copy
// DECOMP: cascade.paged_attention {{.*}} qo_indptr(%{{.*}} : memref<2xi32, strided<[?], offset: ?>>) {{.*}} outs(%[[O]], %[[LSE]] : {{[^)]*}}) {page_size = 16 : i64}{{$}}
// DECOMP: %[[TV:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x32x128xf16>
// DECOMP: %[[TS:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x32xf32>
// DECOMP-NOT: memref.copy
// DECOMP: cascade.paged_attention {{.*}} outs(%[[TV]], %[[TS]] : memref<?x32x128xf16>, memref<?x32xf32>) {causal, page_size = 16 : i64}{{$}}
// DECOMP-NEXT: cascade.merge_state_in_place ins(%[[TV]], %[[TS]] : memref<?x32x128xf16>, memref<?x32xf32>) outs(%[[O]], %[[LSE]] : memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, memref<?x32xf32, strided<[?, ?], offset: ?>>){{$}}
// DECOMP-NOT: memref.copy
// DECOMP: return %[[O]], %[[LSE]]
func.func @two_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                     %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                     %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                     %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// Fused levels read and write the destination buffers in place: one
// buffer pair for the whole cascade, no temporaries, no copies.
// FUSED-LABEL: func.func @two_level
// FUSED-SAME: %[[O:[^:]*]]: memref<?x32x128xf16, strided<[?, ?, ?], offset: ?>>, %[[LSE:[^:]*]]: memref<?x32xf32, strided<[?, ?], offset: ?>>)
// FUSED-NOT: memref.alloc
// FUSED-NOT: memref.copy
// FUSED: cascade.paged_attention {{.*}} outs(%[[O]], %[[LSE]] : {{[^)]*}}) {page_size = 16 : i64}{{$}}
// FUSED-NEXT: cascade.paged_attention {{.*}} outs(%[[O]], %[[LSE]] : {{[^)]*}}) {accumulate, causal, page_size = 16 : i64}{{$}}
// FUSED-NOT: memref.copy
// FUSED: return %[[O]], %[[LSE]]

// Decomposing a 3-level cascade whose destinations start as tensor.empty:
// every level writes into fresh buffers, and no copy is ever made.
// DECOMP-LABEL: func.func @three_level_into_empty
// DECOMP-NOT: memref.copy
// DECOMP: %[[O:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x32x128xf16>
// DECOMP: %[[LSE:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x32xf32>
// DECOMP: cascade.paged_attention {{.*}} outs(%[[O]], %[[LSE]] : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}{{$}}
// DECOMP: cascade.paged_attention {{.*}} outs(%[[T1V:.*]], %[[T1S:.*]] : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}{{$}}
// DECOMP-NEXT: cascade.merge_state_in_place ins(%[[T1V]], %[[T1S]] : {{[^)]*}}) outs(%[[O]], %[[LSE]] :
// DECOMP: cascade.paged_attention {{.*}} outs(%[[T2V:.*]], %[[T2S:.*]] : memref<?x32x128xf16>, memref<?x32xf32>) {causal, page_size = 16 : i64}{{$}}
// DECOMP-NEXT: cascade.merge_state_in_place ins(%[[T2V]], %[[T2S]] : {{[^)]*}}) outs(%[[O]], %[[LSE]] :
// DECOMP-NOT: memref.copy
// DECOMP: return %[[O]], %[[LSE]]
func.func @three_level_into_empty(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                                  %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %qo2: tensor<?xi32>,
                                  %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %kp2: tensor<?xi32>,
                                  %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %ki2: tensor<?xi32>,
                                  %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %kl2: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o = tensor.empty(%rows) : tensor<?x32x128xf16>
  %lse = tensor.empty(%rows) : tensor<?x32xf32>
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1, %qo2 : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1, %kp2 : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1, %ki2 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1, %kl2 : tensor<1xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
