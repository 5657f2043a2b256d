//===- PlanWorkspace.cpp - Workspace layouts and the int image ------------===//
//
// Where a plan's arrays live on the device: the int workspace (16-byte
// aligned sections of the work items, o_indptr, merge_indptr, the valid
// mask and the two scalars kernels read from memory) with its host image,
// one copy for an upload; the float workspace (256-byte aligned partial
// states of split-KV); and a cascade's levels and level states side by side.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include "PlanInternal.h"

#include <cstring>
#include <limits>

namespace cascade::runtime {

using detail::alignUp;
using detail::mulOverflows;

namespace {

/// Bytes of one section of an image, in section order.
struct SectionData {
  const void *data;
  size_t bytes;
};

/// Writes `image` (resized to layout.bytes) as sections[k] = data[k], every
/// other byte (alignment gaps, the tail) zero: each byte is written once, so
/// the old contents of a reused image need not be cleared first.
void writeImage(std::vector<uint8_t> &image, const WorkspaceLayout &layout,
                const SectionData *data) {
  image.resize(static_cast<size_t>(layout.bytes));
  uint8_t *const out = image.data();
  size_t pos = 0;
  for (size_t k = 0; k < layout.sections.size(); ++k) {
    const size_t offset = static_cast<size_t>(layout.sections[k].offset);
    if (offset > pos)
      std::memset(out + pos, 0, offset - pos);
    if (data[k].bytes)
      std::memcpy(out + offset, data[k].data, data[k].bytes);
    pos = offset + data[k].bytes;
  }
  if (image.size() > pos)
    std::memset(out + pos, 0, image.size() - pos);
}

} // namespace

const WorkspaceSection *WorkspaceLayout::find(std::string_view name) const {
  for (const WorkspaceSection &s : sections)
    if (name == s.name)
      return &s;
  return nullptr;
}

bool WorkspaceLayout::add(const char *name, const char *dtype, int64_t count,
                          int64_t elemBytes) {
  int64_t bytesNeeded;
  if (mulOverflows(count, elemBytes, bytesNeeded))
    return false;
  int64_t offset = alignUp(bytes, alignment);
  int64_t end;
  if (__builtin_add_overflow(offset, bytesNeeded, &end) ||
      end > std::numeric_limits<int64_t>::max() - alignment)
    return false;
  sections.push_back({name, dtype, offset, bytesNeeded, count});
  bytes = alignUp(end, alignment);
  return true;
}

Status detail::layoutWorkspaces(Plan &p) {
  const int64_t padded = p.padded_batch_size;
  const int64_t b = p.batch_size;
  WorkspaceLayout &iw = p.int_workspace;
  iw.alignment = 16;
  bool ok = iw.add("request_indices", "i32", padded, 4) &&
            iw.add("kv_tile_indices", "i32", padded, 4) &&
            iw.add("qo_tile_indices", "i32", padded, 4) &&
            iw.add("o_indptr", "i32", b + 1, 4) &&
            iw.add("merge_indptr", "i32", p.row_capacity + 1, 4) &&
            iw.add("block_valid_mask", "u8", padded, 1) &&
            iw.add("kv_chunk_size", "i32", 1, 4) &&
            iw.add("num_rows", "i32", 1, 4);
  WorkspaceLayout &fw = p.float_workspace;
  fw.alignment = 256;
  int64_t vCount = 0, sCount = 0;
  ok = ok && !mulOverflows(p.partial_rows_capacity, p.num_qo_heads, sCount) &&
       !mulOverflows(sCount, p.vDim(), vCount) &&
       fw.add("tmp_v", "f32", vCount, 4) && fw.add("tmp_s", "f32", sCount, 4);
  if (!ok)
    return makeError(ErrorCode::Overflow,
                     "workspace size overflows int64 (%lld partial rows x "
                     "%lld heads x %lld head_dim)",
                     detail::ll(p.partial_rows_capacity),
                     detail::ll(p.num_qo_heads), detail::ll(p.vDim()));

  const int32_t chunkTokens = static_cast<int32_t>(p.kv_chunk_size);
  const int32_t rows = static_cast<int32_t>(p.num_rows);
  // In the order of the sections added above.
  const SectionData data[] = {
      {p.request_indices.data(), 4 * p.request_indices.size()},
      {p.kv_tile_indices.data(), 4 * p.kv_tile_indices.size()},
      {p.qo_tile_indices.data(), 4 * p.qo_tile_indices.size()},
      {p.o_indptr.data(), 4 * p.o_indptr.size()},
      {p.merge_indptr.data(), 4 * p.merge_indptr.size()},
      {p.block_valid_mask.data(), p.block_valid_mask.size()},
      {&chunkTokens, 4},
      {&rows, 4}};
  static_assert(sizeof(data) / sizeof(data[0]) == 8, "one per int section");
  writeImage(p.int_image, iw, data);

  return Status::success();
}

Status detail::layoutCascadeWorkspaces(CascadePlan &c) {
  const Plan &first = c.levels[0];
  const size_t n = c.levels.size();
  c.int_base.clear();
  c.float_base.clear();
  c.level_v_offset.clear();
  c.level_s_offset.clear();
  int64_t intBytes = 0, floatBytes = 0;
  for (const Plan &p : c.levels) {
    c.int_base.push_back(intBytes);
    c.float_base.push_back(floatBytes);
    intBytes = alignUp(intBytes + p.int_workspace.bytes, 256);
    floatBytes = alignUp(floatBytes + p.float_workspace.bytes, 256);
  }
  int64_t sCount, vCount, vBytes;
  if (mulOverflows(c.num_rows, first.num_qo_heads, sCount) ||
      mulOverflows(sCount, first.vDim(), vCount) ||
      mulOverflows(vCount, dtypeBytes(first.o_dtype), vBytes))
    return makeError(ErrorCode::Overflow,
                     "cascade level states overflow int64");
  c.level_v_bytes = vBytes;
  c.level_s_bytes = sCount * 4;
  for (size_t l = 0; l < n; ++l) {
    if (static_cast<int64_t>(l) == c.base_level) {
      c.level_v_offset.push_back(-1);
      c.level_s_offset.push_back(-1);
      continue;
    }
    c.level_v_offset.push_back(floatBytes);
    floatBytes = alignUp(floatBytes + c.level_v_bytes, 256);
    c.level_s_offset.push_back(floatBytes);
    floatBytes = alignUp(floatBytes + c.level_s_bytes, 256);
  }
  c.int_bytes = intBytes;
  c.float_bytes = floatBytes;
  // Every byte written once (the levels' images, zero gaps): a reused
  // image needs no clearing first.
  c.int_image.resize(static_cast<size_t>(intBytes));
  size_t pos = 0;
  for (size_t l = 0; l < c.levels.size(); ++l) {
    const std::vector<uint8_t> &img = c.levels[l].int_image;
    const size_t base = static_cast<size_t>(c.int_base[l]);
    if (base > pos)
      std::memset(c.int_image.data() + pos, 0, base - pos);
    if (!img.empty())
      std::memcpy(c.int_image.data() + base, img.data(), img.size());
    pos = base + img.size();
  }
  if (c.int_image.size() > pos)
    std::memset(c.int_image.data() + pos, 0, c.int_image.size() - pos);
  return Status::success();
}

} // namespace cascade::runtime
