#include "analysis/ranked_collector.h"

#include <fmt/format.h>

#include <utility>

#include "analysis/trace_merge.h"
#include "kinetrace/error.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

bool isMergedHeader(const TraceHeader& header) {
  for (const Value::Member& member : header.metadata) {
    if (member.key == chrome::kDistributedInfo && member.value.find(chrome::kMergedRanks)) {
      return true;
    }
  }
  return false;
}

// The rank of an event of a merged trace: its process's place in the ranks' pid ranges.
int64_t rankOfPid(int64_t pid) {
  return pid >= 0 ? pid / kMergedPidStride : 0;
}

// A rank's own trace's metadata, header then footer, as the merged footer keeps it; empty
// when the footer does not list the rank.
Metadata ownMetadataOf(const Metadata& mergedFooter, int64_t rank) {
  Metadata own;
  for (const Value::Member& member : mergedFooter) {
    if (member.key != chrome::kMergeFooter || member.value.kind() != Value::Kind::Array) continue;
    for (const Value& entry : member.value.asArray()) {
      const Value* entryRank = entry.find(chrome::kRank);
      if (entryRank == nullptr || entryRank->kind() != Value::Kind::Int ||
          entryRank->asInt() != rank) {
        continue;
      }
      for (const char* part : {"header", "footer"}) {
        const Value* metadata = entry.find(part);
        if (metadata == nullptr || metadata->kind() != Value::Kind::Object) continue;
        own.insert(own.end(), metadata->asObject().begin(), metadata->asObject().end());
      }
    }
  }
  return own;
}

// The ranks the merged footer lists.
std::vector<int64_t> ranksListed(const Metadata& mergedFooter) {
  std::vector<int64_t> ranks;
  for (const Value::Member& member : mergedFooter) {
    if (member.key != chrome::kMergeFooter || member.value.kind() != Value::Kind::Array) continue;
    for (const Value& entry : member.value.asArray()) {
      const Value* rank = entry.find(chrome::kRank);
      if (rank != nullptr && rank->kind() == Value::Kind::Int) ranks.push_back(rank->asInt());
    }
  }
  return ranks;
}

}  // namespace

RankedCollector::RankedCollector(std::string path, ReadBudget& budget)
    : path_(std::move(path)), budget_(budget) {}

void RankedCollector::begin(const TraceHeader& header) {
  merged_ = isMergedHeader(header);
  header_.traceName = header.traceName;
  header_.baseTimeNs = header.baseTimeNs;
  if (!merged_) {
    whole_ = std::make_unique<TraceCollector>(path_, budget_);
    if (keepCriticalPathEvents_) whole_->keepCriticalPathEvents();
    whole_->begin(header);
  }
}

TraceCollector& RankedCollector::rankCollector(int64_t rank) {
  auto found = ranks_.find(rank);
  if (found != ranks_.end()) return *found->second;
  // Each rank collects on its own: a file that claims to be merged and spreads its events
  // over more ranks than a merge writes would hold a collector per pid range.
  if (ranks_.size() == static_cast<std::size_t>(kMaxMergedRanks)) {
    throw Error(fmt::format(
        "{}: says it is a merged trace, but its processes fall in more than {} ranks' pid "
        "ranges, which `kinetrace merge` never writes",
        path_, kMaxMergedRanks));
  }
  std::unique_ptr<TraceCollector>& collector = ranks_[rank];
  {
    collector = std::make_unique<TraceCollector>(path_, budget_);  // the report says the rank
    if (keepCriticalPathEvents_) collector->keepCriticalPathEvents();
    // The rank is the one its pids say: the merge placed each rank's processes by it.
    TraceHeader header = header_;
    header.metadata.push_back({chrome::kDistributedInfo, Value::object({{chrome::kRank, rank}})});
    collector->begin(header);
  }
  return *collector;
}

void RankedCollector::write(const Event& event) {
  if (!merged_) {
    whole_->write(event);
    return;
  }
  const int64_t rank = rankOfPid(event.pid);
  Event own = event;
  own.pid = event.pid - rank * kMergedPidStride;  // the pid in the rank's own trace
  rankCollector(rank).write(own);
}

void RankedCollector::end(const Metadata& footer) {
  if (!merged_) {
    whole_->end(footer);
    return;
  }
  for (const int64_t rank : ranksListed(footer)) rankCollector(rank);
  for (auto& [rank, collector] : ranks_) collector->end(ownMetadataOf(footer, rank));
}

std::vector<CollectedTrace> RankedCollector::take() {
  std::vector<CollectedTrace> traces;
  if (whole_) traces.push_back(whole_->take());
  for (auto& [rank, collector] : ranks_) traces.push_back(collector->take());
  return traces;
}

}  // namespace kinetrace::detail
