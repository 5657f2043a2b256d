//===- MmaLayoutTest.cpp - mma.sync fragment layouts ----------------------===//
//
// The layouts of MmaLayout.h against the PTX ISA's fragment tables for
// mma.m16n8k16 with .f16/.bf16 operands and .f32 accumulators (written here
// in the ISA's own terms: groupID = lane / 4, threadID_in_group = lane % 4,
// registers a0..a7, b0..b3, c0..c3), and the ldmatrix address patterns
// against what ldmatrix delivers.
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/GPUCodegen/MmaLayout.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

using namespace mlir::cascade::mma;

namespace {

// PTX ISA: A (16x16, row): a_i for i in 0..7 is at
//   row = groupID + 8 * ((i / 2) % 2), col = 2 * threadID_in_group + i % 2 +
//   8 * (i / 4).
Coord ptxA(int64_t lane, int64_t i) {
  int64_t g = lane / 4, t = lane % 4;
  return {g + 8 * ((i / 2) % 2), 2 * t + i % 2 + 8 * (i / 4)};
}
// B (16x8, col): b_i for i in 0..3 is at row (k) = 2 * threadID_in_group +
//   i % 2 + 8 * (i / 2), col (n) = groupID.
Coord ptxB(int64_t lane, int64_t i) {
  int64_t g = lane / 4, t = lane % 4;
  return {2 * t + i % 2 + 8 * (i / 2), g};
}
// C/D (16x8, f32): c_i for i in 0..3 is at row = groupID + 8 * (i / 2),
//   col = 2 * threadID_in_group + i % 2.
Coord ptxC(int64_t lane, int64_t i) {
  int64_t g = lane / 4, t = lane % 4;
  return {g + 8 * (i / 2), 2 * t + i % 2};
}

template <typename Layout, typename Ptx> void expectSameAsPtx(Ptx ptx) {
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t lane = 0; lane < kWarpSize; ++lane)
    for (int64_t pair = 0; pair < Layout::kPairs; ++pair)
      for (int64_t half = 0; half < 2; ++half) {
        Coord c = Layout::at(lane, pair, half);
        EXPECT_EQ(c, ptx(lane, 2 * pair + half))
            << "lane " << lane << " pair " << pair << " half " << half;
        EXPECT_TRUE(c.row >= 0 && c.row < Layout::kRows && c.col >= 0 &&
                    c.col < Layout::kCols);
        seen.insert({c.row, c.col});
      }
  // Every element of the tile is held by exactly one (lane, register).
  EXPECT_EQ(seen.size(), size_t(Layout::kRows * Layout::kCols));
}

TEST(MmaLayout, FragmentsMatchThePtxIsa) {
  expectSameAsPtx<OperandA>(ptxA);
  expectSameAsPtx<OperandB>(ptxB);
  expectSameAsPtx<Accumulator>(ptxC);
}

TEST(MmaLayout, RowReductionsStayInAQuad) {
  for (int64_t lane = 0; lane < kWarpSize; ++lane)
    for (int64_t pair = 0; pair < Accumulator::kPairs; ++pair) {
      EXPECT_EQ(Accumulator::row(lane, pair),
                Accumulator::at(lane, pair, 0).row);
      // The xor shuffles visit exactly the lanes that hold the same rows.
      for (int64_t m : Accumulator::kRowShuffleMasks) {
        EXPECT_LT(m, kLanesPerRow);
        EXPECT_EQ(Accumulator::row(lane ^ m, pair),
                  Accumulator::row(lane, pair));
      }
    }
}

TEST(MmaLayout, TwoAccumulatorsAreTheNextAOperand) {
  // P (accumulators of n-tiles 0-7 and 8-15) feeds P.V as A without moving
  // data between lanes.
  for (int64_t lane = 0; lane < kWarpSize; ++lane)
    for (int64_t pair = 0; pair < OperandA::kPairs; ++pair)
      for (int64_t half = 0; half < 2; ++half) {
        Coord a = OperandA::at(lane, pair, half);
        Coord c = Accumulator::at(lane, accumulatorPairOfAPair(pair), half);
        EXPECT_EQ(a.row, c.row);
        EXPECT_EQ(a.col, c.col + 8 * accumulatorOfAPair(pair));
      }
}

// ldmatrix .x4: lanes 8m..8m+7 give the row addresses of matrix m; register
// m of lane L then holds (row L / 4, columns 2 * (L % 4) + {0, 1}) of matrix
// m, or with .trans (rows 2 * (L % 4) + {0, 1}, column L / 4).
Coord ldmatrixElement(Coord (*address)(int64_t), int64_t lane, int64_t reg,
                      int64_t half, bool trans) {
  if (!trans) {
    Coord rowStart = address(8 * reg + lane / 4);
    return {rowStart.row, rowStart.col + 2 * (lane % 4) + half};
  }
  Coord rowStart = address(8 * reg + 2 * (lane % 4) + half);
  return {rowStart.row, rowStart.col + lane / 4};
}

TEST(MmaLayout, LdMatrixDeliversTheOperands) {
  for (int64_t lane = 0; lane < kWarpSize; ++lane)
    for (int64_t reg = 0; reg < 4; ++reg)
      for (int64_t half = 0; half < 2; ++half) {
        // A from a row-major tile: register m is A's pair m.
        EXPECT_EQ(
            ldmatrixElement(LdMatrix::aRowAddress, lane, reg, half, false),
            OperandA::at(lane, reg, half));
        // Two B fragments from a tile stored [n][k]: registers 0-1 are the
        // n-tile n0, 2-3 the n-tile n0 + 8 (stored row = n, column = k).
        Coord b = OperandB::at(lane, reg % 2, half);
        Coord nk =
            ldmatrixElement(LdMatrix::bNKRowAddress, lane, reg, half, false);
        EXPECT_EQ(nk.row, b.col + 8 * (reg / 2));
        EXPECT_EQ(nk.col, b.row);
        // The same from a tile stored [k][n] with .trans (row = k, column =
        // n).
        Coord kn =
            ldmatrixElement(LdMatrix::bKNRowAddress, lane, reg, half, true);
        EXPECT_EQ(kn.row, b.row);
        EXPECT_EQ(kn.col, b.col + 8 * (reg / 2));
      }
}

} // namespace
