//===- Status.h - Error codes and messages of the runtime -------*- C++ -*-===//
//
// Every fallible runtime function returns a Status: an error code shared with
// the C API (cascade_status_t) and a one-line message. Nothing throws.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_STATUS_H
#define CASCADE_RUNTIME_STATUS_H

#include "cascade/Runtime/cascade_runtime.h"

#include <string>
#include <utility>

namespace cascade::runtime {

/// The error codes of the C API, scoped.
enum class ErrorCode : int {
  Ok = CASCADE_OK,
  InvalidArgument = CASCADE_ERROR_INVALID_ARGUMENT,
  InvalidIndptr = CASCADE_ERROR_INVALID_INDPTR,
  SizeMismatch = CASCADE_ERROR_SIZE_MISMATCH,
  PageOutOfRange = CASCADE_ERROR_PAGE_OUT_OF_RANGE,
  InvalidLastPageLen = CASCADE_ERROR_INVALID_LAST_PAGE_LEN,
  LevelMismatch = CASCADE_ERROR_LEVEL_MISMATCH,
  InvalidHeads = CASCADE_ERROR_INVALID_HEADS,
  InvalidHeadDim = CASCADE_ERROR_INVALID_HEAD_DIM,
  InvalidPageSize = CASCADE_ERROR_INVALID_PAGE_SIZE,
  Overflow = CASCADE_ERROR_OVERFLOW,
  Parse = CASCADE_ERROR_PARSE,
  Schema = CASCADE_ERROR_SCHEMA,
  IO = CASCADE_ERROR_IO,
  NotFound = CASCADE_ERROR_NOT_FOUND,
  DriverUnavailable = CASCADE_ERROR_DRIVER_UNAVAILABLE,
  Driver = CASCADE_ERROR_DRIVER,
  Unsupported = CASCADE_ERROR_UNSUPPORTED,
  Internal = CASCADE_ERROR_INTERNAL,
};

/// Name of a code, e.g. "CASCADE_ERROR_INVALID_INDPTR".
const char *errorCodeName(ErrorCode code);

/// Success, or an error code with a message.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status success() { return Status(); }

  bool ok() const { return code_ == ErrorCode::Ok; }
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
};

/// Builds an error Status from a printf-style format.
Status makeError(ErrorCode code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

} // namespace cascade::runtime

/// Returns from the enclosing function if `expr` is an error Status.
#define CASCADE_RETURN_IF_ERROR(expr)                                          \
  do {                                                                         \
    ::cascade::runtime::Status cascadeStatus_ = (expr);                        \
    if (!cascadeStatus_.ok())                                                  \
      return cascadeStatus_;                                                   \
  } while (false)

#endif // CASCADE_RUNTIME_STATUS_H
