//===- cascade-plan.cpp - Print the plan of a batch as JSON ---------------===//
//
// Usage: cascade-plan [FILE | -]
//
// Reads a JSON batch description (docs/plan-schema.md) from FILE or stdin
// and prints its plan as JSON on stdout. Bad input (malformed JSON, schema
// errors, invalid index arrays) exits with code 2 and one line on stderr:
//   cascade-plan: error: CASCADE_ERROR_X: <message>
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Manifest.h"
#include "cascade/Runtime/PlanJson.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <new>
#include <string>

using namespace cascade::runtime;

static int fail(const Status &s) {
  std::string message = s.message();
  for (char &c : message)
    if (c == '\n' || c == '\r')
      c = ' ';
  std::fprintf(stderr, "cascade-plan: error: %s: %s\n", errorCodeName(s.code()),
               message.c_str());
  return 2;
}

int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && (!std::strcmp(argv[1], "-h") ||
                                 !std::strcmp(argv[1], "--help")))) {
    std::fprintf(argc > 2 ? stderr : stdout,
                 "usage: cascade-plan [FILE | -]  (JSON batch description, "
                 "see docs/plan-schema.md)\n");
    return argc > 2 ? 2 : 0;
  }
  std::string text;
  if (argc == 2 && std::strcmp(argv[1], "-") != 0) {
    Status s = readFile(argv[1], text);
    if (!s.ok())
      return fail(s);
  } else {
    text.assign(std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>());
  }
  BatchDescription d;
  Status s = parseBatchDescription(text, d);
  if (!s.ok())
    return fail(s);
  std::string out;
  try {
    if (d.autoCascade) {
      AutoCascade ac;
      s = makeAutoCascadePlan(d.inputs()[0], d.autoOptions, ac);
      if (!s.ok())
        return fail(s);
      out = autoCascadeToJson(ac, d.causal);
    } else if (d.isCascade) {
      CascadePlan plan;
      s = makeCascadePlan(d.inputs(), plan);
      if (!s.ok())
        return fail(s);
      out = cascadePlanToJson(plan, d.causal);
    } else {
      Plan plan;
      s = makePlan(d.inputs()[0], plan);
      if (!s.ok())
        return fail(s);
      out = planToJson(plan);
    }
  } catch (const std::bad_alloc &) {
    // A plan's host arrays grow with its work items and rows.
    return fail(Status(ErrorCode::Internal,
                       "out of memory: the plan's host arrays do not fit"));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
