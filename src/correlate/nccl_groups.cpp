#include "correlate/nccl_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace kinetrace::detail {

void NcclGroups::onRange(uint32_t instance, std::string_view call, uint64_t rangeId,
                         uint32_t args) {
  if (call == "ncclGroupStart") {
    Group& group = groups_[instance];
    if (group.depth++ == 0) group.calls.clear();
    return;
  }
  auto found = groups_.find(instance);
  if (found == groups_.end() || found->second.depth == 0) return;
  Group& group = found->second;
  if (call != "ncclGroupEnd") {
    if (args != 0) group.calls.push_back(args);
    return;
  }
  if (--group.depth > 0 || group.calls.empty() || tables_.eventArgs.size() >= maxEventArgs_) {
    return;
  }
  giveSum(group, rangeId);
  group.calls.clear();
}

// The group's calls, summed: their count by name, the bytes they move, and the communicator
// and peer when they all share one.
void NcclGroups::giveSum(const Group& group, uint64_t rangeId) {
  std::vector<std::pair<std::string_view, int>> counts;
  uint64_t bytes = 0;
  std::optional<StoredArg> communicator;
  std::optional<StoredArg> peer;
  bool oneCommunicator = true;
  bool onePeer = true;
  auto same = [](const std::optional<StoredArg>& seen, const StoredArg& arg) {
    return !seen || (seen->type == arg.type && seen->number == arg.number);
  };
  for (const uint32_t index : group.calls) {
    const StoredArgs& member = tables_.eventArgs[index - 1];
    const std::string_view name = tables_.strings.get(member.event).substr(kNcclRangePrefix.size());
    auto counted = std::find_if(counts.begin(), counts.end(),
                                [&](const auto& entry) { return entry.first == name; });
    if (counted == counts.end()) {
      counts.emplace_back(name, 1);
    } else {
      ++counted->second;
    }
    for (const StoredArg& arg : member.values) {
      const std::string_view key = tables_.strings.get(arg.key);
      if (key == "Message size [bytes]" || key == "Bytes") bytes += arg.number;
      if (key == "NCCL communicator ID") {
        oneCommunicator = oneCommunicator && same(communicator, arg);
        communicator = arg;
      }
      if (key == "Peer rank") {
        onePeer = onePeer && same(peer, arg);
        peer = arg;
      }
    }
  }
  std::string summary;
  for (const auto& [name, count] : counts) {
    if (!summary.empty()) summary += ", ";
    summary += count == 1 ? std::string(name) : fmt::format("{} x{}", name, count);
  }
  StoredArgs grouped;
  grouped.event = tables_.strings.intern(fmt::format("{}ncclGroupEnd", kNcclRangePrefix));
  grouped.nccl = true;
  StoredArg calls;
  calls.key = tables_.strings.intern("Calls in the group");
  calls.type = ArgType::Text;
  calls.text = tables_.strings.intern(summary);
  grouped.values.push_back(calls);
  StoredArg size;
  size.key = tables_.strings.intern("Message size [bytes]");
  size.number = bytes;
  grouped.values.push_back(size);
  if (communicator && oneCommunicator) grouped.values.push_back(*communicator);
  if (peer && onePeer) grouped.values.push_back(*peer);
  tables_.eventArgs.push_back(std::move(grouped));
  tables_.argsOfRange[rangeId] = static_cast<uint32_t>(tables_.eventArgs.size());
}

std::size_t NcclGroups::heldBytes() const {
  constexpr std::size_t kNode = 32;  // a hash-map node's cost besides its payload
  std::size_t bytes = 0;
  for (const auto& [instance, group] : groups_) {
    bytes += kNode + sizeof(Group) + group.calls.capacity() * sizeof(uint32_t);
  }
  return bytes;
}

}  // namespace kinetrace::detail
