//===- WgmmaLayoutTest.cpp - wgmma descriptor, swizzle, accumulator -------===//
//
// WgmmaLayout.h against the PTX ISA's description of wgmma: the matrix
// descriptor's bit fields and the ISA's worked encodings, the 128-byte
// swizzle against the ISA's canonical form (CuTe's Swizzle<3, 4, 3> on byte
// offsets: bits 4-6 ^= bits 7-9), and the m64nNk16 f32 accumulator fragment
// (every element owned once, inverse, the ISA figure's entries, and the
// mma.sync accumulator repeated per warp and n8 chunk).
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/GPUCodegen/WgmmaLayout.h"
#include "cascade/Conversion/GPUCodegen/MmaLayout.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

using namespace mlir::cascade;
using namespace mlir::cascade::wgmma;

namespace {

//===----------------------------------------------------------------------===//
// Descriptor
//===----------------------------------------------------------------------===//

TEST(WgmmaDescriptor, FieldsLandInTheirBits) {
  // One field at a time, so a field written to the wrong bits shows up.
  EXPECT_EQ(encodeDescriptor({0x3fff0, 0, 0, 0, Swizzle::None}),
            uint64_t(0x3fff));
  EXPECT_EQ(encodeDescriptor({0, 0x3fff0, 0, 0, Swizzle::None}),
            uint64_t(0x3fff) << 16);
  EXPECT_EQ(encodeDescriptor({0, 0, 0x3fff0, 0, Swizzle::None}),
            uint64_t(0x3fff) << 32);
  EXPECT_EQ(encodeDescriptor({0, 0, 0, 7, Swizzle::None}), uint64_t(7) << 49);
  EXPECT_EQ(encodeDescriptor({0, 0, 0, 0, Swizzle::B128}), uint64_t(1) << 62);
  EXPECT_EQ(encodeDescriptor({0, 0, 0, 0, Swizzle::B64}), uint64_t(2) << 62);
  EXPECT_EQ(encodeDescriptor({0, 0, 0, 0, Swizzle::B32}), uint64_t(3) << 62);
}

TEST(WgmmaDescriptor, IsaExamples) {
  // PTX ISA, canonical layouts, "K-Major, no-swizzling and tf32 type": LBO
  // = 64 * 4 bytes encodes as 16, SBO = 32 * 4 bytes as 8.
  std::optional<uint64_t> d =
      encodeDescriptor({0, 64 * 4, 32 * 4, 0, Swizzle::None});
  ASSERT_TRUE(d);
  EXPECT_EQ((*d >> 16) & 0x3fff, 16u);
  EXPECT_EQ((*d >> 32) & 0x3fff, 8u);
  // "K-Major, 32B swizzling and tf32": LBO unused (encoded 1), SBO = 64 * 4
  // bytes encodes as 16.
  d = encodeDescriptor({0, 16, 64 * 4, 0, Swizzle::B32});
  ASSERT_TRUE(d);
  EXPECT_EQ(*d,
            (uint64_t(1) << 16) | (uint64_t(16) << 32) | (uint64_t(3) << 62));
  // A K-major f16 tile with 128-byte rows and the 128B swizzle (SBO = 8
  // rows = 1024 bytes) at shared address 0x400.
  d = encodeDescriptor({0x400, 16, 1024, 0, Swizzle::B128});
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, uint64_t(0x4000004000010040));
}

TEST(WgmmaDescriptor, RejectsOutOfRange) {
  EXPECT_FALSE(encodeDescriptor({8, 16, 16, 0, Swizzle::None}));   // unaligned
  EXPECT_FALSE(encodeDescriptor({0, 24, 16, 0, Swizzle::None}));   // unaligned
  EXPECT_FALSE(encodeDescriptor({0, 16, 1000, 0, Swizzle::None})); // unaligned
  EXPECT_FALSE(encodeDescriptor({1 << 18, 16, 16, 0, Swizzle::None}));
  EXPECT_FALSE(encodeDescriptor({0, 1 << 18, 16, 0, Swizzle::None}));
  EXPECT_FALSE(encodeDescriptor({0, 16, 1 << 18, 0, Swizzle::None}));
  EXPECT_FALSE(encodeDescriptor({0, 16, 16, 8, Swizzle::None}));
  EXPECT_FALSE(encodeDescriptor({0, 16, 16, 0, static_cast<Swizzle>(4)}));
  EXPECT_TRUE(encodeDescriptor(
      {(1 << 18) - 16, (1 << 18) - 16, (1 << 18) - 16, 7, Swizzle::B32}));
}

TEST(WgmmaDescriptor, DecodeRoundTrips) {
  const Swizzle modes[] = {Swizzle::None, Swizzle::B128, Swizzle::B64,
                           Swizzle::B32};
  for (uint64_t addr : {0ull, 16ull, 0x400ull, 0x12340ull, 0x3fff0ull})
    for (uint64_t lbo : {0ull, 16ull, 256ull, 0x3fff0ull})
      for (uint64_t sbo : {0ull, 128ull, 1024ull, 0x3fff0ull})
        for (uint64_t base = 0; base < 8; ++base)
          for (Swizzle s : modes) {
            MatrixDescriptor m{addr, lbo, sbo, base, s};
            std::optional<uint64_t> d = encodeDescriptor(m);
            ASSERT_TRUE(d);
            EXPECT_EQ(decodeDescriptor(*d), m);
          }
  // Reserved bits (14-15, 30-31, 46-48, 52-61) do not leak into fields.
  uint64_t reserved = (uint64_t(3) << 14) | (uint64_t(3) << 30) |
                      (uint64_t(7) << 46) | (uint64_t(0x3ff) << 52);
  EXPECT_EQ(decodeDescriptor(reserved), MatrixDescriptor{});
}

//===----------------------------------------------------------------------===//
// 128-byte swizzle
//===----------------------------------------------------------------------===//

// The ISA's canonical 128B swizzle, Swizzle<3, 4, 3> on byte offsets: bits
// 4-6 (the 16-byte chunk) XOR bits 7-9 (the row within the 8-row atom).
int64_t isaSwizzle128(int64_t linear) {
  return linear ^ (((linear >> 7) & 7) << 4);
}

TEST(WgmmaSwizzle, MatchesIsaCanonicalForm) {
  for (int64_t row = 0; row < 64; ++row)
    for (int64_t col = 0; col < 128; ++col)
      EXPECT_EQ(swizzle128B(row, col), isaSwizzle128(row * 128 + col))
          << row << "," << col;
}

TEST(WgmmaSwizzle, PermutesEachAtom) {
  for (int64_t atom = 0; atom < 4; ++atom) {
    std::set<int64_t> seen;
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t col = 0; col < 128; ++col) {
        int64_t off = swizzle128B(8 * atom + r, col);
        EXPECT_GE(off, atom * kSwizzle128AtomBytes);
        EXPECT_LT(off, (atom + 1) * kSwizzle128AtomBytes);
        // Bytes of a 16-byte chunk stay together and in order.
        EXPECT_EQ(off % 16, col % 16);
        // A row stays in its own 128 bytes.
        EXPECT_EQ(off / 128, 8 * atom + r);
        seen.insert(off);
      }
    EXPECT_EQ(seen.size(), size_t(kSwizzle128AtomBytes));
  }
}

TEST(WgmmaSwizzle, KnownValues) {
  EXPECT_EQ(swizzle128B(0, 0), 0);
  EXPECT_EQ(swizzle128B(0, 17), 17);      // row 0 is not permuted
  EXPECT_EQ(swizzle128B(1, 0), 128 + 16); // chunk 0 -> chunk 1
  EXPECT_EQ(swizzle128B(1, 16), 128);     // chunk 1 -> chunk 0
  EXPECT_EQ(swizzle128B(7, 0), 7 * 128 + 112);
  EXPECT_EQ(swizzle128B(7, 127), 7 * 128 + 15);
  EXPECT_EQ(swizzle128B(9, 5), 9 * 128 + 16 + 5); // row 9 = row 1 of atom 1
}

//===----------------------------------------------------------------------===//
// Accumulator
//===----------------------------------------------------------------------===//

// PTX ISA figure "WGMMA .m64nNk16 register fragment layout for accumulator
// matrix D": row = 16 * warp + groupID + 8 * (i % 4 >= 2), col = 8 * (i / 4)
// + 2 * threadID_in_group + i % 2, groupID = lane / 4, threadID_in_group =
// lane % 4.
Coord isaD(int64_t thread, int64_t i) {
  int64_t warp = thread / 32, g = (thread % 32) / 4, t = thread % 4;
  return {16 * warp + g + (i % 4 >= 2 ? 8 : 0), 8 * (i / 4) + 2 * t + i % 2};
}

TEST(WgmmaAccumulator, CoversTileOnceAndInverts) {
  for (int64_t n = 8; n <= 256; n += 8) {
    ASSERT_TRUE(Accumulator::validN(n));
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t t = 0; t < kWarpgroupSize; ++t)
      for (int64_t i = 0; i < Accumulator::numRegisters(n); ++i) {
        Coord c = Accumulator::at(t, i);
        ASSERT_EQ(c, isaD(t, i)) << n << " " << t << " " << i;
        ASSERT_GE(c.row, 0);
        ASSERT_LT(c.row, Accumulator::kRows);
        ASSERT_GE(c.col, 0);
        ASSERT_LT(c.col, n);
        seen.insert({c.row, c.col});
        ASSERT_EQ(Accumulator::owner(c.row, c.col), (Owner{t, i}));
      }
    EXPECT_EQ(seen.size(), size_t(64 * n)) << n;
  }
  for (int64_t row = 0; row < 64; ++row)
    for (int64_t col = 0; col < 256; ++col) {
      Owner o = Accumulator::owner(row, col);
      EXPECT_EQ(Accumulator::at(o.thread, o.reg), (Coord{row, col}));
    }
  EXPECT_FALSE(Accumulator::validN(0));
  EXPECT_FALSE(Accumulator::validN(12));
  EXPECT_FALSE(Accumulator::validN(264));
}

TEST(WgmmaAccumulator, KnownValues) {
  EXPECT_EQ(Accumulator::at(0, 0), (Coord{0, 0}));
  EXPECT_EQ(Accumulator::at(0, 1), (Coord{0, 1}));
  EXPECT_EQ(Accumulator::at(0, 2), (Coord{8, 0}));
  EXPECT_EQ(Accumulator::at(0, 4), (Coord{0, 8}));
  EXPECT_EQ(Accumulator::at(1, 0), (Coord{0, 2}));
  EXPECT_EQ(Accumulator::at(4, 0), (Coord{1, 0}));
  EXPECT_EQ(Accumulator::at(32, 0), (Coord{16, 0}));
  EXPECT_EQ(Accumulator::at(127, 31), (Coord{63, 63}));
}

TEST(WgmmaAccumulator, IsMmaSyncAccumulatorPerWarpAndChunk) {
  // Register 4 j + 2 p + h is element (pair p, half h) of mma.sync's 16x8
  // accumulator for n8 chunk j, offset by 16 rows per warp.
  for (int64_t t = 0; t < kWarpgroupSize; ++t)
    for (int64_t j = 0; j < 8; ++j)
      for (int64_t p = 0; p < 2; ++p)
        for (int64_t h = 0; h < 2; ++h) {
          mma::Coord m = mma::Accumulator::at(t % 32, p, h);
          EXPECT_EQ(Accumulator::at(t, 4 * j + 2 * p + h),
                    (Coord{16 * (t / 32) + m.row, 8 * j + m.col}));
        }
}

} // namespace
