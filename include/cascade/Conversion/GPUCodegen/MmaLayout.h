//===- MmaLayout.h - Register layouts of mma.sync fragments -----*- C++ -*-===//
//
// Which lane of a warp holds which (row, column) of the operand and
// accumulator fragments of `mma.sync.aligned.m16n8k16` (PTX ISA, "Matrix
// Fragments for mma.m16n8k16"), stated once, as data. The kernel generators
// index fragments only through these functions, and the row-wise reductions
// of the online softmax (which lanes share a row, which registers of a lane
// belong to which row) are derived from them. The wgmma accumulator of
// sm_90 repeats the accumulator layout per n8 chunk, so the same description
// serves it.
//
// A fragment is a vector<R x 2 x T> in MLIR (nvgpu's convention): element
// [r][e] is register pair r, half e.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_MMALAYOUT_H
#define CASCADE_CONVERSION_GPUCODEGEN_MMALAYOUT_H

#include <cstdint>

namespace mlir::cascade::mma {

/// A (row, column) position inside one fragment's tile.
struct Coord {
  int64_t row;
  int64_t col;
  bool operator==(const Coord &o) const { return row == o.row && col == o.col; }
};

inline constexpr int64_t kWarpSize = 32;
/// Lanes of a quad (lane / 4 equal) hold the same accumulator rows.
inline constexpr int64_t kLanesPerRow = 4;

/// The 16x8 f32 accumulator C/D, vector<2x2xf32>: pair r is row
/// lane/4 + 8r, half e is column 2*(lane%4) + e.
struct Accumulator {
  static constexpr int64_t kRows = 16, kCols = 8, kPairs = 2;
  static constexpr Coord at(int64_t lane, int64_t pair, int64_t half) {
    return {lane / 4 + 8 * pair, 2 * (lane % 4) + half};
  }
  /// The row of pair `pair` held by `lane` (both halves share it).
  static constexpr int64_t row(int64_t lane, int64_t pair) {
    return lane / 4 + 8 * pair;
  }
  /// The shuffle-xor distances that visit the other lanes of a row.
  static constexpr int64_t kRowShuffleMasks[2] = {1, 2};
};

/// The 16x16 A operand (row-major M x K), vector<4x2xT>: pair r covers row
/// lane/4 + 8*(r%2) and columns 2*(lane%4) + e + 8*(r/2).
struct OperandA {
  static constexpr int64_t kRows = 16, kCols = 16, kPairs = 4;
  static constexpr Coord at(int64_t lane, int64_t pair, int64_t half) {
    return {lane / 4 + 8 * (pair % 2), 2 * (lane % 4) + half + 8 * (pair / 2)};
  }
};

/// The 16x8 B operand (K x N, "col" layout: each lane holds two consecutive
/// k of one column n), vector<2x2xT>: pair r covers k = 2*(lane%4) + e + 8r
/// of column n = lane/4. `row` is k, `col` is n.
struct OperandB {
  static constexpr int64_t kRows = 16, kCols = 8, kPairs = 2;
  static constexpr Coord at(int64_t lane, int64_t pair, int64_t half) {
    return {2 * (lane % 4) + half + 8 * pair, lane / 4};
  }
};

/// Accumulators of two adjacent n8 tiles (columns 0-7 and 8-15) become the
/// A operand of the next product (P in P.V) without data movement: pair r of
/// the A fragment is pair (r % 2) of accumulator r / 2. This is the
/// identity checked by the unit tests: OperandA::at(lane, r, e) equals
/// Accumulator::at(lane, r % 2, e) shifted by 8 * (r / 2) columns.
inline constexpr int64_t accumulatorOfAPair(int64_t pair) { return pair / 2; }
inline constexpr int64_t accumulatorPairOfAPair(int64_t pair) {
  return pair % 2;
}

/// ldmatrix: lane `lane` supplies the row address of row (lane % 8) of the
/// 8x8 matrix number lane / 8 (x4; x2 uses lanes 0-15).
struct LdMatrix {
  static constexpr int64_t matrix(int64_t lane) { return lane / 8; }
  static constexpr int64_t rowInMatrix(int64_t lane) { return lane % 8; }

  /// x4 load of a 16x16 A tile from a row-major tile: matrices (rows 0-7,
  /// cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15,
  /// cols 8-15), in the order of OperandA's pairs.
  static constexpr Coord aRowAddress(int64_t lane) {
    return {lane % 8 + 8 * (matrix(lane) % 2), 8 * (matrix(lane) / 2)};
  }
  /// x4 load of two B fragments (n-tiles n0 and n0+8, one k16 step) from a
  /// tile stored [n][k] (K of Q.K^T): matrices (n 0-7, k 0-7), (n 0-7,
  /// k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15). Row is n, column is k.
  static constexpr Coord bNKRowAddress(int64_t lane) {
    return {lane % 8 + 8 * (matrix(lane) / 2), 8 * (matrix(lane) % 2)};
  }
  /// x4 transposed load of two B fragments (n-tiles n0 and n0+8, one k16
  /// step) from a tile stored [k][n] (V of P.V): matrices (k 0-7, n 0-7),
  /// (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15). Row is k, column
  /// is n.
  static constexpr Coord bKNRowAddress(int64_t lane) {
    return {lane % 8 + 8 * (matrix(lane) % 2), 8 * (matrix(lane) / 2)};
  }
};

} // namespace mlir::cascade::mma

#endif // CASCADE_CONVERSION_GPUCODEGEN_MMALAYOUT_H
