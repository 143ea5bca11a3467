#include "left_out.h"

#include <algorithm>

namespace kinetrace::cli {

uint64_t eventsRead(uint64_t handed, const std::map<std::string, uint64_t>& skipped) {
  for (const auto& [why, count] : skipped) handed += count;
  return handed;
}

uint64_t eventsWritten(uint64_t handed, const detail::SinkLosses& losses) {
  for (const auto& [why, count] : losses.events) handed -= std::min(handed, count);
  return handed;
}

void sayWhatWasLeftOut(std::FILE* messages, const std::map<std::string, uint64_t>& skipped,
                       const detail::SinkLosses& losses) {
  for (const auto& [why, count] : skipped) {
    std::fprintf(messages, "kinetrace: left out %llu %s (the output has no place for them)\n",
                 static_cast<unsigned long long>(count), why.c_str());
  }
  for (const auto& [why, count] : losses.events) {
    std::fprintf(messages, "kinetrace: left out %llu %s\n", static_cast<unsigned long long>(count),
                 why.c_str());
  }
  for (const auto& [why, count] : losses.changes) {
    std::fprintf(messages, "kinetrace: %llu %s\n", static_cast<unsigned long long>(count),
                 why.c_str());
  }
}

}  // namespace kinetrace::cli
