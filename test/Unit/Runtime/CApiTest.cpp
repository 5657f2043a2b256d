//===- CApiTest.cpp - The C API -------------------------------------------===//

#include "cascade/Runtime/cascade_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {
/// A two-request decode batch on a 4-SM device, 8 query heads / 1 KV head.
cascade_plan_inputs_t decodeInputs(const int32_t *kvIndptr,
                                   const int32_t *last) {
  cascade_plan_inputs_t in;
  cascade_plan_inputs_init(&in);
  in.batch_size = 2;
  in.kv_indptr = kvIndptr;
  in.kv_last_page_len = last;
  in.num_qo_heads = 8;
  in.num_kv_heads = 1;
  in.head_dim = 128;
  in.page_size = 16;
  in.num_sms = 4;
  return in;
}
} // namespace

TEST(CApi, PlanFromStruct) {
  const int32_t kvIndptr[] = {0, 10, 12};
  const int32_t last[] = {16, 5};
  cascade_plan_inputs_t in = decodeInputs(kvIndptr, last);
  cascade_plan_t plan = nullptr;
  ASSERT_EQ(cascade_plan_create(&in, &plan), CASCADE_OK)
      << cascade_last_error();
  int64_t v = 0;
  EXPECT_EQ(cascade_plan_get_scalar(plan, 0, "padded_batch_size", &v),
            CASCADE_OK);
  EXPECT_EQ(v, 4); // chunks of 4 pages: 3 + 1
  EXPECT_EQ(cascade_plan_get_scalar(plan, 0, "split_kv", &v), CASCADE_OK);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(cascade_plan_get_scalar(plan, 0, "bogus", &v),
            CASCADE_ERROR_NOT_FOUND);
  EXPECT_STREQ(cascade_last_error(), "no plan scalar named bogus");
  const void *data = nullptr;
  int64_t bytes = 0;
  ASSERT_EQ(cascade_plan_int_workspace(plan, &data, &bytes), CASCADE_OK);
  int64_t off = 0, secBytes = 0;
  ASSERT_EQ(cascade_plan_section(plan, 0, "o_indptr", &off, &secBytes),
            CASCADE_OK);
  ASSERT_EQ(secBytes, 12);
  int32_t oIndptr[3];
  std::memcpy(oIndptr, static_cast<const char *>(data) + off, 12);
  EXPECT_EQ(oIndptr[2], 4);
  EXPECT_EQ(cascade_plan_section(plan, 0, "tmp_v", &off, &secBytes),
            CASCADE_OK);
  EXPECT_EQ(secBytes, 4 * 8 * 128 * 4);
  EXPECT_GE(cascade_plan_float_workspace_bytes(plan), secBytes);
  char *json = nullptr;
  ASSERT_EQ(cascade_plan_to_json(plan, &json), CASCADE_OK);
  EXPECT_NE(std::string(json).find("\"padded_batch_size\": 4"),
            std::string::npos);
  cascade_free(json);
  cascade_plan_destroy(plan);
}

TEST(CApi, PlanErrors) {
  const int32_t kvIndptr[] = {0, 3, 2};
  const int32_t last[] = {16, 5};
  cascade_plan_inputs_t in = decodeInputs(kvIndptr, last);
  cascade_plan_t plan = nullptr;
  EXPECT_EQ(cascade_plan_create(&in, &plan), CASCADE_ERROR_INVALID_INDPTR);
  EXPECT_STREQ(
      cascade_last_error(),
      "kv_indptr is not monotone: kv_indptr[2] = 2 < kv_indptr[1] = 3");
  EXPECT_EQ(plan, nullptr);
  EXPECT_STREQ(cascade_status_name(CASCADE_ERROR_INVALID_INDPTR),
               "CASCADE_ERROR_INVALID_INDPTR");
  EXPECT_EQ(cascade_plan_create(nullptr, &plan),
            CASCADE_ERROR_INVALID_ARGUMENT);
  const char bad[] = "{\"mode\": 3}";
  EXPECT_EQ(cascade_plan_create_from_json(bad, sizeof(bad) - 1, &plan),
            CASCADE_ERROR_SCHEMA);
  EXPECT_STREQ(cascade_last_error(),
               "key \"mode\" must be \"decode\" or \"prefill\"");
}

TEST(CApi, CascadePlanFromJson) {
  const std::string json = R"({"mode": "decode", "page_size": 16,
    "num_qo_heads": 4, "num_kv_heads": 4, "head_dim": 64, "num_sms": 8,
    "levels": [{"qo_indptr": [0, 2], "kv_indptr": [0, 4],
                "kv_last_page_len": [16]},
               {"kv_indptr": [0, 1, 3], "kv_last_page_len": [1, 2]}]})";
  cascade_plan_t plan = nullptr;
  ASSERT_EQ(cascade_plan_create_from_json(json.data(), json.size(), &plan),
            CASCADE_OK)
      << cascade_last_error();
  EXPECT_EQ(cascade_plan_num_levels(plan), 2);
  int64_t off = 0, bytes = 0;
  EXPECT_EQ(cascade_plan_section(plan, 1, "level_v", &off, &bytes), CASCADE_OK);
  EXPECT_EQ(bytes, 2 * 4 * 64 * 2);
  char *out = nullptr;
  ASSERT_EQ(cascade_plan_to_json(plan, &out), CASCADE_OK);
  EXPECT_NE(std::string(out).find("\"mode\": \"cascade\""), std::string::npos);
  cascade_free(out);
  cascade_plan_destroy(plan);
}

TEST(CApi, ReferenceMerges) {
  float va[] = {1, 2}, vb[] = {3, 6}, sa[] = {0.5f}, sb[] = {0.5f}, vo[2],
        so[1];
  ASSERT_EQ(cascade_ref_merge_state(va, sa, vb, sb, vo, so, 1, 1, 2),
            CASCADE_OK);
  EXPECT_FLOAT_EQ(vo[1], 4);
  EXPECT_FLOAT_EQ(so[0], 1.5f);
  EXPECT_EQ(cascade_ref_merge_states(nullptr, nullptr, vo, so, 1, 0, 1, 2),
            CASCADE_OK);
  EXPECT_EQ(so[0], -INFINITY);
  EXPECT_EQ(cascade_ref_merge_state(nullptr, sa, vb, sb, vo, so, 1, 1, 2),
            CASCADE_ERROR_INVALID_ARGUMENT);
  uint8_t mask[] = {0};
  float v[] = {1, 1}, s[] = {0};
  ASSERT_EQ(cascade_ref_merge_state_in_place(v, s, vb, sb, mask, 1, 1, 1, 2),
            CASCADE_OK);
  EXPECT_EQ(v[1], 1);
  float f[] = {1.5f, -0.25f};
  uint16_t h[2];
  float back[2];
  cascade_f32_to_f16(f, h, 2);
  cascade_f16_to_f32(h, back, 2);
  EXPECT_EQ(back[0], 1.5f);
  cascade_f32_to_bf16(f, h, 2);
  cascade_bf16_to_f32(h, back, 2);
  EXPECT_EQ(back[1], -0.25f);
}
