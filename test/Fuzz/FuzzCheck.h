//===- FuzzCheck.h - Property checks inside fuzz targets --------*- C++ -*-===//
//
// FUZZ_CHECK(cond): a property the API promises; a violation aborts, which
// libFuzzer reports as a crash with the input that caused it.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_TEST_FUZZ_FUZZCHECK_H
#define CASCADE_TEST_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "check failed: %s (%s:%d)\n", #cond, __FILE__,      \
                   __LINE__);                                                  \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

#endif // CASCADE_TEST_FUZZ_FUZZCHECK_H
