//===- Json.cpp - A small JSON reader and writer --------------------------===//

#include "cascade/Runtime/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cascade::runtime {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

const JsonValue *JsonValue::find(std::string_view key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (const auto &m : members_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

const char *JsonValue::kindName() const {
  switch (kind_) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Int:
    return "an integer";
  case Kind::Double:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

JsonValue JsonValue::makeBool(bool b) {
  JsonValue v;
  v.kind_ = Kind::Bool;
  v.boolValue_ = b;
  return v;
}
JsonValue JsonValue::makeInt(int64_t i) {
  JsonValue v;
  v.kind_ = Kind::Int;
  v.intValue_ = i;
  return v;
}
JsonValue JsonValue::makeDouble(double d) {
  JsonValue v;
  v.kind_ = Kind::Double;
  v.doubleValue_ = d;
  return v;
}
JsonValue JsonValue::makeString(std::string s) {
  JsonValue v;
  v.kind_ = Kind::String;
  v.stringValue_ = std::move(s);
  return v;
}
JsonValue JsonValue::makeArray(std::vector<JsonValue> elements) {
  JsonValue v;
  v.kind_ = Kind::Array;
  v.elements_ = std::move(elements);
  return v;
}
JsonValue
JsonValue::makeObject(std::vector<std::pair<std::string, JsonValue>> m) {
  JsonValue v;
  v.kind_ = Kind::Object;
  v.members_ = std::move(m);
  return v;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

constexpr int kMaxDepth = 128;

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Status parseDocument(JsonValue &out) {
    skipSpace();
    CASCADE_RETURN_IF_ERROR(parseValue(out, 0));
    skipSpace();
    if (pos_ != text_.size())
      return error("unexpected text after the JSON value");
    return Status::success();
  }

private:
  Status error(const char *what) const {
    int64_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return makeError(ErrorCode::Parse, "line %lld, column %lld: %s",
                     static_cast<long long>(line),
                     static_cast<long long>(column), what);
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipSpace() {
    while (!atEnd()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        ++pos_;
      else
        break;
    }
  }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text_.substr(pos_, n) == word) {
      pos_ += n;
      return true;
    }
    return false;
  }

  Status parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return error("nesting deeper than 128 levels");
    if (atEnd())
      return error("unexpected end of input, expected a value");
    char c = peek();
    switch (c) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"': {
      std::string s;
      CASCADE_RETURN_IF_ERROR(parseString(s));
      out = JsonValue::makeString(std::move(s));
      return Status::success();
    }
    case 't':
      if (consumeWord("true")) {
        out = JsonValue::makeBool(true);
        return Status::success();
      }
      break;
    case 'f':
      if (consumeWord("false")) {
        out = JsonValue::makeBool(false);
        return Status::success();
      }
      break;
    case 'n':
      if (consumeWord("null")) {
        out = JsonValue::makeNull();
        return Status::success();
      }
      break;
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      break;
    }
    return error("invalid value");
  }

  Status parseObject(JsonValue &out, int depth) {
    ++pos_; // '{'
    std::vector<std::pair<std::string, JsonValue>> members;
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      out = JsonValue::makeObject(std::move(members));
      return Status::success();
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return error(atEnd() ? "unexpected end of input in an object"
                             : "expected a string key");
      std::string key;
      const size_t keyStart = pos_;
      CASCADE_RETURN_IF_ERROR(parseString(key));
      for (const auto &m : members)
        if (m.first == key) {
          pos_ = keyStart;
          return error(("duplicate key \"" + key + "\"").c_str());
        }
      skipSpace();
      if (peek() != ':')
        return error("expected ':' after an object key");
      ++pos_;
      skipSpace();
      JsonValue value;
      CASCADE_RETURN_IF_ERROR(parseValue(value, depth + 1));
      members.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        break;
      }
      return error(atEnd() ? "unexpected end of input in an object"
                           : "expected ',' or '}' in an object");
    }
    out = JsonValue::makeObject(std::move(members));
    return Status::success();
  }

  Status parseArray(JsonValue &out, int depth) {
    ++pos_; // '['
    std::vector<JsonValue> elements;
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      out = JsonValue::makeArray(std::move(elements));
      return Status::success();
    }
    while (true) {
      skipSpace();
      JsonValue value;
      CASCADE_RETURN_IF_ERROR(parseValue(value, depth + 1));
      elements.push_back(std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        break;
      }
      return error(atEnd() ? "unexpected end of input in an array"
                           : "expected ',' or ']' in an array");
    }
    out = JsonValue::makeArray(std::move(elements));
    return Status::success();
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }

  Status parseHex4(uint32_t &code) {
    if (pos_ + 4 > text_.size())
      return error("truncated \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      int d = hexDigit(text_[pos_ + i]);
      if (d < 0)
        return error("invalid \\u escape");
      code = code * 16 + static_cast<uint32_t>(d);
    }
    pos_ += 4;
    return Status::success();
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Status parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (atEnd())
        return error("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return Status::success();
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (atEnd())
        return error("unterminated string");
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        CASCADE_RETURN_IF_ERROR(parseHex4(cp));
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t low = 0;
          if (!consumeWord("\\u"))
            return error("unpaired surrogate in \\u escape");
          CASCADE_RETURN_IF_ERROR(parseHex4(low));
          if (low < 0xDC00 || low >= 0xE000)
            return error("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return error("unpaired surrogate in \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos_;
        return error("invalid escape in a string");
      }
    }
  }

  Status parseNumber(JsonValue &out) {
    size_t start = pos_;
    bool isInteger = true;
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    } else {
      pos_ = start;
      return error("invalid number");
    }
    if (peek() == '.') {
      isInteger = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return error("invalid number: digits expected after '.'");
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      isInteger = false;
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return error("invalid number: digits expected in the exponent");
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    std::string token(text_.substr(start, pos_ - start));
    if (isInteger) {
      errno = 0;
      char *end = nullptr;
      long long v = std::strtoll(token.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') {
        out = JsonValue::makeInt(v);
        return Status::success();
      }
      // Out of int64 range: fall through to a double.
    }
    errno = 0;
    double d = std::strtod(token.c_str(), nullptr);
    if (!std::isfinite(d)) {
      pos_ = start;
      return error("number out of range");
    }
    out = JsonValue::makeDouble(d);
    return Status::success();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

} // namespace

Status parseJson(std::string_view text, JsonValue &out) {
  Parser parser(text);
  return parser.parseDocument(out);
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void appendJsonString(std::string &out, std::string_view s) {
  out += '"';
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (u < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", u);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * stack_.size(), ' ');
}

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (stack_.empty())
    return;
  Frame &f = stack_.back();
  if (!f.first)
    out_ += f.compact ? ", " : ",";
  f.first = false;
  if (!f.compact)
    newline();
}

void JsonWriter::beginObject(bool compact) {
  beforeValue();
  bool c = compact || (!stack_.empty() && stack_.back().compact);
  out_ += '{';
  stack_.push_back({c, true});
}

void JsonWriter::endObject() {
  Frame f = stack_.back();
  stack_.pop_back();
  if (!f.compact && !f.first)
    newline();
  out_ += '}';
}

void JsonWriter::beginArray(bool compact) {
  beforeValue();
  bool c = compact || (!stack_.empty() && stack_.back().compact);
  out_ += '[';
  stack_.push_back({c, true});
}

void JsonWriter::endArray() {
  Frame f = stack_.back();
  stack_.pop_back();
  if (!f.compact && !f.first)
    newline();
  out_ += ']';
}

void JsonWriter::key(std::string_view k) {
  beforeValue();
  appendJsonString(out_, k);
  out_ += ": ";
  afterKey_ = true;
}

void JsonWriter::value(int64_t v) {
  beforeValue();
  out_ += std::to_string(v);
}

void JsonWriter::value(double v) {
  beforeValue();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  out_ += buf;
  // Keep doubles recognisable as such when read back.
  if (!std::strpbrk(buf, ".eE"))
    out_ += ".0";
}

void JsonWriter::value(bool v) {
  beforeValue();
  out_ += v ? "true" : "false";
}

void JsonWriter::value(std::string_view v) {
  beforeValue();
  appendJsonString(out_, v);
}

void JsonWriter::nullValue() {
  beforeValue();
  out_ += "null";
}

void JsonWriter::value(const JsonValue &v) {
  switch (v.kind()) {
  case JsonValue::Kind::Null:
    nullValue();
    break;
  case JsonValue::Kind::Bool:
    value(v.asBool());
    break;
  case JsonValue::Kind::Int:
    value(v.asInt());
    break;
  case JsonValue::Kind::Double:
    value(v.asDouble());
    break;
  case JsonValue::Kind::String:
    value(std::string_view(v.asString()));
    break;
  case JsonValue::Kind::Array: {
    bool compact = true;
    for (const JsonValue &e : v.elements())
      compact &= !e.isArray() && !e.isObject();
    beginArray(compact);
    for (const JsonValue &e : v.elements())
      value(e);
    endArray();
    break;
  }
  case JsonValue::Kind::Object:
    beginObject();
    for (const auto &m : v.members()) {
      key(m.first);
      value(m.second);
    }
    endObject();
    break;
  }
}

} // namespace cascade::runtime
