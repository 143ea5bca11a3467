#include "analysis/trace_merge.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <utility>

#include "kinetrace/error.h"
#include "output/nccl_kernel_name.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

// Pairings within this many collectives of each other are tried.
constexpr int64_t kMaxPairingShift = 64;
// Shifts whose differences spread by less than this are taken as agreeing equally well:
// NCCL kernels end within microseconds of each other across ranks.
constexpr int64_t kSpreadQuantumNs = 50'000;

// Times from a hostile trace may sit at the ends of int64: differences and shifts saturate
// rather than wrap (a wrapped shift moves a rank by centuries the other way).
int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}
int64_t saturatingAbs(int64_t a) {
  return a == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max()
                                                  : std::llabs(a);
}

int64_t medianOf(std::vector<int64_t> values) {
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

std::optional<int64_t> integerValue(const Value& value) {
  if (value.kind() == Value::Kind::Int) return value.asInt();
  if (value.kind() == Value::Kind::Uint &&
      value.asUint() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(value.asUint());
  }
  return std::nullopt;
}

constexpr const char* kCollectives = "NCCL collectives";
constexpr const char* kProcesses = "processes";
constexpr const char* kRankMetadata = "the ranks' metadata";

std::size_t heapBytesOf(const std::string& text) {
  return text.capacity() > 15 ? text.capacity() + 1 + kAllocationOverheadBytes : 0;
}

// Pass 1's sink: the trace's rank, its NCCL collectives and the span of its events. What
// it keeps is taken from the budget into `held`.
class RankScan final : public Sink {
 public:
  explicit RankScan(ReadBudget& budget) : held(std::make_shared<BudgetHold>(budget)) {}

  std::optional<int64_t> rank;
  int64_t baseTimeNs = 0;
  bool hasEvents = false;
  int64_t firstNs = 0;
  int64_t lastNs = 0;
  std::vector<CollectiveEnd> collectives;
  Value deviceProperties;
  std::shared_ptr<BudgetHold> held;

  void begin(const TraceHeader& header) override {
    baseTimeNs = header.baseTimeNs;
    readRank(header.metadata);
  }
  void write(const Event& event) override {
    const int64_t end = event.phase == Phase::Complete
                            ? saturatingAdd(event.timestampNs, event.durationNs)
                            : event.timestampNs;
    firstNs = hasEvents ? std::min(firstNs, event.timestampNs) : event.timestampNs;
    lastNs = hasEvents ? std::max(lastNs, end) : end;
    hasEvents = true;
    if (event.phase != Phase::Complete || event.category != chrome::kCatKernel) return;
    if (std::optional<std::string> kind = ncclCollectiveKind(event.name)) {
      if (collectives.size() == collectives.capacity()) {
        held->take(std::max<std::size_t>(collectives.capacity(), 8) * sizeof(CollectiveEnd),
                   kCollectives);
      }
      held->take(heapBytesOf(*kind), kCollectives);
      collectives.push_back({std::move(*kind), end});
    }
  }
  // A footer's distributedInfo is the later word: torch.profiler adds its own while the trace
  // is recorded, after the header was written.
  void end(const Metadata& footer) override { readRank(footer); }

 private:
  void readRank(const Metadata& metadata) {
    for (const Value::Member& member : metadata) {
      if (member.key == chrome::kDeviceProperties) {
        held->take(footprintOf(member.value), kRankMetadata);
        deviceProperties = member.value;
      }
      if (member.key != chrome::kDistributedInfo) continue;
      if (const Value* value = member.value.find(chrome::kRank)) {
        if (std::optional<int64_t> found = integerValue(*value)) rank = found;
      }
    }
  }
};

// Pass 2's sink: one rank's events, moved to its processes, flow ids and clock, into the
// merged output.
class RankWriter final : public Sink {
 public:
  // `namesAtNs`: when the process names it adds stand (the merged trace's base time).
  RankWriter(const RankPlacement& placement, Sink& out, ReadBudget& budget, int64_t namesAtNs)
      : placement_(placement),
        out_(out),
        namesAtNs_(namesAtNs),
        metadataHold_(budget),
        pids_(std::less<int64_t>(), BudgetAllocator<char>(budget, kProcesses)),
        named_(std::less<int64_t>(), BudgetAllocator<int64_t>(budget, kProcesses)) {}

  // The rank's own metadata, for the merged trace's footer; counted while kept.
  Metadata header;
  Metadata footer;
  uint64_t addedNames = 0;

  void begin(const TraceHeader& h) override {
    metadataHold_.take(footprintOf(h.metadata), kRankMetadata);
    header = h.metadata;
  }
  void end(const Metadata& f) override {
    metadataHold_.take(footprintOf(f), kRankMetadata);
    footer = f;
    nameUnnamedProcesses();
  }

  void write(const Event& event) override {
    Event moved = event;
    moved.pid = pidOf(event.pid);
    if (__builtin_add_overflow(event.timestampNs, placement_.offsetNs, &moved.timestampNs)) {
      throw Error(fmt::format(
          "{}: the event \"{}\" at {} ns, shifted by {} ns to align the rank, falls out of the "
          "range of times in nanoseconds",
          placement_.path, event.name, event.timestampNs, placement_.offsetNs));
    }
    if (event.phase == Phase::FlowStart || event.phase == Phase::FlowEnd) {
      moved.flowId = flowIdOf(event.flowId);
    }
    if (event.phase == Phase::Metadata && event.name == chrome::kProcessName) {
      writeProcessName(moved, event.pid);
      return;
    }
    out_.write(moved);
  }

 private:
  int64_t pidOf(int64_t pid) {
    auto found = pids_.find(pid);
    if (found != pids_.end()) return found->second;
    // A pid that does not fit below the stride (none does on Linux, whose pids stay under
    // 2^22) is numbered from the top of the rank's range down.
    const int64_t base = placement_.rank * kMergedPidStride;
    const int64_t merged = pid >= 0 && pid < kMergedPidStride - kMaxOddPids
                               ? base + pid
                               : base + kMergedPidStride - 1 - oddPids_++;
    if (oddPids_ > kMaxOddPids) {
      throw Error(fmt::format("{}: more than {} process ids outside 0..{}; cannot merge it",
                              placement_.path, kMaxOddPids, kMergedPidStride - kMaxOddPids));
    }
    pids_.emplace(pid, merged);
    return merged;
  }

  // Flow ids are unique within a trace (kinetrace and torch.profiler use correlation ids),
  // not across ranks: each rank's get its own residue.
  uint64_t flowIdOf(uint64_t id) const {
    const auto ranks = static_cast<uint64_t>(kMaxMergedRanks);
    const auto rank = static_cast<uint64_t>(placement_.rank);
    if (id <= (std::numeric_limits<uint64_t>::max() - rank) / ranks) return id * ranks + rank;
    return id ^ (rank << 56);  // ids this large are hashes already
  }

  void writeProcessName(Event& event, int64_t originalPid) {
    std::vector<Arg> args(event.args, event.args + event.argCount);
    std::string name;
    for (Arg& arg : args) {
      if (arg.key != chrome::kNamingName) continue;
      const auto* text = std::get_if<std::string_view>(&arg.value);
      name = fmt::format("rank {}: {}", placement_.rank,
                         text != nullptr ? *text : std::string_view("?"));
      arg.value = std::string_view(name);
    }
    event.args = args.data();
    event.argCount = args.size();
    named_.insert(originalPid);
    out_.write(event);
  }

  // Every process of the rank gets a name that says which rank it belongs to.
  void nameUnnamedProcesses() {
    for (const auto& [pid, merged] : pids_) {
      if (named_.count(pid) != 0) continue;
      const std::string name = fmt::format("rank {}: pid {}", placement_.rank, pid);
      const Arg arg{chrome::kNamingName, std::string_view(name)};
      Event event;
      event.phase = Phase::Metadata;
      event.name = chrome::kProcessName;
      event.pid = merged;
      event.timestampNs = namesAtNs_;
      event.args = &arg;
      event.argCount = 1;
      out_.write(event);
      ++addedNames;
    }
  }

  static constexpr int64_t kMaxOddPids = 1000;
  const RankPlacement& placement_;
  Sink& out_;
  int64_t namesAtNs_;
  BudgetHold metadataHold_;
  // Ordered: the names written at the end come in pid order.
  BudgetMap<int64_t, int64_t> pids_;
  BudgetSet<int64_t> named_;
  int64_t oddPids_ = 0;
};

// Wide enough for any sum or difference of two int64 times (GCC and Clang's own type).
__extension__ typedef __int128 WideNs;

// Whether every event of the plan lies where the merged trace can hold it (trace_merge.h),
// after its rank's shift; throws kinetrace::Error naming the rank that does not.
void checkMergedSpan(const std::vector<RankPlacement>& plan, int64_t baseTimeNs) {
  const RankPlacement* earliest = nullptr;
  for (const RankPlacement& p : plan) {
    int64_t shifted = 0;
    if (!__builtin_add_overflow(p.baseTimeNs, p.offsetNs, &shifted) && shifted == baseTimeNs) {
      earliest = &p;
      break;
    }
  }
  for (const RankPlacement& p : plan) {
    if (!p.hasEvents) continue;
    const WideNs first = static_cast<WideNs>(p.firstNs) + p.offsetNs;
    const WideNs last = static_cast<WideNs>(p.lastNs) + p.offsetNs;
    const WideNs after = last - baseTimeNs;
    const WideNs before = static_cast<WideNs>(baseTimeNs) - first;
    if (after <= kMergedMaxAfterBaseNs && before <= kMergedMaxBeforeBaseNs) continue;
    const bool late = after > kMergedMaxAfterBaseNs;
    throw Error(fmt::format(
        "cannot merge {}: its events reach {} ns {} the merged trace's base time ({} ns, {}'s), "
        "and a merged trace holds times up to {} ns after its base time and {} ns before it (a "
        ".pftrace counts from a second before it, a JSON trace in microseconds from it, both "
        "read back as 64-bit nanoseconds); merge traces recorded within about 292 years of "
        "each other, or merge with --no-align if alignment moved it",
        p.path,
        late ? fmt::format("{}", static_cast<uint64_t>(after))
             : fmt::format("{}", static_cast<uint64_t>(before)),
        late ? "after" : "before", baseTimeNs,
        earliest != nullptr ? earliest->path : "the earliest rank", kMergedMaxAfterBaseNs,
        kMergedMaxBeforeBaseNs));
  }
}

}  // namespace

std::optional<std::string> ncclCollectiveKind(std::string_view kernelName) {
  const std::optional<NcclKernelName> nccl = parseNcclKernelName(kernelName);
  if (!nccl || !nccl->collective) return std::nullopt;  // SendRecv, Generic and the like
  return std::string(nccl->operation);
}

std::optional<Alignment> alignCollectives(const std::vector<CollectiveEnd>& reference,
                                          const std::vector<CollectiveEnd>& other) {
  if (reference.empty() || other.empty()) return std::nullopt;
  const auto referenceCount = static_cast<int64_t>(reference.size());
  const auto otherCount = static_cast<int64_t>(other.size());
  // Enough pairs to trust a shift: half of the shorter sequence.
  const int64_t needed = std::max<int64_t>(1, std::min(referenceCount, otherCount) / 2);

  std::optional<Alignment> best;
  std::tuple<int64_t, int64_t, int64_t> bestScore;  // spread (quantised), |offset|, -pairs
  std::vector<int64_t> differences;
  for (int64_t shift = -std::min(kMaxPairingShift, referenceCount - 1);
       shift <= std::min(kMaxPairingShift, otherCount - 1); ++shift) {
    differences.clear();
    for (int64_t i = std::max<int64_t>(0, -shift); i < referenceCount && i + shift < otherCount;
         ++i) {
      const CollectiveEnd& a = reference[static_cast<std::size_t>(i)];
      const CollectiveEnd& b = other[static_cast<std::size_t>(i + shift)];
      int64_t difference = 0;
      // Ends so far apart that their difference overflows pair with nothing.
      if (a.kind == b.kind && !__builtin_sub_overflow(a.endNs, b.endNs, &difference)) {
        differences.push_back(difference);
      }
    }
    if (static_cast<int64_t>(differences.size()) < needed) continue;
    const int64_t offset = medianOf(differences);
    std::vector<int64_t> residuals;
    residuals.reserve(differences.size());
    for (int64_t d : differences) residuals.push_back(saturatingAbs(saturatingAdd(d, -offset)));
    // How well the pairs agree: the 90th percentile of the residuals. The median is not
    // enough: pairing each collective with its neighbour in a step of evenly spaced ones
    // leaves most pairs agreeing and only those across steps apart.
    std::sort(residuals.begin(), residuals.end());
    const int64_t spread = residuals[residuals.size() * 9 / 10];
    const auto score = std::make_tuple(spread / kSpreadQuantumNs, saturatingAbs(offset),
                                       -static_cast<int64_t>(differences.size()));
    if (!best || score < bestScore) {
      bestScore = score;
      best =
          Alignment{offset, differences.size(), residuals[residuals.size() / 2], residuals.back()};
    }
  }
  return best;
}

std::vector<RankPlacement> planMerge(const std::vector<std::string>& paths,
                                     const MergeOptions& options, ReadBudget& budget,
                                     const ReadProgress& progress) {
  if (paths.empty()) throw Error("no traces to merge");
  if (static_cast<int64_t>(paths.size()) > kMaxMergedRanks) {
    throw Error(fmt::format("{} traces to merge; one merged trace takes at most {} ranks",
                            paths.size(), kMaxMergedRanks));
  }
  for (const std::string& path : paths) {
    // Two passes: an input that cannot be read twice (a pipe) is refused before either.
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode)) {
      throw Error(fmt::format(
          "cannot merge {}: it is not a regular file (a pipe?), and merge reads each input "
          "twice; save it to a file first",
          path));
    }
  }
  std::vector<RankPlacement> plan;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    RankScan scan(budget);
    readTraceFile(paths[i], scan, paths[i], budget, progress);
    RankPlacement placement;
    placement.path = paths[i];
    placement.rankFromTrace = scan.rank.has_value();
    placement.baseTimeNs = scan.baseTimeNs;
    placement.hasEvents = scan.hasEvents;
    placement.firstNs = scan.firstNs;
    placement.lastNs = scan.lastNs;
    placement.held = std::move(scan.held);
    placement.rank = scan.rank.value_or(static_cast<int64_t>(i));
    if (placement.rank < 0 || placement.rank >= kMaxMergedRanks) {
      throw Error(fmt::format("{}: rank {} is outside 0..{}, the ranks a merged trace takes",
                              paths[i], placement.rank, kMaxMergedRanks - 1));
    }
    std::sort(scan.collectives.begin(), scan.collectives.end(),
              [](const CollectiveEnd& a, const CollectiveEnd& b) { return a.endNs < b.endNs; });
    placement.collectives = std::move(scan.collectives);
    placement.deviceProperties = std::move(scan.deviceProperties);
    plan.push_back(std::move(placement));
  }
  std::sort(plan.begin(), plan.end(),
            [](const RankPlacement& a, const RankPlacement& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < plan.size(); ++i) {
    if (plan[i].rank == plan[i - 1].rank) {
      throw Error(fmt::format("{} and {} are both rank {}; merge takes one trace per rank",
                              plan[i - 1].path, plan[i].path, plan[i].rank));
    }
  }

  const RankPlacement& reference = plan.front();
  for (RankPlacement& placement : plan) {
    if (!options.alignOnCollectives) {
      placement.note = "times as recorded (no alignment asked for)";
    } else if (&placement == &reference) {
      placement.note = "the reference";
    } else if (reference.collectives.empty()) {
      placement.note = "times as recorded: the reference rank has no NCCL collectives";
    } else if (placement.collectives.empty()) {
      placement.note = "times as recorded: no NCCL collectives to align on";
    } else if (auto alignment = [&] {
                 // Its differences and residuals, for each shift in turn.
                 BudgetHold pairing(budget);
                 pairing.take(
                     2 * sizeof(int64_t) *
                         std::min(reference.collectives.size(), placement.collectives.size()),
                     kCollectives);
                 return alignCollectives(reference.collectives, placement.collectives);
               }()) {
      placement.offsetNs = alignment->offsetNs;
      placement.collectivesMatched = alignment->matched;
      placement.residualMedianNs = alignment->residualMedianNs;
      placement.residualMaxNs = alignment->residualMaxNs;
      placement.note = fmt::format("aligned on {} NCCL collectives", alignment->matched);
    } else {
      placement.note = "times as recorded: its collectives do not pair with the reference's";
    }
  }
  return plan;
}

MergeReport writeMerged(const std::vector<RankPlacement>& plan, Sink& out,
                        const std::string& traceName, ReadBudget& budget,
                        const ReadProgress& progress) {
  if (plan.empty()) throw Error("no traces to merge");
  TraceHeader header;
  header.traceName = traceName;
  header.baseTimeNs = std::numeric_limits<int64_t>::max();
  for (const RankPlacement& placement : plan) {
    int64_t shifted = 0;
    if (__builtin_add_overflow(placement.baseTimeNs, placement.offsetNs, &shifted)) {
      throw Error(fmt::format(
          "{}: its base time {} ns, shifted by {} ns to align the rank, falls out of the range "
          "of times in nanoseconds",
          placement.path, placement.baseTimeNs, placement.offsetNs));
    }
    header.baseTimeNs = std::min(header.baseTimeNs, shifted);
  }
  checkMergedSpan(plan, header.baseTimeNs);
  // The header's metadata, and each rank's own for the footer, kept until the end.
  BudgetHold kept(budget);
  header.metadata.push_back({chrome::kSchemaVersion, 1});
  // HTA reads a trace's rank from here; the ranks themselves are in the footer.
  header.metadata.push_back(
      {chrome::kDistributedInfo,
       Value::object({{chrome::kRank, plan.front().rank},
                      {chrome::kWorldSize, static_cast<int64_t>(plan.size())},
                      {chrome::kMergedRanks, static_cast<int64_t>(plan.size())}})});
  // Every rank's GPUs, as HTA and Perfetto look for them: one list, each GPU saying its rank
  // (its "id" stays the rank's device index; its process is rank * stride + id).
  Value::Array devices;
  for (const RankPlacement& placement : plan) {
    if (placement.deviceProperties.kind() != Value::Kind::Array) continue;
    kept.take(footprintOf(placement.deviceProperties), kRankMetadata);
    for (const Value& device : placement.deviceProperties.asArray()) {
      if (device.kind() != Value::Kind::Object) {
        devices.push_back(device);
        continue;
      }
      Value::Object members = device.asObject();
      members.push_back({chrome::kRank, placement.rank});
      devices.push_back(Value(std::move(members)));
    }
  }
  if (!devices.empty())
    header.metadata.push_back({chrome::kDeviceProperties, Value(std::move(devices))});
  out.begin(header);

  MergeReport report;
  std::vector<Value> ranks;
  for (const RankPlacement& placement : plan) {
    RankWriter writer(placement, out, budget, header.baseTimeNs);
    const ReadReport read = readTraceFile(placement.path, writer, traceName, budget, progress);
    report.events += read.events;
    report.addedNames += writer.addedNames;
    kept.take(footprintOf(writer.header) + footprintOf(writer.footer), kRankMetadata);
    for (const auto& [why, count] : read.skipped) report.skipped[why] += count;
    ranks.push_back(Value::object({
        {chrome::kRank, placement.rank},
        {"path", placement.path},
        {"rank_from",
         placement.rankFromTrace ? chrome::kDistributedInfo : "position on the command line"},
        {"offset_ns", placement.offsetNs},
        {"collectives_matched", static_cast<int64_t>(placement.collectivesMatched)},
        {"residual_skew_median_ns", placement.residualMedianNs},
        {"residual_skew_max_ns", placement.residualMaxNs},
        {"alignment", placement.note},
        {"header", Value(std::move(writer.header))},
        {"footer", Value(std::move(writer.footer))},
    }));
  }
  Metadata footer;
  footer.push_back({chrome::kMergeFooter, Value(Value::Array(std::move(ranks)))});
  out.end(footer);
  return report;
}

}  // namespace kinetrace::detail
