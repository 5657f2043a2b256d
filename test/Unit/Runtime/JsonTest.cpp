//===- JsonTest.cpp - The JSON reader and writer --------------------------===//

#include "cascade/Runtime/Json.h"

#include <gtest/gtest.h>

using namespace cascade::runtime;

TEST(Json, ParsesScalarsArraysObjects) {
  JsonValue v;
  ASSERT_TRUE(parseJson(R"( {"a": [1, -2, 3.5, 1e3], "b": {"c": true},
      "d": null, "e": "x\"y\\z\u00e9\n", "f": 9223372036854775807} )",
                        v)
                  .ok());
  ASSERT_TRUE(v.isObject());
  const JsonValue *a = v.find("a");
  ASSERT_TRUE(a && a->isArray());
  EXPECT_TRUE(a->elements()[0].isInt());
  EXPECT_EQ(a->elements()[1].asInt(), -2);
  EXPECT_FALSE(a->elements()[2].isInt());
  EXPECT_DOUBLE_EQ(a->elements()[2].asDouble(), 3.5);
  EXPECT_DOUBLE_EQ(a->elements()[3].asDouble(), 1000.0);
  EXPECT_TRUE(v.find("b")->find("c")->asBool());
  EXPECT_TRUE(v.find("d")->isNull());
  EXPECT_EQ(v.find("e")->asString(), "x\"y\\z\xc3\xa9\n");
  EXPECT_EQ(v.find("f")->asInt(), INT64_MAX);
  EXPECT_EQ(v.find("zz"), nullptr);
}

TEST(Json, SurrogatePairs) {
  JsonValue v;
  ASSERT_TRUE(parseJson(R"("\ud83d\ude00")", v).ok());
  EXPECT_EQ(v.asString(), "\xf0\x9f\x98\x80");
  Status s = parseJson(R"("\ud83d")", v);
  EXPECT_EQ(s.code(), ErrorCode::Parse);
}

struct BadJson {
  const char *text;
  const char *message;
};

TEST(Json, ErrorsHaveLineAndColumn) {
  const BadJson cases[] = {
      {"", "line 1, column 1: unexpected end of input, expected a value"},
      {"{\"a\": 1,}", "line 1, column 9: expected a string key"},
      {"[1, 2", "line 1, column 6: unexpected end of input in an array"},
      {"{\"a\" 1}", "line 1, column 6: expected ':' after an object key"},
      {"{\n  \"a\": tru\n}", "line 2, column 8: invalid value"},
      {"[01]", "line 1, column 3: expected ',' or ']' in an array"},
      {"1 2", "line 1, column 3: unexpected text after the JSON value"},
      {"{\"a\": 1, \"a\": 2}", "line 1, column 10: duplicate key \"a\""},
      {"\"abc", "line 1, column 5: unterminated string"},
      {"\"a\tb\"", "line 1, column 3: control character in a string"},
      {"\"\\q\"", "line 1, column 3: invalid escape in a string"},
      {"-", "line 1, column 1: invalid number"},
      {"1.", "line 1, column 3: invalid number: digits expected after '.'"},
      {"1e400", "line 1, column 1: number out of range"},
      {"[1, 2]]", "line 1, column 7: unexpected text after the JSON value"},
  };
  for (const BadJson &c : cases) {
    JsonValue v;
    Status s = parseJson(c.text, v);
    EXPECT_EQ(s.code(), ErrorCode::Parse) << c.text;
    EXPECT_EQ(s.message(), c.message) << c.text;
  }
}

TEST(Json, DepthLimit) {
  std::string deep(200, '[');
  deep += std::string(200, ']');
  JsonValue v;
  Status s = parseJson(deep, v);
  EXPECT_EQ(s.code(), ErrorCode::Parse);
  EXPECT_NE(s.message().find("nesting deeper than 128 levels"),
            std::string::npos);
  std::string ok(100, '[');
  ok += std::string(100, ']');
  EXPECT_TRUE(parseJson(ok, v).ok());
}

TEST(Json, BigIntegersBecomeDoubles) {
  JsonValue v;
  ASSERT_TRUE(parseJson("123456789012345678901234567890", v).ok());
  EXPECT_FALSE(v.isInt());
  EXPECT_TRUE(v.isNumber());
}

TEST(Json, WriterFormatsAndRoundTrips) {
  JsonWriter w;
  w.beginObject();
  w.key("n");
  w.value(int64_t(3));
  w.key("xs");
  std::vector<int32_t> xs{1, 2, 3};
  w.intArray(xs.data(), 3);
  w.key("s");
  w.value("a\"b\n\x01");
  w.key("d");
  w.value(2.0);
  w.key("o");
  w.beginObject();
  w.endObject();
  w.endObject();
  EXPECT_EQ(w.str(), "{\n  \"n\": 3,\n  \"xs\": [1, 2, 3],\n  \"s\": "
                     "\"a\\\"b\\n\\u0001\",\n  \"d\": 2.0,\n  \"o\": {}\n}");
  JsonValue v;
  ASSERT_TRUE(parseJson(w.str(), v).ok());
  EXPECT_EQ(v.find("s")->asString(), "a\"b\n\x01");
  EXPECT_FALSE(v.find("d")->isInt());
  JsonWriter w2;
  w2.value(v);
  EXPECT_EQ(w2.str(), w.str());
}
