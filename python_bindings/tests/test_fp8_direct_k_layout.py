"""A model, in numpy, of how fp8 mma_sync decode reads K for S = Q K^T
straight from its fp8 staging tile (AttentionSpec::fp8DirectK; the code is
MmaSyncMainloop.cpp's loadPermutedQFragments / scoresFromFp8K and
PagedKV.cpp's fp8KStagingOffset and PagedKVRowGather::issue).

The fragment layouts of mma.sync.m16n8k16 are written here from the PTX ISA
("Matrix Fragments for mma.m16n8k16 with floating point type"), not taken
from the C++ (MmaLayout.h), so that the test checks the reasoning instead of
repeating it:
- A (16 x 16, row): lane l, g = l // 4, c = l % 4, holds a0 = A[g][2c, 2c+1],
  a1 = A[g+8][2c, 2c+1], a2 = A[g][2c+8, 2c+9], a3 = A[g+8][2c+8, 2c+9];
- B (16 x 8, col): b0 = B[2c, 2c+1][g], b1 = B[2c+8, 2c+9][g];
- C/D (16 x 8): c0, c1 = C[g][2c, 2c+1], c2, c3 = C[g+8][2c, 2c+1].

The model gathers K rows (16- or 8-byte chunks, as the cp.async gather
does) into a swizzled byte buffer, builds each lane's registers from the
byte addresses the kernel computes, runs the MMA from those registers and
compares S with Q K^T; it also counts shared-memory banks per warp load.
"""
import numpy as np
import pytest

WARP = 32


def staging_offset(row, byte_col, head_dim):
    """fp8KStagingOffset: chunk j of row r at chunk j ^ s(r)."""
    chunks = head_dim // 16
    rows_per_line = max(1, 8 // chunks)
    mask = min(chunks, 8) - 1
    chunk = (byte_col // 16) ^ ((row // rows_per_line) & mask)
    return row * head_dim + chunk * 16 + byte_col % 16


def q_tile_offset(row, col, cols):
    """SmemTileLayout of the 16-bit Q tile: 8-element chunks, chunk ^ row % 8
    when a row has a multiple of 8 chunks, else one chunk of padding."""
    swizzle = (cols // 8) % 8 == 0
    stride = cols if swizzle else cols + 8
    chunk = col // 8
    if swizzle:
        chunk ^= row % 8
    return row * stride + chunk * 8 + col % 8


def gather_k(k_rows, stages, stage, head_dim, chunk_bytes, buf):
    """The cp.async gather of one tile's K rows into stage `stage`."""
    tile = k_rows.shape[0]
    for j in range(tile):
        for p in range(head_dim // chunk_bytes):
            dst = stage * tile * head_dim + staging_offset(j, p * chunk_bytes, head_dim)
            buf[dst:dst + chunk_bytes] = k_rows[j, p * chunk_bytes:(p + 1) * chunk_bytes]


def run_scores(q, k_rows, head_dim, kv_per_warp, warp_kv, stage, stages, chunk_bytes):
    """S of one warp (16 rows, kv_per_warp keys from warp_kv * kv_per_warp),
    computed from per-lane registers as the kernel builds them."""
    tile = k_rows.shape[0]
    # K bytes: store the "fp8" values as small integers (exact in f16); a
    # byte of the buffer is one element.
    buf = np.full(stages * tile * head_dim, np.nan)
    gather_k(k_rows, stages, stage, head_dim, chunk_bytes, buf)
    qbuf = np.full(16 * (head_dim + 8), np.nan)
    for r in range(16):
        for col in range(head_dim):
            qbuf[q_tile_offset(r, col, head_dim)] = q[r, col]

    key0 = warp_kv * kv_per_warp
    s = np.zeros((16, kv_per_warp))
    banks_ok = True
    for kb in range(head_dim // 16):
        # loadPermutedQFragments: 8-byte loads of 4 elements of rows g, g+8.
        a = np.zeros((WARP, 4, 2))
        for lane in range(WARP):
            g, c = lane // 4, lane % 4
            chunk, in_chunk = 2 * kb + c // 2, 4 * (c % 2)
            for pair_row, row in ((0, g), (1, g + 8)):
                base = q_tile_offset(row, chunk * 8, head_dim) + in_chunk
                v = qbuf[base:base + 4]
                a[lane, pair_row] = v[0:2]       # a0 / a1
                a[lane, 2 + pair_row] = v[2:4]   # a2 / a3
        for n in range(kv_per_warp // 8):
            # scoresFromFp8K: the lane's offset in chunk 0, xor 16 kb.
            b = np.zeros((WARP, 2, 2))
            words = []
            for lane in range(WARP):
                g, c = lane // 4, lane % 4
                lane_off = staging_offset(g, 4 * c, head_dim)
                tile_base = stage * tile * head_dim + key0 * head_dim
                off = (tile_base + n * 8 * head_dim + lane_off) ^ (16 * kb)
                # The xor form equals the direct address of the fragment.
                row = key0 + 8 * n + g
                assert off == stage * tile * head_dim + staging_offset(row, 16 * kb + 4 * c, head_dim)
                assert off % 4 == 0
                v = buf[off:off + 4]
                b[lane, 0] = v[0:2]
                b[lane, 1] = v[2:4]
                words.append(off // 4)
            # 32 lanes, 32 different banks (the buffer starts at a
            # multiple of 128 bytes).
            banks_ok &= len({w % 32 for w in words}) == WARP
            # The MMA from the registers (the ISA's layouts).
            A = np.zeros((16, 16))
            B = np.zeros((16, 8))
            for lane in range(WARP):
                g, c = lane // 4, lane % 4
                for e in range(2):
                    A[g, 2 * c + e] = a[lane, 0, e]
                    A[g + 8, 2 * c + e] = a[lane, 1, e]
                    A[g, 2 * c + 8 + e] = a[lane, 2, e]
                    A[g + 8, 2 * c + 8 + e] = a[lane, 3, e]
                    B[2 * c + e, g] = b[lane, 0, e]
                    B[2 * c + 8 + e, g] = b[lane, 1, e]
            D = A @ B
            # Accumulator layout back to rows / keys (c0..c3 of every lane).
            for lane in range(WARP):
                g, c = lane // 4, lane % 4
                for e in range(2):
                    s[g, n * 8 + 2 * c + e] += D[g, 2 * c + e]
                    s[g + 8, n * 8 + 2 * c + e] += D[g + 8, 2 * c + e]
    return s, banks_ok


@pytest.mark.parametrize("head_dim", [16, 32, 64, 128])
@pytest.mark.parametrize("chunk_bytes", [16, 8])
@pytest.mark.parametrize("tile,warps_kv,stages", [(32, 2, 4), (64, 4, 2), (16, 1, 3)])
def test_permuted_fragments_give_q_kt(head_dim, chunk_bytes, tile, warps_kv, stages):
    rng = np.random.default_rng(head_dim * 131 + tile + chunk_bytes)
    q = rng.integers(-8, 9, size=(16, head_dim)).astype(np.float64)
    k_rows = rng.integers(-8, 9, size=(tile, head_dim)).astype(np.float64)
    kv_per_warp = tile // warps_kv
    for warp_kv in range(warps_kv):
        stage = (warp_kv + 1) % stages
        s, banks_ok = run_scores(q, k_rows, head_dim, kv_per_warp, warp_kv, stage,
                                 stages, chunk_bytes)
        keys = slice(warp_kv * kv_per_warp, (warp_kv + 1) * kv_per_warp)
        np.testing.assert_array_equal(s, q @ k_rows[keys].T)
        assert banks_ok


def test_unswizzled_reads_conflict():
    """Without the swizzle the 8 lanes of one c read one bank (D = 128):
    what the swizzle removes."""
    words = {}
    for lane in range(WARP):
        g, c = lane // 4, lane % 4
        words.setdefault(((g * 128 + 4 * c) // 4) % 32, []).append(lane)
    assert max(len(v) for v in words.values()) == 8


def test_swizzle_is_a_permutation_of_each_row():
    for head_dim in (16, 32, 64, 128):
        for row in range(16):
            offs = {staging_offset(row, col, head_dim) for col in range(0, head_dim, 4)}
            assert offs == set(range(row * head_dim, (row + 1) * head_dim, 4))
