// kinetrace's libkineto-compatible API: the span of one trace (or one iteration of it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace libkineto {

struct TraceSpan {
  TraceSpan() = delete;
  TraceSpan(int64_t start, int64_t end, std::string spanName)
      : startTime(start), endTime(end), name(std::move(spanName)) {}
  TraceSpan(int ops, int it, std::string spanName, std::string spanPrefix)
      : opCount(ops), iteration(it), name(std::move(spanName)), prefix(std::move(spanPrefix)) {}

  int64_t startTime{0};  // epoch nanoseconds
  int64_t endTime{0};
  int opCount{0};
  int iteration{-1};
  std::string name;    // the timeline the span belongs to
  std::string prefix;  // tells spans on one timeline apart
};

}  // namespace libkineto
