#include "analysis/passes/annotation_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/passes/analysis_common.h"

namespace kinetrace::detail::passes {
namespace {

struct SpanByStreamThenStart {
  bool operator()(const CollectedGpuAnnotation& a, const CollectedGpuAnnotation& b) const {
    return std::tie(a.device, a.stream, a.startNs, a.sequence) <
           std::tie(b.device, b.stream, b.startNs, b.sequence);
  }
};

// Outer ranges first: by thread, then start, the longer first.
struct RangeByThreadThenStart {
  bool operator()(const CollectedRange& a, const CollectedRange& b) const {
    return std::tie(a.tid, a.startNs, b.endNs, a.name) <
           std::tie(b.tid, b.startNs, a.endNs, b.name);
  }
};

int64_t addCapped(int64_t sum, int64_t ns) {
  return ns > 0 && sum > INT64_MAX - ns ? INT64_MAX : sum + ns;
}

}  // namespace

bool AnnotationPass::ByStreamThenStart::operator()(const OnStream& a, const OnStream& b) const {
  return std::tie(a.device, a.stream, a.startNs, a.sequence) <
         std::tie(b.device, b.stream, b.startNs, b.sequence);
}

bool AnnotationPass::ByThreadThenStart::operator()(const OnThread& a, const OnThread& b) const {
  return std::tie(a.tid, a.startNs, a.sequence) < std::tie(b.tid, b.startNs, b.sequence);
}

AnnotationPass::AnnotationPass(const PassContext& context)
    : context_(context),
      operations_(context.budget(), kAnalysisLists, context.trace.listBytes),
      calls_(context.budget(), kAnalysisLists, context.trace.listBytes) {}

void AnnotationPass::add(const JoinedOp& op) {
  ++count_;
  gpuNs_ = addCapped(gpuNs_, op.endNs - op.startNs);
  operations_.add({op.device, op.stream, op.startNs, op.endNs, op.sequence});
  if (op.hasCall) {
    calls_.add({op.callTid, op.callStartNs, op.callEndNs, op.endNs - op.startNs, op.sequence});
  }
}

void AnnotationPass::finish(RankReport& report) {
  AnnotationReport& out = report.annotations;
  out = AnnotationReport{};
  out.operations = count_;
  out.gpuNs = gpuNs_;
  ExternalSorter<Credited, ByName> credits(context_.budget(), kAnalysisLists,
                                           context_.trace.listBytes);
  byGpuSpans(credits, out);
  byHostRanges(credits, out);
  const bool spans = context_.trace.gpuAnnotations.size() > 0;
  Credit chosen = Credit::ByHostRange;
  if (byGpuSpan_ > 0 || (byHostRange_ == 0 && spans)) chosen = Credit::ByGpuSpan;
  if (chosen == Credit::ByGpuSpan) {
    out.attributedBy = "gpu_user_annotation";
    out.attributedOperations = byGpuSpan_;
    out.attributedNs = byGpuSpanNs_;
  } else if (byHostRange_ > 0) {
    out.attributedBy = "host ranges";
    out.attributedOperations = byHostRange_;
    out.attributedNs = byHostRangeNs_;
  }
  table(credits, chosen, out);
}

// Each operation to the shortest span overlapping it on its stream. The operations and the
// spans are read by stream and start together; a span that ended before an operation started
// can take no later one, and goes.
void AnnotationPass::byGpuSpans(ExternalSorter<Credited, ByName>& credits, AnnotationReport& out) {
  ExternalSorter<CollectedGpuAnnotation, SpanByStreamThenStart> spans(
      context_.budget(), kAnalysisLists, context_.trace.listBytes);
  context_.trace.gpuAnnotations.forEach([&](const CollectedGpuAnnotation& span) {
    credits.add({span.name, Credit::Span, span.endNs - span.startNs});
    spans.add(span);
  });
  spans.sort();
  std::vector<CollectedGpuAnnotation> open;
  open.reserve(kMostOpen);
  std::optional<std::pair<int64_t, int64_t>> stream;
  operations_.drain([&](const OnStream& op) {
    const std::pair<int64_t, int64_t> at{op.device, op.stream};
    if (stream != at) {
      stream = at;
      open.clear();
    }
    auto ended = [&op](const CollectedGpuAnnotation& span) { return span.endNs <= op.startNs; };
    for (; !spans.done(); spans.pop()) {
      const CollectedGpuAnnotation& span = spans.front();
      const std::pair<int64_t, int64_t> on{span.device, span.stream};
      if (on > at || (on == at && span.startNs >= op.endNs)) break;
      if (on < at) continue;
      if (open.size() == kMostOpen)
        open.erase(std::remove_if(open.begin(), open.end(), ended), open.end());
      if (open.size() == kMostOpen) {
        ++out.leftOut[fmt::format("GPU annotations overlapping more than {} others on a stream",
                                  kMostOpen)];
        continue;
      }
      open.push_back(span);
    }
    open.erase(std::remove_if(open.begin(), open.end(), ended), open.end());
    const CollectedGpuAnnotation* shortest = nullptr;
    for (const CollectedGpuAnnotation& span : open) {
      if (span.startNs >= op.endNs || span.endNs <= op.startNs) continue;
      const int64_t length = span.endNs - span.startNs;
      if (shortest == nullptr || length < shortest->endNs - shortest->startNs ||
          (length == shortest->endNs - shortest->startNs && span.sequence > shortest->sequence)) {
        shortest = &span;
      }
    }
    if (shortest == nullptr) return;
    credits.add({shortest->name, Credit::ByGpuSpan, op.endNs - op.startNs});
    ++byGpuSpan_;
    byGpuSpanNs_ = addCapped(byGpuSpanNs_, op.endNs - op.startNs);
  });
  while (!spans.done()) spans.pop();
}

// Each operation to the innermost annotation range around its launch call, on its thread:
// the ranges open at the call, outermost first, as a stack.
void AnnotationPass::byHostRanges(ExternalSorter<Credited, ByName>& credits,
                                  AnnotationReport& out) {
  ExternalSorter<CollectedRange, RangeByThreadThenStart> ranges(context_.budget(), kAnalysisLists,
                                                                context_.trace.listBytes);
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) {
    if (range.annotation()) ranges.add(range);
  });
  ranges.sort();
  std::vector<CollectedRange> open;
  open.reserve(kMostOpen);
  std::optional<int64_t> thread;
  calls_.drain([&](const OnThread& call) {
    if (thread != call.tid) {
      thread = call.tid;
      open.clear();
    }
    for (; !ranges.done(); ranges.pop()) {
      const CollectedRange& range = ranges.front();
      if (range.tid > call.tid || (range.tid == call.tid && range.startNs > call.startNs)) break;
      if (range.tid < call.tid) continue;
      while (!open.empty() && open.back().endNs <= range.startNs) open.pop_back();
      if (open.size() == kMostOpen) {
        ++out.leftOut[fmt::format("annotation ranges nested more than {} deep", kMostOpen)];
        continue;
      }
      open.push_back(range);
    }
    while (!open.empty() && open.back().endNs <= call.startNs) open.pop_back();
    bool annotated = false;
    for (auto inner = open.rbegin(); inner != open.rend(); ++inner) {
      if (inner->endNs < call.endNs) continue;  // ends inside the call: not around it
      const bool module = isModule(inner->name);
      if (!annotated) {
        credits.add({inner->name, Credit::ByHostRange, call.operationNs});
        ++byHostRange_;
        byHostRangeNs_ = addCapped(byHostRangeNs_, call.operationNs);
        annotated = true;
      }
      if (module) {
        credits.add({inner->name, Credit::ByModule, call.operationNs});
        return;
      }
    }
  });
  while (!ranges.done()) ranges.pop();
}

bool AnnotationPass::isModule(uint32_t name) const {
  return context_.trace.name(name).rfind("nn.Module: ", 0) == 0;
}

// Each name's credits summed; the top options.top by the GPU time attributed the chosen way,
// then by span time; and the modules by their own GPU time. Names are copied for the rows
// kept only.
void AnnotationPass::table(ExternalSorter<Credited, ByName>& credits, Credit chosen,
                           AnnotationReport& out) {
  struct Tally {
    uint32_t name = 0;
    AnnotationRow row;
  };
  const CollectedTrace& trace = context_.trace;
  auto before = [&trace](const Tally& a, const Tally& b) {
    if (a.row.gpuNs != b.row.gpuNs) return a.row.gpuNs > b.row.gpuNs;
    if (a.row.spanNs != b.row.spanNs) return a.row.spanNs > b.row.spanNs;
    return trace.name(a.name) < trace.name(b.name);
  };
  TopN<Tally, decltype(before)> top(context_.options.top, before);
  TopN<Tally, decltype(before)> modules(context_.options.top, before);
  std::optional<Tally> tally;
  std::optional<Tally> module;  // the same name's credits as a module
  auto close = [&]() {
    if (module && module->row.operations > 0) {
      ++out.moduleCount;
      modules.add(*module);
    }
    module.reset();
    if (!tally || (tally->row.operations == 0 && tally->row.spans == 0)) return;
    ++out.annotations;
    top.add(*tally);
  };
  credits.drain([&](const Credited& credit) {
    if (!tally || tally->name != credit.name) {
      close();
      tally.emplace();
      tally->name = credit.name;
    }
    AnnotationRow& row = tally->row;
    if (credit.credit == Credit::Span) {
      row.spanMinNs = row.spans == 0 ? credit.ns : std::min(row.spanMinNs, credit.ns);
      row.spanMaxNs = row.spans == 0 ? credit.ns : std::max(row.spanMaxNs, credit.ns);
      ++row.spans;
      row.spanNs = addCapped(row.spanNs, credit.ns);
    } else if (credit.credit == Credit::ByModule) {
      if (!module) module.emplace(Tally{credit.name, {}});
      ++module->row.operations;
      module->row.gpuNs = addCapped(module->row.gpuNs, credit.ns);
    } else if (credit.credit == chosen) {
      ++row.operations;
      row.gpuNs = addCapped(row.gpuNs, credit.ns);
    }
  });
  close();
  auto keep = [&](TopN<Tally, decltype(before)>& from, std::vector<AnnotationRow>& to) {
    std::vector<Tally> rows = from.take();
    std::sort(rows.begin(), rows.end(), before);
    for (Tally& kept : rows) {
      kept.row.name = context_.keptName(kept.name);
      to.push_back(std::move(kept.row));
    }
  };
  keep(top, out.rows);
  keep(modules, out.modules);
}

}  // namespace kinetrace::detail::passes
