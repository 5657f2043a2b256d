//===- Json.h - A small JSON reader and writer ------------------*- C++ -*-===//
//
// Just enough JSON for plan descriptions and kernel manifests: a DOM value
// (objects keep key order), a strict RFC 8259 parser with line:column error
// messages, and a streaming writer that prints arrays of scalars on one line.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_JSON_H
#define CASCADE_RUNTIME_JSON_H

#include "cascade/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cascade::runtime {

/// One JSON value. Integers without fraction or exponent that fit in int64
/// are kept exactly (Kind::Int); other numbers are doubles.
class JsonValue {
public:
  enum class Kind { Null, Bool, Int, Double, String, Array, Object };

  JsonValue() = default;

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isNumber() const { return kind_ == Kind::Int || kind_ == Kind::Double; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return boolValue_; }
  int64_t asInt() const { return intValue_; }
  double asDouble() const {
    return kind_ == Kind::Int ? static_cast<double>(intValue_) : doubleValue_;
  }
  const std::string &asString() const { return stringValue_; }
  const std::vector<JsonValue> &elements() const { return elements_; }
  const std::vector<std::pair<std::string, JsonValue>> &members() const {
    return members_;
  }

  /// Member `key` of an object, or null if absent (or not an object).
  const JsonValue *find(std::string_view key) const;

  /// A short name of the kind, for messages ("an integer", "a string"...).
  const char *kindName() const;

  static JsonValue makeNull() { return JsonValue(); }
  static JsonValue makeBool(bool b);
  static JsonValue makeInt(int64_t i);
  static JsonValue makeDouble(double d);
  static JsonValue makeString(std::string s);
  static JsonValue makeArray(std::vector<JsonValue> elements);
  static JsonValue makeObject(std::vector<std::pair<std::string, JsonValue>> m);

private:
  Kind kind_ = Kind::Null;
  bool boolValue_ = false;
  int64_t intValue_ = 0;
  double doubleValue_ = 0;
  std::string stringValue_;
  std::vector<JsonValue> elements_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

/// Parses one JSON document. Errors are ErrorCode::Parse with a message
/// "line L, column C: ...". Duplicate object keys and nesting deeper than
/// 128 are errors.
Status parseJson(std::string_view text, JsonValue &out);

/// A streaming JSON writer with two-space indentation. Arrays opened with
/// `compact = true` (and all their contents) print on one line.
class JsonWriter {
public:
  void beginObject(bool compact = false);
  void endObject();
  void beginArray(bool compact = false);
  void endArray();
  /// The key of the next member; only directly inside an object.
  void key(std::string_view k);
  void value(int64_t v);
  void value(int32_t v) { value(static_cast<int64_t>(v)); }
  void value(uint8_t v) { value(static_cast<int64_t>(v)); }
  void value(double v);
  void value(bool v);
  void value(std::string_view v);
  void value(const char *v) { value(std::string_view(v)); }
  void nullValue();
  /// Writes a whole JsonValue.
  void value(const JsonValue &v);
  /// A compact array of integers.
  template <typename T> void intArray(const T *data, int64_t n) {
    beginArray(true);
    for (int64_t i = 0; i < n; ++i)
      value(static_cast<int64_t>(data[i]));
    endArray();
  }

  const std::string &str() const { return out_; }
  std::string take() { return std::move(out_); }

private:
  struct Frame {
    bool compact;
    bool first;
  };
  void beforeValue();
  void newline();
  std::string out_;
  std::vector<Frame> stack_;
  bool afterKey_ = false;
};

/// Appends `s` to `out` as a quoted JSON string.
void appendJsonString(std::string &out, std::string_view s);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_JSON_H
