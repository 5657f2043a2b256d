//===- Status.cpp - Error codes and messages ------------------------------===//

#include "cascade/Runtime/Status.h"

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace cascade::runtime {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "CASCADE_OK";
  case ErrorCode::InvalidArgument:
    return "CASCADE_ERROR_INVALID_ARGUMENT";
  case ErrorCode::InvalidIndptr:
    return "CASCADE_ERROR_INVALID_INDPTR";
  case ErrorCode::SizeMismatch:
    return "CASCADE_ERROR_SIZE_MISMATCH";
  case ErrorCode::PageOutOfRange:
    return "CASCADE_ERROR_PAGE_OUT_OF_RANGE";
  case ErrorCode::InvalidLastPageLen:
    return "CASCADE_ERROR_INVALID_LAST_PAGE_LEN";
  case ErrorCode::LevelMismatch:
    return "CASCADE_ERROR_LEVEL_MISMATCH";
  case ErrorCode::InvalidHeads:
    return "CASCADE_ERROR_INVALID_HEADS";
  case ErrorCode::InvalidHeadDim:
    return "CASCADE_ERROR_INVALID_HEAD_DIM";
  case ErrorCode::InvalidPageSize:
    return "CASCADE_ERROR_INVALID_PAGE_SIZE";
  case ErrorCode::Overflow:
    return "CASCADE_ERROR_OVERFLOW";
  case ErrorCode::Parse:
    return "CASCADE_ERROR_PARSE";
  case ErrorCode::Schema:
    return "CASCADE_ERROR_SCHEMA";
  case ErrorCode::IO:
    return "CASCADE_ERROR_IO";
  case ErrorCode::NotFound:
    return "CASCADE_ERROR_NOT_FOUND";
  case ErrorCode::DriverUnavailable:
    return "CASCADE_ERROR_DRIVER_UNAVAILABLE";
  case ErrorCode::Driver:
    return "CASCADE_ERROR_DRIVER";
  case ErrorCode::Unsupported:
    return "CASCADE_ERROR_UNSUPPORTED";
  case ErrorCode::Internal:
    return "CASCADE_ERROR_INTERNAL";
  }
  return "CASCADE_ERROR_UNKNOWN";
}

Status makeError(ErrorCode code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string message;
  if (n > 0) {
    std::vector<char> buffer(static_cast<size_t>(n) + 1);
    std::vsnprintf(buffer.data(), buffer.size(), format, args);
    message.assign(buffer.data(), static_cast<size_t>(n));
  }
  va_end(args);
  return Status(code, std::move(message));
}

} // namespace cascade::runtime
