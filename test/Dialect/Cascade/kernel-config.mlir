// RUN: cascade-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// #cascade.kernel_config round-trips on every op that lowers to a kernel.

// CHECK-LABEL: func.func @round_trip
// CHECK: cascade.merge_state {{.*}} {cascade.kernel_config = #cascade.kernel_config<merge, threads = [64, 1, 1], q_tile = 8, kv_tile = 0, stages = 1>}
// CHECK: cascade.paged_attention {{.*}} {cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 2, 2], q_tile = 64, kv_tile = 64, stages = 4>, page_size = 16 : i64}
func.func @round_trip(%va: memref<?x8x64xf16>, %sa: memref<?x8xf32>, %q: memref<?x8x64xf16>,
                      %cache: memref<?x2x16x1x64xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>,
                      %last: memref<?xi32>, %lse: memref<?x8xf32>) {
  cascade.merge_state ins(%va, %sa, %va, %sa : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%va, %sa : memref<?x8x64xf16>, memref<?x8xf32>)
      {cascade.kernel_config = #cascade.kernel_config<merge, threads = [64, 1, 1], q_tile = 8, kv_tile = 0, stages = 1>}
  cascade.paged_attention q(%q : memref<?x8x64xf16>) kv(%cache : memref<?x2x16x1x64xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%q, %lse : memref<?x8x64xf16>, memref<?x8xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 2, 2], q_tile = 64, kv_tile = 64, stages = 4>}
  return
}

// -----

// A launch bound prints where it is set; 0 (none) is the default and is not
// printed.
// CHECK-LABEL: func.func private @min_blocks
// CHECK-SAME: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 8>
// CHECK-LABEL: func.func private @min_blocks_zero
// CHECK-SAME: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4>}
func.func private @min_blocks() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 8>}
func.func private @min_blocks_zero() attributes {config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4, min_blocks_per_sm = 0>}

// -----

// expected-error@+1 {{min_blocks_per_sm must be in [0, 32], got 33}}
func.func private @min_blocks_range() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2, min_blocks_per_sm = 33>}

// -----

// expected-error@+1 {{min_blocks_per_sm is a rows or mma_sync option}}
func.func private @min_blocks_wgmma() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 2, 1], q_tile = 64, kv_tile = 64, stages = 2, min_blocks_per_sm = 2>}

// -----

// expected-error@+1 {{min_blocks_per_sm = 9 blocks of 256 threads exceed the 2048 threads an SM holds}}
func.func private @min_blocks_threads() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 2], q_tile = 64, kv_tile = 32, stages = 2, min_blocks_per_sm = 9>}

// -----

// expected-error@+1 {{threads must have 3 entries (x, y, z), got 2}}
func.func private @bad_threads() attributes {config = #cascade.kernel_config<merge, threads = [128, 1], q_tile = 8, kv_tile = 0, stages = 1>}

// -----

// expected-error@+1 {{a block has at most 1024 threads, got 2048}}
func.func private @too_many_threads() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 8, 8], q_tile = 128, kv_tile = 128, stages = 2>}

// -----

// expected-error@+1 {{merge: threads[0] (100) must be a multiple of q_tile (8), the states per block}}
func.func private @merge_threads() attributes {config = #cascade.kernel_config<merge, threads = [100, 1, 1], q_tile = 8, kv_tile = 0, stages = 1>}

// -----

// expected-error@+1 {{a merge kernel takes threads = [n, 1, 1], kv_tile = 0 and stages = 1}}
func.func private @merge_kv_tile() attributes {config = #cascade.kernel_config<merge, threads = [128, 1, 1], q_tile = 8, kv_tile = 16, stages = 1>}

// -----

// expected-error@+1 {{a rows kernel takes q_tile = 1 and threads[1] = 1}}
func.func private @rows_q_tile() attributes {config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 4, kv_tile = 32, stages = 2>}

// -----

// expected-error@+1 {{rows: kv_tile (20) must be a positive multiple of threads[2] (8)}}
func.func private @rows_kv_tile() attributes {config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 20, stages = 2>}

// -----

// expected-error@+1 {{mma_sync: threads[0] must be 32 (one warp), got 64}}
func.func private @mma_lanes() attributes {config = #cascade.kernel_config<mma_sync, threads = [64, 2, 1], q_tile = 64, kv_tile = 64, stages = 2>}

// -----

// expected-error@+1 {{mma_sync: q_tile (48) must be a multiple of 16 * threads[1] (64)}}
func.func private @mma_q_tile() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 48, kv_tile = 64, stages = 2>}

// -----

// expected-error@+1 {{mma_sync: kv_tile (32) must be a positive multiple of 16 * threads[2] (64)}}
func.func private @mma_kv_tile() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 32, stages = 2>}

// -----

// expected-error@+1 {{mma_sync: stages must be >= 2, got 1}}
func.func private @mma_stages() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 1>}

// -----

func.func @not_a_config(%va: memref<?x8x64xf16>, %sa: memref<?x8xf32>) {
  // expected-error@+1 {{'cascade.kernel_config' must be a #cascade.kernel_config, got 42 : i64}}
  cascade.merge_state ins(%va, %sa, %va, %sa : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%va, %sa : memref<?x8x64xf16>, memref<?x8xf32>) {cascade.kernel_config = 42 : i64}
  return
}

// -----

// expected-error@+1 {{'cascade.kernel_config' belongs on cascade.paged_attention and the merge ops}}
func.func private @on_a_function() attributes {cascade.kernel_config = #cascade.kernel_config<merge, threads = [128, 1, 1], q_tile = 8, kv_tile = 0, stages = 1>}

// -----

// expected-error@+1 {{unknown cascade attribute 'cascade.tile'}}
func.func private @unknown_attribute() attributes {cascade.tile = 4 : i64}

// -----

// expected-error@+1 {{wgmma: threads must be [128, 1 + consumer warpgroups, 1] (a producer warpgroup and at least one consumer)}}
func.func private @wgmma_no_consumer() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 1, 1], q_tile = 64, kv_tile = 128, stages = 2>}

// -----

// expected-error@+1 {{wgmma: q_tile (128) must be 64 rows per consumer warpgroup (64)}}
func.func private @wgmma_q_tile() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 2, 1], q_tile = 128, kv_tile = 128, stages = 2>}

// -----

// expected-error@+1 {{wgmma: kv_tile (264) must be a multiple of 16 in [16, 256]}}
func.func private @wgmma_kv_tile() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 264, stages = 2>}

// -----

// expected-error@+1 {{wgmma: stages must be >= 2, got 1}}
func.func private @wgmma_stages() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 1>}

// -----

// expected-error@+1 {{wgmma: joint K/V barriers need stages >= 3, got 2 (two stages deadlock: use kv_barriers = split)}}
func.func private @wgmma_joint_two_stages() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 2>}

// -----

// Split K/V rings work with two stages.
// CHECK-LABEL: func.func private @wgmma_split_two_stages
func.func private @wgmma_split_two_stages() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 2, kv_barriers = split>}

// -----

// K and V under barrier rings of their own (wgmma only); the default, joint,
// is not printed.
// CHECK-LABEL: func.func private @wgmma_split_kv
// CHECK-SAME: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = split>
// CHECK-LABEL: func.func private @wgmma_joint_kv
// CHECK-SAME: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>}
func.func private @wgmma_split_kv() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = split>}
func.func private @wgmma_joint_kv() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = joint>}

// -----

// expected-error@+1 {{kv_barriers = split is a wgmma option}}
func.func private @mma_split_kv() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 32, stages = 3, kv_barriers = split>}

// -----

// expected-error@+1 {{kv_barriers must be joint or split, got 'halves'}}
func.func private @bad_kv_barriers() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = halves>}

// -----

// The options after `stages` come in any order, each at most once.
// CHECK-LABEL: func.func private @options_any_order
// CHECK-SAME: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 4>
func.func private @options_any_order() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 4, kv_barriers = joint>}

// -----

// expected-error@+1 {{expected kv_barriers, min_blocks_per_sm, fp8_staging, exp2_emulation or page_lookahead (each at most once), got 'min_blocks_per_sm'}}
func.func private @option_twice() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 4, min_blocks_per_sm = 8>}

// -----

// expected-error@+1 {{expected kv_barriers, min_blocks_per_sm, fp8_staging, exp2_emulation or page_lookahead (each at most once), got 'max_regs'}}
func.func private @unknown_option() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, max_regs = 128>}

// -----

// fp8_staging (mma_sync) prints where it is not the default `convert`, in
// any order with the other options, and after them.
// CHECK-LABEL: func.func private @fp8_direct_kv
// CHECK-SAME: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 8, fp8_staging = direct_kv>
// CHECK-LABEL: func.func private @fp8_direct_k
// CHECK-SAME: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_k>
// CHECK-LABEL: func.func private @fp8_convert
// CHECK-SAME: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3>
func.func private @fp8_direct_kv() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_kv, min_blocks_per_sm = 8>}
func.func private @fp8_direct_k() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_k>}
func.func private @fp8_convert() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = convert>}

// -----

// Two configurations that differ only in fp8_staging are different
// attributes; `convert` written out is the default.
// CHECK-LABEL: func.func private @fp8_staging_distinct
// CHECK-SAME: a = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2>
// CHECK-SAME: b = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2, fp8_staging = direct_k>
// CHECK-SAME: c = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2>
func.func private @fp8_staging_distinct() attributes {
  a = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2>,
  b = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2, fp8_staging = direct_k>,
  c = #cascade.kernel_config<mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 2, fp8_staging = convert>}

// -----

// The exp2 offload prints where set (0, none, is the default and is not
// printed), after the other options.
// CHECK-LABEL: func.func private @exp2_emulation
// CHECK-SAME: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 2, kv_barriers = split, exp2_emulation = 3>
// CHECK-LABEL: func.func private @exp2_emulation_zero
// CHECK-SAME: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2>}
func.func private @exp2_emulation() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 2, exp2_emulation = 3, kv_barriers = split>}
func.func private @exp2_emulation_zero() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2, exp2_emulation = 0>}

// -----

// The producer's page lookahead prints where set (last), not where 0.
// CHECK-LABEL: func.func private @page_lookahead
// CHECK-SAME: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 48, stages = 3, exp2_emulation = 1, page_lookahead = 1>
// CHECK-LABEL: func.func private @page_lookahead_zero
// CHECK-SAME: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4>}
func.func private @page_lookahead() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 48, stages = 3, page_lookahead = 1, exp2_emulation = 1>}
func.func private @page_lookahead_zero() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4, page_lookahead = 0>}
