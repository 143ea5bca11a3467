#include "analysis/passes/operator_sequences.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/passes/analysis_common.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail::passes {
namespace {

constexpr std::string_view kBackwardAnnotation = "## backward ##";
// Ranges nested deeper on a thread than this are left out (and counted).
constexpr std::size_t kDeepestRange = 256;

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

int64_t addCapped(int64_t sum, int64_t ns) {
  return ns > 0 && sum > INT64_MAX - ns ? INT64_MAX : sum + ns;
}

// FNV-1a over a sequence's name ids, one after another.
uint64_t hashed(uint64_t hash, uint32_t name) {
  for (int byte = 0; byte < 4; ++byte) {
    hash ^= (name >> (8 * byte)) & 0xFF;
    hash *= 1099511628211ULL;
  }
  return hash;
}
constexpr uint64_t kHashStart = 14695981039346656037ULL;

}  // namespace

bool OperatorSequences::RangeByThreadThenStart::operator()(const Range& a, const Range& b) const {
  return std::tie(a.range.tid, a.range.startNs, b.range.endNs, a.index) <
         std::tie(b.range.tid, b.range.startNs, a.range.endNs, b.index);
}

bool OperatorSequences::OpByThreadThenCall::operator()(const SequenceOp& a,
                                                       const SequenceOp& b) const {
  return std::tie(a.callTid, a.callStartNs, a.sequence) <
         std::tie(b.callTid, b.callStartNs, b.sequence);
}

bool OperatorSequences::ByRootThenStart::operator()(const Under& a, const Under& b) const {
  return std::tie(a.root, a.startNs, a.sequence) < std::tie(b.root, b.startNs, b.sequence);
}

bool OperatorSequences::BySequence::operator()(const Occurrence& a, const Occurrence& b) const {
  return std::tie(a.operatorName, a.length, a.hash, a.names) <
         std::tie(b.operatorName, b.length, b.hash, b.names);
}

OperatorSequences::OperatorSequences(const PassContext& context) : context_(context) {
  const std::string& wanted = context.options.sequenceOperator;
  const std::size_t names = context.trace.names.size();
  context.working.take(names / 8 + kAllocationOverheadBytes, kAnalysisLists);
  matching_.resize(names);
  for (std::size_t id = 0; id < names; ++id) {
    matching_[id] = context.trace.name(static_cast<uint32_t>(id)).find(wanted) != std::string::npos;
  }
}

bool OperatorSequences::matches(uint32_t name) const {
  return name < matching_.size() && matching_[name];
}

void OperatorSequences::finish(ExternalSorter<SequenceOp, SequenceOpsByStreamThenStart>& ops,
                               KernelSequenceReport& out) {
  ExternalSorter<SequenceOp, OpByThreadThenCall> byThread(context_.budget(), kAnalysisLists,
                                                          context_.trace.listBytes);
  ops.drain([&](const SequenceOp& op) {
    // Operations HTA's tree holds no parent for still have a depth: -1.
    if (!op.hasCall || op.stream <= 0) {
      if (matches(op.name)) leastDepth_ = -1;
      return;
    }
    byThread.add(op);
  });
  context_.trace.gpuAnnotations.forEach([&](const CollectedGpuAnnotation& span) {
    if (matches(span.name)) leastDepth_ = -1;
  });
  threads();
  linkParents();
  ExternalSorter<Under, ByRootThenStart> under(context_.budget(), kAnalysisLists,
                                               context_.trace.listBytes);
  sweep(byThread, under, out);
  if (leastDepth_ < 0) {
    out.noneBecause = fmt::format(
        "a GPU annotation or a GPU operation outside the call tree has a name holding \"{}\": "
        "its depth, -1, is HTA's least, and no operator there has operations",
        context_.options.sequenceOperator);
    return;
  }
  ExternalSorter<Occurrence, BySequence> found(context_.budget(), kAnalysisLists,
                                               context_.trace.listBytes);
  occurrences(under, found);
  table(found, out);
}

// HTA's forward and backward threads: the forward one has ProfilerStep ranges, the backward
// one autograd:: ranges and none; linked only when there is one of each.
void OperatorSequences::threads() {
  enum : uint8_t { kStep = 1, kAutograd = 2 };
  BudgetMap<int64_t, uint8_t> flags(std::less<int64_t>(),
                                    BudgetAllocator<char>(context_.budget(), kAnalysisLists));
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) {
    const std::string_view name = context_.trace.name(range.name);
    uint8_t& f = flags[range.tid];
    if (startsWith(name, chrome::kProfilerStepPrefix)) f |= kStep;
    if (name.find("autograd::") != std::string_view::npos) f |= kAutograd;
  });
  std::vector<int64_t> forward, backward;
  for (const auto& [tid, f] : flags) {
    if (f & kStep) {
      forward.push_back(tid);
    } else if (f & kAutograd) {
      backward.push_back(tid);
    }
  }
  if (forward.size() == 1 && backward.size() == 1) {
    forwardTid_ = forward.front();
    backwardTid_ = backward.front();
  }
}

// The forward thread's "## backward ##" ranges (else its ProfilerSteps), with their depth
// and shallowest candidate: the backward thread's top nodes hang under them.
void OperatorSequences::linkParents() {
  if (!forwardTid_) return;
  ExternalSorter<Range, RangeByThreadThenStart> ranges(context_.budget(), kAnalysisLists,
                                                       context_.trace.listBytes);
  uint64_t index = 0;
  bool backwardAnnotated = false;
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) {
    const uint64_t at = index++;
    if (range.tid != *forwardTid_) return;
    ranges.add({range, at});
    backwardAnnotated |= startsWith(context_.trace.name(range.name), kBackwardAnnotation);
  });
  const std::string_view parentPrefix =
      backwardAnnotated ? kBackwardAnnotation : std::string_view(chrome::kProfilerStepPrefix);
  std::vector<Open> stack;
  ranges.drain([&](const Range& range) {
    while (!stack.empty() && stack.back().range.range.endNs <= range.range.startNs)
      stack.pop_back();
    if (stack.size() == kDeepestRange) return;
    stack.push_back(opened(range, stack, range.range.tid));
    if (!startsWith(context_.trace.name(range.range.name), parentPrefix)) return;
    context_.working.take(sizeof(Parent), kAnalysisLists);
    parents_.push_back(Parent{range.range.startNs, range.range.endNs, stack.back().depth,
                              stack.back().candidate, range.index});
  });
}

std::optional<OperatorSequences::Parent> OperatorSequences::parentOf(int64_t startNs,
                                                                     int64_t endNs) const {
  // The parents by start: those that began by `startNs`, the latest first. They do not
  // overlap in a trace of a training loop; where a hostile one nests them, the first in the
  // trace of the few looked at holds the node, as HTA takes the first.
  constexpr int kLookedAt = 16;
  auto at = std::upper_bound(parents_.begin(), parents_.end(), startNs,
                             [](int64_t start, const Parent& p) { return start < p.startNs; });
  std::optional<Parent> first;
  for (int looked = 0; at != parents_.begin() && looked < kLookedAt; ++looked) {
    const Parent& p = *--at;
    if (endNs <= p.endNs && (!first || p.index < first->index)) first = p;
  }
  return first;
}

// A range opened on a thread's stack: a child of the stack's top, or a top node (under its
// link parent, on the backward thread).
OperatorSequences::Open OperatorSequences::opened(const Range& range,
                                                  const std::vector<Open>& stack,
                                                  int64_t tid) const {
  Open open{range, 0, Candidate{}};
  if (!stack.empty()) {
    open.depth = stack.back().depth + 1;
    open.candidate = stack.back().candidate;
  } else if (backwardTid_ && tid == *backwardTid_) {
    if (const std::optional<Parent> p = parentOf(range.range.startNs, range.range.endNs)) {
      open.depth = p->depth + 1;
      open.candidate = p->candidate;
    }
  }
  if (matches(range.range.name) && open.candidate.depth < 0) {
    open.candidate = Candidate{open.depth, range.index, range.range.name,
                               range.range.endNs - range.range.startNs};
  }
  return open;
}

// Every thread's ranges and launch calls in order: each range's depth, the least depth of a
// range (or operation) whose name holds the operator's, and each operation with its
// shallowest such ancestor.
void OperatorSequences::sweep(ExternalSorter<SequenceOp, OpByThreadThenCall>& ops,
                              ExternalSorter<Under, ByRootThenStart>& under,
                              KernelSequenceReport& out) {
  ExternalSorter<Range, RangeByThreadThenStart> ranges(context_.budget(), kAnalysisLists,
                                                       context_.trace.listBytes);
  uint64_t index = 0;
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) {
    ranges.add({range, index++});
  });
  ranges.sort();
  std::vector<Open> stack;
  std::optional<int64_t> thread;
  auto admit = [&](const Range& range) {
    if (thread != range.range.tid) {
      thread = range.range.tid;
      stack.clear();
    }
    while (!stack.empty() && stack.back().range.range.endNs <= range.range.startNs)
      stack.pop_back();
    if (stack.size() == kDeepestRange) {
      ++out.leftOut[fmt::format("host ranges nested more than {} deep", kDeepestRange)];
      return;
    }
    stack.push_back(opened(range, stack, range.range.tid));
    if (matches(range.range.name)) leastDepth_ = std::min(leastDepth_, stack.back().depth);
  };
  ops.drain([&](const SequenceOp& op) {
    for (; !ranges.done(); ranges.pop()) {
      const Range& range = ranges.front();
      if (range.range.tid > op.callTid ||
          (range.range.tid == op.callTid && range.range.startNs > op.callStartNs))
        break;
      admit(range);
    }
    if (thread != op.callTid) {
      thread = op.callTid;
      stack.clear();
    }
    int64_t callDepth = 0;
    Candidate candidate;
    auto inner = std::find_if(stack.rbegin(), stack.rend(), [&op](const Open& o) {
      return o.range.range.startNs <= op.callStartNs && op.callEndNs <= o.range.range.endNs;
    });
    if (inner != stack.rend()) {
      callDepth = inner->depth + 1;
      candidate = inner->candidate;
    } else if (backwardTid_ && op.callTid == *backwardTid_) {
      if (const std::optional<Parent> p = parentOf(op.callStartNs, op.callEndNs)) {
        callDepth = p->depth + 1;
        candidate = p->candidate;
      }
    }
    if (matches(op.name)) leastDepth_ = std::min(leastDepth_, callDepth + 1);
    if (candidate.depth < 0) return;
    under.add({candidate.index, candidate.depth, candidate.durationNs, op.startNs, op.sequence,
               op.endNs - op.startNs, candidate.name, op.name});
  });
  for (; !ranges.done(); ranges.pop()) admit(ranges.front());
}

// Each operator occurrence at the least depth: its operations' names in start order.
void OperatorSequences::occurrences(ExternalSorter<Under, ByRootThenStart>& under,
                                    ExternalSorter<Occurrence, BySequence>& out) const {
  const uint64_t least = context_.options.sequenceLength;
  std::optional<Occurrence> current;
  std::optional<uint64_t> root;
  auto close = [&]() {
    if (current && current->length >= least) out.add(*current);
  };
  under.drain([&](const Under& u) {
    if (u.rootDepth != leastDepth_) return;
    if (root != u.root) {
      close();
      root = u.root;
      current.emplace();
      current->operatorName = u.rootName;
      current->operatorNs = u.rootNs;
      current->hash = hashed(kHashStart, u.rootName);
    }
    Occurrence& o = *current;
    if (o.length < kNamesKept) o.names[o.length] = u.name;
    ++o.length;
    o.hash = hashed(o.hash, u.name);
    o.gpuNs = addCapped(o.gpuNs, u.ns);
  });
  close();
}

// The sequences counted, in HTA's order: the most frequent first, then by the sequence's
// text; the top options.top kept.
void OperatorSequences::table(ExternalSorter<Occurrence, BySequence>& occurrences,
                              KernelSequenceReport& out) const {
  struct Tally {
    Occurrence key;
    KernelSequenceRow row;
  };
  const CollectedTrace& trace = context_.trace;
  auto before = [&trace](const Tally& a, const Tally& b) {
    if (a.row.count != b.row.count) return a.row.count > b.row.count;
    if (a.key.operatorName != b.key.operatorName)
      return trace.name(a.key.operatorName) < trace.name(b.key.operatorName);
    const uint64_t kept = std::min<uint64_t>({a.key.length, b.key.length, kNamesKept});
    for (uint64_t i = 0; i < kept; ++i) {
      if (a.key.names[i] != b.key.names[i])
        return trace.name(a.key.names[i]) < trace.name(b.key.names[i]);
    }
    return a.key.length < b.key.length;
  };
  TopN<Tally, decltype(before)> top(context_.options.top, before);
  std::optional<Tally> tally;
  auto close = [&]() {
    if (!tally) return;
    ++out.chains;
    out.counted += tally->row.count;
    top.add(std::move(*tally));
  };
  occurrences.drain([&](const Occurrence& o) {
    if (!tally || o.operatorName != tally->key.operatorName || o.length != tally->key.length ||
        o.hash != tally->key.hash) {
      close();
      tally.emplace();
      tally->key = o;
      tally->row.length = o.length;
    }
    ++tally->row.count;
    tally->row.gpuNs = addCapped(tally->row.gpuNs, o.gpuNs);
    tally->row.operatorNs = addCapped(tally->row.operatorNs, o.operatorNs);
  });
  close();
  std::vector<Tally> rows = top.take();
  std::sort(rows.begin(), rows.end(), before);
  for (Tally& kept : rows) {
    for (uint64_t i = 0; i < std::min<uint64_t>(kept.key.length, kNamesKept); ++i)
      kept.row.kernels.push_back(context_.keptName(kept.key.names[i]));
    kept.row.issuer = context_.keptName(kept.key.operatorName);
    out.rows.push_back(std::move(kept.row));
  }
}

}  // namespace kinetrace::detail::passes
