#include "correlate/host_table_writer.h"

#include <utility>
#include <vector>

#include "model/event_args.h"

namespace kinetrace::detail {

HostTableWriter::HostTableWriter(TraceTables& tables, LossCounters& losses,
                                 std::function<std::string(ApiDomain, uint32_t)> apiName)
    : tables_(tables), losses_(losses), apiName_(std::move(apiName)) {}

uint32_t HostTableWriter::threadOf(uint32_t instance) {
  auto found = threadByInstance_.find(instance);
  if (found != threadByInstance_.end()) return found->second;
  // Events before the thread was announced do not happen (the recorder announces a thread
  // before its first event); a placeholder keeps the index valid all the same.
  auto index = static_cast<uint32_t>(tables_.threads.size());
  tables_.threads.push_back(ThreadInfo{tables_.pid, 0, StringTable::kEmpty});
  threadByInstance_.emplace(instance, index);
  return index;
}

uint32_t HostTableWriter::threadOfTid(int64_t tid) {
  auto found = threadByTid_.find(tid);
  if (found != threadByTid_.end()) return found->second;
  auto index = static_cast<uint32_t>(tables_.threads.size());
  tables_.threads.push_back(ThreadInfo{tables_.pid, tid, StringTable::kEmpty});
  threadByTid_.emplace(tid, index);
  return index;
}

void HostTableWriter::onThread(uint32_t instance, int64_t tid, std::string_view name) {
  auto found = threadByInstance_.find(instance);
  uint32_t index;
  if (found != threadByInstance_.end()) {
    index = found->second;
  } else {
    index = threadOfTid(tid);
    threadByInstance_.emplace(instance, index);
  }
  tables_.threads[index].tid = tid;
  if (!name.empty()) tables_.threads[index].name = tables_.strings.intern(name);
}

StringId HostTableWriter::intern(HostName name) {
  if (name.literal == nullptr) return tables_.strings.intern(name.text);
  auto found = literalNames_.find(name.literal);
  if (found != literalNames_.end()) return found->second;
  StringId id = tables_.strings.intern(name.text);
  literalNames_.emplace(name.literal, id);
  return id;
}

StringId HostTableWriter::apiNameOf(ApiDomain domain, uint32_t callbackId) {
  const uint32_t key = (domain == ApiDomain::Driver ? 1u << 16 : 0u) | (callbackId & 0xffffu);
  auto found = apiNames_.find(key);
  if (found != apiNames_.end()) return found->second;
  std::string name =
      apiName_ ? apiName_(domain, callbackId) : "CUDA API " + std::to_string(callbackId);
  StringId id = tables_.strings.intern(name);
  apiNames_.emplace(key, id);
  return id;
}

uint32_t HostTableWriter::keepArgs(std::string_view event, std::string_view encoded,
                                   uint64_t rangeId) {
  if (encoded.empty()) return 0;
  uint32_t index = 0;
  if (rangeId != 0) {
    const auto known = tables_.argsOfRange.find(rangeId);
    if (known != tables_.argsOfRange.end()) index = known->second;
  }
  if (index == 0 && tables_.eventArgs.size() >= kEventArgsKept) {
    ++losses_.eventArgsNotKept;
    return 0;
  }
  StoredArgs added;
  forEachEventArg(encoded, [&](const EventArg& arg) {
    StoredArg value;
    value.key = tables_.strings.intern(arg.key);
    value.type = arg.type;
    value.number = arg.number;
    if (arg.type == ArgType::Text) value.text = tables_.strings.intern(arg.text);
    added.values.push_back(value);
  });
  if (added.values.empty()) return index;
  if (index != 0) {
    std::vector<StoredArg>& values = tables_.eventArgs[index - 1].values;
    values.insert(values.end(), added.values.begin(), added.values.end());
    return index;
  }
  added.event = tables_.strings.intern(event);
  added.nccl = isNcclRange(event);
  tables_.eventArgs.push_back(std::move(added));
  index = static_cast<uint32_t>(tables_.eventArgs.size());
  if (rangeId != 0) tables_.argsOfRange[rangeId] = index;
  return index;
}

}  // namespace kinetrace::detail
