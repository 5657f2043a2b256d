//===- JsonSupport.cpp - nlohmann-json behind the runtime's Status --------===//

#include "JsonSupport.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

namespace cascade::runtime::json {

namespace {

/// Thrown from the parser callback to stop at the first structural error.
struct StructureError {
  std::string message;
};

/// Follows the parse to know, for each open container, its JSON pointer and
/// (for objects) the keys seen so far.
class StructureChecker {
public:
  bool operator()(int depth, nlohmann::detail::parse_event_t event,
                  Json &parsed) {
    using nlohmann::detail::parse_event_t;
    switch (event) {
    case parse_event_t::object_start:
    case parse_event_t::array_start:
      if (depth >= kMaxDepth)
        throw StructureError{"nesting deeper than " +
                             std::to_string(kMaxDepth) + " levels at " +
                             pointer(/*withChild=*/true)};
      frames_.push_back(Frame{
          event == parse_event_t::object_start, {}, "", 0, pointer(true)});
      break;
    case parse_event_t::object_end:
    case parse_event_t::array_end:
      frames_.pop_back();
      elementDone();
      break;
    case parse_event_t::key: {
      Frame &f = frames_.back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second)
        throw StructureError{
            "duplicate key " + quote(f.key) + " in the object " +
            (f.pointer.empty() ? "at the top level" : "at " + f.pointer)};
      break;
    }
    case parse_event_t::value:
      elementDone();
      break;
    }
    return true;
  }

private:
  struct Frame {
    bool isObject;
    std::set<std::string> keys;
    std::string key; ///< key of the member being read (objects)
    size_t index;    ///< index of the element being read (arrays)
    std::string pointer;
  };

  /// The JSON pointer of the innermost open container, or (withChild) of
  /// the element being read in it.
  std::string pointer(bool withChild) const {
    if (frames_.empty())
      return "";
    const Frame &f = frames_.back();
    if (!withChild)
      return f.pointer;
    if (!f.isObject)
      return f.pointer + "/" + std::to_string(f.index);
    // RFC 6901 ('~' -> "~0", '/' -> "~1"), then JSON string escapes for
    // control characters.
    std::string escaped;
    for (char c : f.key)
      escaped += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    std::string quoted = quote(escaped);
    return f.pointer + "/" + quoted.substr(1, quoted.size() - 2);
  }

  void elementDone() {
    if (!frames_.empty() && !frames_.back().isObject)
      ++frames_.back().index;
  }

  std::vector<Frame> frames_;
};

/// nlohmann-json's message without its "[json.exception.NAME.ID] " prefix.
std::string cleanMessage(const char *what) {
  std::string m(what);
  if (m.rfind("[json.exception.", 0) == 0) {
    size_t close = m.find("] ");
    if (close != std::string::npos)
      m.erase(0, close + 2);
  }
  return m;
}

/// A syntax error as "line L, column C: what", where (L, C) is the
/// character at which the parser stopped (column 1 is a line's first
/// character; the end of the input is one past its last character).
/// nlohmann-json counts a newline as the start of the next line, which would
/// put an error found at the end of a line at "column 0" of the next.
std::string syntaxMessage(std::string_view text,
                          const nlohmann::json::parse_error &e) {
  std::string what = cleanMessage(e.what());
  const std::string head = "parse error at line ";
  size_t colon = what.find(": ");
  if (what.rfind(head, 0) == 0 && colon != std::string::npos)
    what.erase(0, colon + 2);
  // e.byte is the 1-based index of the last character read.
  const size_t at = std::min<size_t>(e.byte ? e.byte - 1 : 0, text.size());
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  return "line " + std::to_string(line) + ", column " +
         std::to_string(at - lineStart + 1) + ": " + what;
}

bool isScalar(const Json &v) { return !v.is_structured() || v.empty(); }

/// A container of scalars on one line: nlohmann-json's compact text (one
/// call, so large arrays stay fast) with a space after every ',' and ':'
/// outside strings.
void formatFlat(const Json &v, std::string &out) {
  const std::string compact = formatScalar(v);
  out.reserve(out.size() + compact.size() + compact.size() / 2);
  bool inString = false, escaped = false;
  for (char c : compact) {
    out += c;
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == ',' || c == ':') {
      out += ' ';
    }
  }
}

void formatInto(const Json &v, int indent, std::string &out) {
  bool flat = true;
  for (const auto &e : v)
    flat &= isScalar(e);
  if (!v.is_structured() || flat) {
    formatFlat(v, out);
    return;
  }
  const bool object = v.is_object();
  out += object ? '{' : '[';
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it != v.begin())
      out += ',';
    out += '\n';
    out.append(static_cast<size_t>(indent) + 2, ' ');
    if (object) {
      out += quote(it.key());
      out += ": ";
    }
    formatInto(*it, indent + 2, out);
  }
  out += '\n';
  out.append(static_cast<size_t>(indent), ' ');
  out += object ? '}' : ']';
}

} // namespace

Status parse(std::string_view text, Json &out) {
  StructureChecker checker;
  try {
    out = Json::parse(
        text.begin(), text.end(),
        [&checker](int depth, nlohmann::detail::parse_event_t event,
                   Json &parsed) { return checker(depth, event, parsed); });
  } catch (const StructureError &e) {
    return Status(ErrorCode::Parse, e.message);
  } catch (const nlohmann::json::parse_error &e) {
    return Status(ErrorCode::Parse, syntaxMessage(text, e));
  } catch (const nlohmann::json::exception &e) {
    return Status(ErrorCode::Parse, cleanMessage(e.what()));
  } catch (const std::bad_alloc &) {
    return Status(ErrorCode::Parse, "out of memory while parsing JSON");
  }
  return Status::success();
}

const char *kindName(const Json &v) {
  switch (v.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "an integer";
  case Json::value_t::number_float:
    return "a number";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "an unknown value";
  }
}

bool getInt64(const Json &v, int64_t &out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  return false;
}

const Json *find(const Json &obj, std::string_view key) {
  if (!obj.is_object())
    return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

std::string formatScalar(const Json &v) {
  return v.dump(-1, ' ', /*ensure_ascii=*/false,
                Json::error_handler_t::replace);
}

std::string quote(std::string_view s) {
  return formatScalar(Json(std::string(s)));
}

std::string format(const Json &v) {
  std::string out;
  formatInto(v, 0, out);
  return out;
}

} // namespace cascade::runtime::json
