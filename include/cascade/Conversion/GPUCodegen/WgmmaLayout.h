//===- WgmmaLayout.h - Shared-memory and register layouts of wgmma -*- C++ -*-//
//
// The layouts the Hopper warpgroup MMA (`wgmma.mma_async`, sm_90a) and the
// TMA copies that feed it agree on, stated once as MLIR-free functions (PTX
// ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
//
// - the 64-bit shared-memory matrix descriptor an operand is passed as,
// - the 128-byte swizzle of a tile in shared memory (what TMA's SWIZZLE_128B
//   writes and a descriptor with 128B swizzle mode reads),
// - the f32 accumulator fragment of `wgmma.mma_async.m64nNk16`: which
//   register of which thread of the warpgroup holds which element of the
//   64 x N result, and its inverse.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_WGMMALAYOUT_H
#define CASCADE_CONVERSION_GPUCODEGEN_WGMMALAYOUT_H

#include <cstdint>
#include <optional>

namespace mlir::cascade::wgmma {

/// The threads of one warpgroup (four consecutive warps).
inline constexpr int64_t kWarpgroupSize = 128;
/// The rows of a wgmma tile (m64): what one warpgroup computes.
inline constexpr int64_t kRows = 64;

//===----------------------------------------------------------------------===//
// Matrix descriptor
//===----------------------------------------------------------------------===//

/// Swizzle mode field of a matrix descriptor (bits 62-63).
enum class Swizzle : uint8_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };

/// The fields of a wgmma shared-memory matrix descriptor, in bytes. Start
/// address, leading- and stride-dimension byte offsets are stored >> 4 in
/// 14-bit fields (bits 0-13, 16-29, 32-45), so each must be a multiple of
/// 16 below 2^18; the base offset (bits 49-51) is 3 bits.
struct MatrixDescriptor {
  uint64_t startAddress = 0;
  uint64_t leadingByteOffset = 0;
  uint64_t strideByteOffset = 0;
  uint64_t baseOffset = 0;
  Swizzle swizzle = Swizzle::None;
  bool operator==(const MatrixDescriptor &o) const {
    return startAddress == o.startAddress &&
           leadingByteOffset == o.leadingByteOffset &&
           strideByteOffset == o.strideByteOffset &&
           baseOffset == o.baseOffset && swizzle == o.swizzle;
  }
};

inline constexpr int kStartAddressShift = 0;
inline constexpr int kLeadingByteOffsetShift = 16;
inline constexpr int kStrideByteOffsetShift = 32;
inline constexpr int kBaseOffsetShift = 49;
inline constexpr int kSwizzleShift = 62;
/// A 14-bit field holds a byte quantity >> 4: bytes below 2^18.
inline constexpr uint64_t kFieldMask = (uint64_t(1) << 14) - 1;
inline constexpr uint64_t kMaxFieldBytes = (kFieldMask + 1) << 4;

/// Whether `bytes` fits a 14-bit descriptor field (a multiple of 16 below
/// 2^18).
constexpr bool fitsField(uint64_t bytes) {
  return bytes % 16 == 0 && bytes < kMaxFieldBytes;
}

/// The 64-bit descriptor of `d`, or nothing when a field is out of range.
constexpr std::optional<uint64_t> encodeDescriptor(const MatrixDescriptor &d) {
  if (!fitsField(d.startAddress) || !fitsField(d.leadingByteOffset) ||
      !fitsField(d.strideByteOffset) || d.baseOffset > 7 ||
      static_cast<uint8_t>(d.swizzle) > 3)
    return std::nullopt;
  return ((d.startAddress >> 4) << kStartAddressShift) |
         ((d.leadingByteOffset >> 4) << kLeadingByteOffsetShift) |
         ((d.strideByteOffset >> 4) << kStrideByteOffsetShift) |
         (d.baseOffset << kBaseOffsetShift) |
         (uint64_t(static_cast<uint8_t>(d.swizzle)) << kSwizzleShift);
}

/// The fields of a 64-bit descriptor (reserved bits are ignored).
constexpr MatrixDescriptor decodeDescriptor(uint64_t desc) {
  MatrixDescriptor d;
  d.startAddress = ((desc >> kStartAddressShift) & kFieldMask) << 4;
  d.leadingByteOffset = ((desc >> kLeadingByteOffsetShift) & kFieldMask) << 4;
  d.strideByteOffset = ((desc >> kStrideByteOffsetShift) & kFieldMask) << 4;
  d.baseOffset = (desc >> kBaseOffsetShift) & 7;
  d.swizzle = static_cast<Swizzle>((desc >> kSwizzleShift) & 3);
  return d;
}

//===----------------------------------------------------------------------===//
// 128-byte swizzle
//===----------------------------------------------------------------------===//

/// A 128B-swizzled tile is made of atoms of 8 rows of 128 bytes (1024
/// bytes); within an atom, the 16-byte chunk c of row r is stored at chunk
/// c ^ (r % 8) of that row.
inline constexpr int64_t kSwizzle128RowBytes = 128;
inline constexpr int64_t kSwizzle128AtomBytes = 1024;

/// The byte offset (from the tile start, 1024-byte aligned) of byte
/// `byteCol` (0 <= byteCol < 128) of row `row` of a tile of 128-byte rows
/// stored with the 128-byte swizzle.
constexpr int64_t swizzle128B(int64_t row, int64_t byteCol) {
  return row * kSwizzle128RowBytes + (byteCol ^ ((row % 8) << 4));
}

//===----------------------------------------------------------------------===//
// Accumulator fragment of wgmma.mma_async.m64nNk16 (f32)
//===----------------------------------------------------------------------===//

/// A (row, column) element of the 64 x N accumulator tile.
struct Coord {
  int64_t row;
  int64_t col;
  bool operator==(const Coord &o) const { return row == o.row && col == o.col; }
};

/// Who holds an element: thread (0-127 in the warpgroup) and register.
struct Owner {
  int64_t thread;
  int64_t reg;
  bool operator==(const Owner &o) const {
    return thread == o.thread && reg == o.reg;
  }
};

/// The f32 accumulator of a 64 x n product (n a multiple of 8, 8..256):
/// each thread holds n / 2 registers; register i of lane l of warp w is
/// row 16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2
/// (mma.sync's 16x8 accumulator per warp and n8 chunk).
struct Accumulator {
  static constexpr int64_t kRows = 64;
  static constexpr bool validN(int64_t n) {
    return n >= 8 && n <= 256 && n % 8 == 0;
  }
  static constexpr int64_t numRegisters(int64_t n) { return n / 2; }
  static constexpr Coord at(int64_t thread, int64_t reg) {
    int64_t warp = thread / 32, lane = thread % 32;
    return {16 * warp + lane / 4 + 8 * ((reg / 2) % 2),
            8 * (reg / 4) + 2 * (lane % 4) + reg % 2};
  }
  static constexpr Owner owner(int64_t row, int64_t col) {
    int64_t warp = row / 16, r = row % 16;
    int64_t lane = 4 * (r % 8) + (col % 8) / 2;
    return {32 * warp + lane, 4 * (col / 8) + 2 * (r / 8) + col % 2};
  }
};

} // namespace mlir::cascade::wgmma

#endif // CASCADE_CONVERSION_GPUCODEGEN_WGMMALAYOUT_H
