//===- JsonSupport.h - nlohmann-json behind the runtime's Status -*- C++
//-*-===//
//
// Every JSON document of the runtime (kernel manifests, batch descriptions,
// plans) is read and written with nlohmann-json; this private header adds
// what the runtime needs on top of it: errors as a Status (never an
// exception), a key-order-preserving value type, duplicate-key and depth
// checks, and a layout that prints arrays and objects of scalars on one line.
// Numbers are always formatted and parsed by nlohmann-json, which does not
// depend on the process locale.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_RUNTIME_JSONSUPPORT_H
#define CASCADE_LIB_RUNTIME_JSONSUPPORT_H

#include "cascade/Runtime/Status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace cascade::runtime::json {

/// A JSON value whose objects keep the order of their keys.
using Json = nlohmann::ordered_json;

/// Containers nested deeper than this are a parse error.
constexpr int kMaxDepth = 128;

/// Parses one JSON document. Errors are ErrorCode::Parse with a message that
/// says what is wrong and where: "line L, column C: ..." for syntax errors,
/// the JSON pointer of the object for a duplicate key. Never throws.
Status parse(std::string_view text, Json &out);

/// "an integer", "a string", ... for messages.
const char *kindName(const Json &v);

/// True if `v` is an integer that fits in int64 (sets `out`).
bool getInt64(const Json &v, int64_t &out);

/// The member `key` of object `obj`, or null (also when `obj` is not an
/// object).
const Json *find(const Json &obj, std::string_view key);

/// The document as text: two-space indentation, arrays and objects whose
/// elements are all scalars on one line. Never throws.
std::string format(const Json &v);

/// One scalar (or any value) on one line, as nlohmann-json writes it.
std::string formatScalar(const Json &v);

/// `s` as a JSON string literal ("a\nb" for a, newline, b): how messages
/// show text that came from the input, so that they stay on one line.
std::string quote(std::string_view s);

} // namespace cascade::runtime::json

#endif // CASCADE_LIB_RUNTIME_JSONSUPPORT_H
