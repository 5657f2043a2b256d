//===- CliTest.cpp - The cascade-plan command line tool -------------------===//

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Result {
  int exitCode;
  std::string out, err;
};

std::string slurp(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs cascade-plan with `input` on stdin (or `arg` as the file argument).
Result runPlan(const std::string &input, const std::string &arg = "") {
  char dir[] = "/tmp/cascade-plan-test-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  const std::string in = std::string(dir) + "/in.json";
  const std::string out = std::string(dir) + "/out";
  const std::string err = std::string(dir) + "/err";
  std::ofstream(in) << input;
  std::string cmd = std::string(CASCADE_PLAN_BIN) + " " +
                    (arg.empty() ? "< " + in : arg) + " > " + out + " 2> " +
                    err;
  int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out),
           slurp(err)};
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  rmdir(dir);
  return r;
}

void expectOneErrorLine(const Result &r, const std::string &prefix) {
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(r.out.empty());
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err; // one line
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
}

} // namespace

TEST(Cli, PrintsThePlanOfTheExample) {
  Result r = runPlan("", std::string(CASCADE_TEST_INPUTS) + "/decode.json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(r.err.empty());
  nlohmann::json v = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << r.out;
  for (const char *key :
       {"request_indices", "kv_tile_indices", "qo_tile_indices", "o_indptr",
        "merge_indptr", "kv_chunk_size", "block_valid_mask",
        "padded_batch_size", "split_kv", "int_workspace", "float_workspace"})
    EXPECT_TRUE(v.contains(key)) << key;
  EXPECT_EQ(v.value("padded_batch_size", -1), 4);
  EXPECT_EQ(v.value("kv_chunk_size", -1), 64);
  EXPECT_EQ(v.value("split_kv", false), true);
}

TEST(Cli, CascadeFromStdin) {
  Result r = runPlan(slurp(std::string(CASCADE_TEST_INPUTS) + "/cascade.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json v = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << r.out;
  EXPECT_EQ(v.value("mode", ""), "cascade");
  ASSERT_EQ(v["levels"].size(), 2u);
  EXPECT_EQ(v["levels"][0].value("mode", ""), "prefill");
  EXPECT_EQ(v["levels"][1].value("mode", ""), "decode");
  EXPECT_EQ(v["merge"].value("causal_level", -2), 1);
}

TEST(Cli, MalformedJson) {
  expectOneErrorLine(
      runPlan("{\"mode\": \"decode\",\n  \"kv_indptr\": [0, 1,]"),
      "cascade-plan: error: CASCADE_ERROR_PARSE: line 2, column 22: syntax "
      "error while parsing value - unexpected ']'; expected '[', '{', or a "
      "literal\n");
  expectOneErrorLine(runPlan(""),
                     "cascade-plan: error: CASCADE_ERROR_PARSE: line 1, column "
                     "1: syntax error while parsing value - unexpected end of "
                     "input; expected '[', '{', or a literal\n");
}

TEST(Cli, SchemaErrors) {
  expectOneErrorLine(runPlan("[]"),
                     "cascade-plan: error: CASCADE_ERROR_SCHEMA: the batch "
                     "description must be a JSON object, got an array");
  expectOneErrorLine(
      runPlan(R"({"mode": "decode", "page_size": 16, "num_qo_heads": 4,
                  "num_kv_heads": 4, "head_dim": 64, "num_sms": 8,
                  "kv_indptr": [0, 1], "kv_last_page_len": ["x"]})"),
      "cascade-plan: error: CASCADE_ERROR_SCHEMA: kv_last_page_len[0] must be "
      "an int32 integer, got a string");
  expectOneErrorLine(runPlan(R"({"mode": "decode", "pagesize": 16})"),
                     "cascade-plan: error: CASCADE_ERROR_SCHEMA: unknown key "
                     "\"pagesize\" in the batch description");
  expectOneErrorLine(runPlan(R"({"mode": "decode"})"),
                     "cascade-plan: error: CASCADE_ERROR_SCHEMA: missing "
                     "required key \"page_size\"");
}

TEST(Cli, InvalidBatch) {
  expectOneErrorLine(
      runPlan(R"({"mode": "decode", "page_size": 16, "num_qo_heads": 4,
                  "num_kv_heads": 4, "head_dim": 64, "num_sms": 8,
                  "kv_indptr": [0, 1], "kv_last_page_len": [17]})"),
      "cascade-plan: error: CASCADE_ERROR_INVALID_LAST_PAGE_LEN: "
      "kv_last_page_len[0] = 17 is outside [1, page_size = 16]");
  expectOneErrorLine(
      runPlan(R"({"mode": "prefill", "page_size": 16, "num_qo_heads": 4,
                  "num_kv_heads": 4, "head_dim": 64, "num_sms": 8,
                  "levels": [{"qo_indptr": [0, 2], "kv_indptr": [0, 1],
                              "kv_last_page_len": [3]},
                             {"qo_indptr": [0, 1, 3], "kv_indptr": [0, 1, 1],
                              "kv_last_page_len": [3, 0]}]})"),
      "cascade-plan: error: CASCADE_ERROR_LEVEL_MISMATCH: level 1 covers 3 "
      "query rows but level 0 covers 2");
}

TEST(Cli, KeysFromTheInputAreQuoted) {
  // A key with a newline (JSON "\n") used to put a raw newline into the
  // message (found by test/Fuzz/plan_json_fuzzer).
  expectOneErrorLine(runPlan(R"({"mode": "decode", "page\nsize": 16})"),
                     "cascade-plan: error: CASCADE_ERROR_SCHEMA: unknown key "
                     "\"page\\nsize\" in the batch description\n");
}

TEST(Cli, MissingFile) {
  expectOneErrorLine(runPlan("", "/nonexistent.json"),
                     "cascade-plan: error: CASCADE_ERROR_IO: cannot open "
                     "/nonexistent.json");
}
