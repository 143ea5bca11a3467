#include "left_out.h"

#include <algorithm>

#include "support/text.h"

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
    std::fprintf(messages, "kinetrace: left out %s %s (the output has no place for them)\n",
                 detail::withThousands(count).c_str(), why.c_str());
  }
  for (const auto& [why, count] : losses.events) {
    std::fprintf(messages, "kinetrace: left out %s %s\n", detail::withThousands(count).c_str(),
                 why.c_str());
  }
  for (const auto& [why, count] : losses.changes) {
    std::fprintf(messages, "kinetrace: %s %s\n", detail::withThousands(count).c_str(), why.c_str());
  }
}

}  // namespace kinetrace::cli
