#include "model/trace_data.h"

namespace kinetrace::detail {

uint32_t TraceData::threadIndex(int64_t pidValue, int64_t tid) {
  for (uint32_t i = 0; i < threads.size(); ++i) {
    if (threads[i].pid == pidValue && threads[i].tid == tid) return i;
  }
  threads.push_back(ThreadInfo{pidValue, tid, StringTable::kEmpty});
  return static_cast<uint32_t>(threads.size() - 1);
}

void TraceData::setMetadataJson(const std::string& key, std::string json) {
  for (auto& entry : metadataJson) {
    if (entry.first == key) {
      entry.second = std::move(json);
      return;
    }
  }
  metadataJson.emplace_back(key, std::move(json));
}

}  // namespace kinetrace::detail
