//===- BundleKeyTest.cpp - Bundle keys parse and spell back --------------===//

#include "cascade/Contract/BundleKey.h"

#include <gtest/gtest.h>

using namespace cascade::contract;

namespace {
BundleKey parse(const std::string &key) {
  BundleKey k;
  std::string why = parseBundleKey(key, k);
  EXPECT_EQ(why, "") << key;
  return k;
}
std::string error(const std::string &key) {
  BundleKey k;
  return parseBundleKey(key, k);
}
} // namespace

TEST(BundleKey, PlainAttentionKey) {
  BundleKey k = parse("decode.f16-f16.d128.h32x8.p16.nhd.pool");
  EXPECT_EQ(k.kind, BundleKey::Kind::Attention);
  EXPECT_TRUE(k.group.decode);
  EXPECT_FALSE(k.group.causal);
  EXPECT_EQ(k.config.headDim, 128);
  EXPECT_EQ(k.config.numQoHeads, 32);
  EXPECT_EQ(k.config.numKvHeads, 8);
  EXPECT_EQ(k.config.pageSize, 16);
  EXPECT_EQ(k.config.layout, KvLayout::NHD);
  EXPECT_EQ(k.config.form, KvForm::Pool);
  EXPECT_EQ(k.config.oType, DType::F16);
  EXPECT_EQ(k.config, AttentionConfig{});
}

TEST(BundleKey, EveryOptionRoundTrips) {
  AttentionConfig c;
  c.qType = DType::BF16;
  c.kvType = DType::F8E4M3;
  c.oType = DType::F32;
  c.kvScale = KvScale::PerTensor;
  c.numQoHeads = 40;
  c.numKvHeads = 8;
  c.headDim = 96;
  c.pageSize = 32;
  c.layout = KvLayout::HND;
  c.form = KvForm::Pair;
  c.score.smScale = 0.1f;
  c.score.logitsSoftCap = 30.f;
  c.score.windowLeft = 0;
  c.score.pos = PosEncoding::RopeLlama;
  c.score.ropeScale = 2.f;
  c.score.ropeTheta = 5e5f;
  c.lseBase = LseBase::BaseE;
  c.headDimVo = 64;
  AttentionGroup g{false, true, true, false, {"sinks"}};
  std::string key = g.name() + "." + c.key();
  BundleKey k = parse(key);
  EXPECT_EQ(k.config, c);
  EXPECT_EQ(k.group, g);
  EXPECT_EQ(k.str(), key);
  EXPECT_EQ(g.name(), "prefill-causal-acc-sinks");
}

TEST(BundleKey, StateInputs) {
  // Each state input by name after the flags, in the group's order; a
  // name is lower-case letters and underscores, once, and not a flag.
  BundleKey k = parse("decode-sinks-per_head.f16-f16.d128.h32x8.p16.nhd.pool");
  EXPECT_EQ(k.group.stateInputs,
            (std::vector<std::string>{"sinks", "per_head"}));
  EXPECT_EQ(k.str(), "decode-sinks-per_head.f16-f16.d128.h32x8.p16.nhd.pool");
  for (const char *bad : {"decode-sinks-sinks", "decode-Sinks", "decode-sink2",
                          "decode-sinks-causal", "decode-", "decode-prefill"})
    EXPECT_NE(error(std::string(bad) + ".f16-f16.d128.h32x8.p16.nhd.pool"), "")
        << bad;
}

TEST(BundleKey, HeadDimVo) {
  // v narrower than q and k: `.dv<D>` after the score options.
  BundleKey k =
      parse("prefill-causal.bf16-bf16.d192.h16x16.p1.nhd.ragged.dv128");
  EXPECT_EQ(k.config.headDim, 192);
  EXPECT_EQ(k.config.vDim(), 128);
  EXPECT_TRUE(k.config.splitHeadDims());
  // One head_dim for both is spelled without `.dv`.
  EXPECT_NE(error("prefill.f16-f16.d128.h32x8.p16.nhd.pair.dv128"), "");
  // A pool holds k and v of one width; v wider than k is not supported.
  EXPECT_NE(error("prefill.f16-f16.d128.h32x8.p16.nhd.pool.dv64")
                .find("need a cache each"),
            std::string::npos);
  EXPECT_NE(error("prefill.f16-f16.d128.h32x8.p16.nhd.pair.dv192")
                .find("larger than head_dim"),
            std::string::npos);
}

TEST(BundleKey, MergeKey) {
  BundleKey k = parse("merge.f32.d256");
  EXPECT_EQ(k.kind, BundleKey::Kind::Merge);
  EXPECT_EQ(k.vType, DType::F32);
  EXPECT_EQ(k.headDim, 256);
}

TEST(BundleKey, OnlyTheNormalSpellingIsAKey) {
  // The default sm_scale is no option; groups in their one order; dtypes by
  // their contract names.
  float def = ScoreOptions::defaultSmScale(128);
  EXPECT_NE(error("decode.f16-f16.d128.h32x8.p16.nhd.pool.sm" +
                  ScoreOptions::hex(def)),
            "");
  EXPECT_NE(error("prefill-acc-causal.f16-f16.d128.h32x8.p16.nhd.pool"), "");
  EXPECT_NE(error("decode.float16-f16.d128.h32x8.p16.nhd.pool"), "");
  EXPECT_NE(error("decode.f16-f16.d128.h32x8.p16.nhd.pool.win-1"), "");
  EXPECT_NE(error("merge.f16.d0128"), "");
}

TEST(BundleKey, BadKeysSayWhy) {
  for (const char *key :
       {"", "decode", "decode.f16-f16", "decode.f16-f16.d128.h32x8.p16.nhd",
        "encode.f16-f16.d128.h32x8.p16.nhd.pool",
        "decode.f16-f16.d128.h32x8.p16.nhd.pool.foo",
        "decode.f16-f16.d0.h32x8.p16.nhd.pool",
        "decode.f16-f16.d128.h32x8.p16.xyz.pool",
        "decode.f16-f16.d128.h32x8.p16.nhd.pool.cap1234", "merge.f16",
        "merge.f16.d"}) {
    std::string why = error(key);
    EXPECT_NE(why.find("is not a kernel bundle key"), std::string::npos)
        << key << ": " << why;
  }
  EXPECT_NE(error("decode.f16-f16.d128.h32x8.p16.nhd.pool.cap7fc00000")
                .find("logits_soft_cap must be finite"),
            std::string::npos);
}
