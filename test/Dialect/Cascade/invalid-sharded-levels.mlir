// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.multi_level_attention with sharded levels: grid, grid_axes and
// sharded_levels (docs/multi_gpu.md).

func.func @levels_without_grid(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'sharded_levels' needs a 'grid': the shard.grid whose processes hold the shards}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @axes_without_grid(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid_axes' needs a 'grid'}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid_axes = array<i16: 0>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2)
func.func @grid_without_levels(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid' is given but 'sharded_levels' is not: say which levels are split across the grid}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @g}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2)
func.func @level_count(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'sharded_levels' has 1 entries but the cascade has 2 levels}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @g, sharded_levels = array<i1: true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2)
func.func @no_level(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'sharded_levels' marks no level: drop 'grid' for a cascade computed on one process}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @g, sharded_levels = array<i1: false, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2)
func.func @causal_sharded_last(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'causal' applies to the last level (1), which is sharded: a causal mask is positional, shard prefix levels only}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal, grid = @g, sharded_levels = array<i1: true, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2)
func.func @negative_axis(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid_axes' has the negative axis -1}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @g, grid_axes = array<i16: -1>, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2x2)
func.func @axis_twice(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid_axes' names axis 1 twice}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @g, grid_axes = array<i16: 1, 1>, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
func.func @axis_out_of_grid(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid_axes' names axis 2 but @g has 2 axes}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @g, grid_axes = array<i16: 2>, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @unknown_grid(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid' @nowhere does not name a shard.grid}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @nowhere, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func private @f()
func.func @not_a_grid(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'grid' @f does not name a shard.grid}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @f, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
