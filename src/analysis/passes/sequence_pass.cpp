#include "analysis/passes/sequence_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/passes/analysis_common.h"
#include "analysis/passes/operator_sequences.h"

namespace kinetrace::detail::passes {
namespace {

// Outer ranges first: by thread, then start, the longer first.
struct RangeByThreadThenStart {
  bool operator()(const CollectedRange& a, const CollectedRange& b) const {
    return std::tie(a.tid, a.startNs, b.endNs, a.name) <
           std::tie(b.tid, b.startNs, a.endNs, b.name);
  }
};

// Ranges nested deeper on a thread than this are left out of the issuers (and counted).
constexpr std::size_t kDeepestRange = 256;

int64_t addCapped(int64_t sum, int64_t ns) {
  return ns > 0 && sum > INT64_MAX - ns ? INT64_MAX : sum + ns;
}

}  // namespace

bool SequencePass::ByThreadThenCall::operator()(const Window& a, const Window& b) const {
  return std::tie(a.tid, a.firstCallNs, a.device, a.stream, a.position) <
         std::tie(b.tid, b.firstCallNs, b.device, b.stream, b.position);
}

bool SequencePass::ByChain::operator()(const Window& a, const Window& b) const {
  if (a.names != b.names) return a.names < b.names;
  return std::tie(a.issuer, a.device, a.stream, a.position) <
         std::tie(b.issuer, b.device, b.stream, b.position);
}

SequencePass::SequencePass(const PassContext& context)
    : context_(context), ops_(context.budget(), kAnalysisLists, context.trace.listBytes) {}

void SequencePass::add(const JoinedOp& op) {
  SequenceOp s;
  s.device = op.device;
  s.stream = op.stream;
  s.startNs = op.startNs;
  s.endNs = op.endNs;
  s.callStartNs = op.callStartNs;
  s.callEndNs = op.callEndNs;
  s.callTid = op.callTid;
  s.sequence = op.sequence;
  s.correlationId = op.correlationId;
  s.name = op.name;
  s.kind = op.kind;
  s.hasCall = op.hasCall;
  ops_.add(s);
}

void SequencePass::finish(RankReport& report) {
  KernelSequenceReport& out = report.kernelSequences;
  out = KernelSequenceReport{};
  out.length = std::clamp<std::size_t>(context_.options.sequenceLength, 1,
                                       AnalysisOptions::kMaxSequenceLength);
  if (!context_.options.sequenceOperator.empty()) {
    out.mode = "operator";
    out.operatorName = context_.options.sequenceOperator;
    OperatorSequences(context_).finish(ops_, out);
    return;
  }
  ExternalSorter<Window, ByThreadThenCall> found(context_.budget(), kAnalysisLists,
                                                 context_.trace.listBytes);
  windows(found);
  ExternalSorter<Window, ByChain> chains(context_.budget(), kAnalysisLists,
                                         context_.trace.listBytes);
  issuers(found, chains, out);
  table(chains, out);
}

// Every run of `length` compute kernels back to back on a stream, each with its launch call,
// all launched by one thread: a copy, a memset, an NCCL kernel or a kernel of no known call
// between two kernels breaks the chain (no fusion crosses it).
void SequencePass::windows(ExternalSorter<Window, ByThreadThenCall>& out) {
  const std::size_t length = std::clamp<std::size_t>(context_.options.sequenceLength, 1,
                                                     AnalysisOptions::kMaxSequenceLength);
  std::deque<SequenceOp> run;
  std::optional<std::pair<int64_t, int64_t>> stream;
  uint64_t position = 0;
  ops_.drain([&](const SequenceOp& op) {
    const std::pair<int64_t, int64_t> at{op.device, op.stream};
    if (stream != at) {
      stream = at;
      position = 0;
      run.clear();
    }
    const uint64_t here = position++;
    const bool joins = op.kind == GpuOpKind::Compute && op.hasCall;
    if (!joins || (!run.empty() && run.back().callTid != op.callTid)) run.clear();
    if (!joins) return;
    run.push_back(op);
    if (run.size() < length) return;
    if (run.size() > length) run.pop_front();
    Window w;
    w.tid = op.callTid;
    w.device = op.device;
    w.stream = op.stream;
    w.position = here + 1 - length;
    w.firstCallNs = run.front().callStartNs;
    w.lastCallEndNs = run.front().callEndNs;
    for (std::size_t i = 0; i < length; ++i) {
      const SequenceOp& k = run[i];
      w.names[i] = k.name;
      w.firstCallNs = std::min(w.firstCallNs, k.callStartNs);
      w.lastCallEndNs = std::max(w.lastCallEndNs, k.callEndNs);
      w.gpuNs = addCapped(w.gpuNs, k.endNs - k.startNs);
      // Kernels of one graph launch share its call: it is counted once.
      const bool ownCall =
          i == 0 || k.correlationId == 0 || k.correlationId != run[i - 1].correlationId;
      const int64_t launch = ownCall ? std::max<int64_t>(0, k.callEndNs - k.callStartNs) : 0;
      w.launchNs = addCapped(w.launchNs, launch);
      if (i > 0) {
        w.savedLaunchNs = addCapped(w.savedLaunchNs, launch);
        // A gap counts where the kernel was queued before the one before it ended: the GPU
        // moving from one kernel to the next, which a fused kernel does not do. A gap the
        // GPU spent waiting for the host to launch stays: the host's work is still there.
        if (k.callStartNs <= run[i - 1].endNs) {
          w.gapNs = addCapped(w.gapNs, std::max<int64_t>(0, k.startNs - run[i - 1].endNs));
        }
      }
    }
    out.add(w);
  });
}

// Each window's issuer: the innermost host range on its thread that encloses all its launch
// calls. The windows and the thread's ranges are read by start together; the ranges open at
// a window's first call are a stack, outermost first.
void SequencePass::issuers(ExternalSorter<Window, ByThreadThenCall>& windows,
                           ExternalSorter<Window, ByChain>& out, KernelSequenceReport& report) {
  ExternalSorter<CollectedRange, RangeByThreadThenStart> ranges(context_.budget(), kAnalysisLists,
                                                                context_.trace.listBytes);
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) { ranges.add(range); });
  ranges.sort();
  std::vector<CollectedRange> open;
  std::optional<int64_t> thread;
  windows.drain([&](const Window& found) {
    Window w = found;
    if (thread != w.tid) {
      thread = w.tid;
      open.clear();
    }
    for (; !ranges.done(); ranges.pop()) {
      const CollectedRange& range = ranges.front();
      if (range.tid > w.tid || (range.tid == w.tid && range.startNs > w.firstCallNs)) break;
      if (range.tid < w.tid) continue;
      while (!open.empty() && open.back().endNs <= range.startNs) open.pop_back();
      if (open.size() == kDeepestRange) {
        ++report.leftOut[fmt::format("host ranges nested more than {} deep, as issuers",
                                     kDeepestRange)];
        continue;
      }
      open.push_back(range);
    }
    while (!open.empty() && open.back().endNs <= w.firstCallNs) open.pop_back();
    // Ranges open at the first call but none around the last: the chain crosses ranges (the
    // backward pass's operators, one after another).
    w.issuer = open.empty() ? kNoIssuer : kAcrossRanges;
    for (auto inner = open.rbegin(); inner != open.rend(); ++inner) {
      if (inner->endNs >= w.lastCallEndNs) {
        w.issuer = inner->name;
        break;
      }
    }
    out.add(w);
  });
  while (!ranges.done()) ranges.pop();
}

// Each chain's occurrences, counted where they do not overlap on their stream (a kernel is
// in one occurrence of a chain at most), summed; the top options.top by what fusing would
// save. Names are copied for the rows kept only.
void SequencePass::table(ExternalSorter<Window, ByChain>& chains, KernelSequenceReport& report) {
  const std::size_t length = report.length;
  struct Tally {
    Window key;
    KernelSequenceRow row;
  };
  const CollectedTrace& trace = context_.trace;
  auto before = [&trace, length](const Tally& a, const Tally& b) {
    if (a.row.savedNs != b.row.savedNs) return a.row.savedNs > b.row.savedNs;
    if (a.row.count != b.row.count) return a.row.count > b.row.count;
    for (std::size_t i = 0; i < length; ++i) {
      if (a.key.names[i] != b.key.names[i])
        return trace.name(a.key.names[i]) < trace.name(b.key.names[i]);
    }
    return a.key.issuer < b.key.issuer;
  };
  TopN<Tally, decltype(before)> top(context_.options.top, before);
  std::optional<Tally> tally;
  std::pair<int64_t, int64_t> lastStream;
  uint64_t nextFree = 0;  // the first position past the last occurrence counted
  auto close = [&]() {
    if (!tally) return;
    ++report.chains;
    report.counted += tally->row.count;
    if (tally->row.count >= 2) top.add(std::move(*tally));  // a chain that ran once repeats not
  };
  chains.drain([&](const Window& w) {
    if (!tally || w.names != tally->key.names || w.issuer != tally->key.issuer) {
      close();
      tally.emplace();
      tally->key = w;
      tally->row.length = length;
      lastStream = {w.device, w.stream};
      nextFree = 0;
    }
    const std::pair<int64_t, int64_t> at{w.device, w.stream};
    if (at != lastStream) {
      lastStream = at;
      nextFree = 0;
    }
    if (w.position < nextFree) return;  // overlaps the occurrence counted before it
    nextFree = w.position + length;
    KernelSequenceRow& row = tally->row;
    ++row.count;
    row.gpuNs = addCapped(row.gpuNs, w.gpuNs);
    row.launchNs = addCapped(row.launchNs, w.launchNs);
    row.gapNs = addCapped(row.gapNs, w.gapNs);
    row.savedNs = addCapped(row.savedNs, addCapped(w.savedLaunchNs, w.gapNs));
  });
  close();
  std::vector<Tally> rows = top.take();
  std::sort(rows.begin(), rows.end(), before);
  for (Tally& kept : rows) {
    for (std::size_t i = 0; i < length; ++i)
      kept.row.kernels.push_back(context_.keptName(kept.key.names[i]));
    if (kept.key.issuer == kAcrossRanges) {
      kept.row.acrossRanges = true;
    } else if (kept.key.issuer != kNoIssuer) {
      kept.row.issuer = context_.keptName(kept.key.issuer);
    }
    report.rows.push_back(std::move(kept.row));
  }
}

}  // namespace kinetrace::detail::passes
