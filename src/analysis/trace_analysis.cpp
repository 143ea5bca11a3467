// One rank's analysis as passes over its collected trace (analysis/passes/pass_context.h),
// and the ranks combined.

#include "analysis/trace_analysis.h"

#include <memory>
#include <utility>

#include "analysis/passes/annotation_pass.h"
#include "analysis/passes/communication_pass.h"
#include "analysis/passes/copy_bandwidth_pass.h"
#include "analysis/passes/critical_path_pass.h"
#include "analysis/passes/full_queue_pass.h"
#include "analysis/passes/host_pass.h"
#include "analysis/passes/kernel_pass.h"
#include "analysis/passes/launch_pass.h"
#include "analysis/passes/memory_pass.h"
#include "analysis/passes/metric_fit_pass.h"
#include "analysis/passes/pass_context.h"
#include "analysis/passes/sequence_pass.h"
#include "analysis/passes/steps_pass.h"
#include "analysis/passes/time_pass.h"

namespace kinetrace::detail {

RankAnalysis analyzeRank(CollectedTrace trace, const AnalysisOptions& options) {
  BudgetHold working(*trace.budget);
  const passes::PassContext context{trace, options, working,
                                    std::make_shared<BudgetHold>(*trace.budget)};
  RankAnalysis out;
  RankReport& report = out.report;
  report.held = context.reportHold;
  report.path = trace.path;
  report.rank = trace.rank;
  report.events = trace.events;

  passes::TimePass time(context);
  passes::KernelPass kernels(context);
  passes::LaunchPass launch(context);
  passes::CommunicationPass communication(context);
  passes::MetricFitPass metricFit(context);
  passes::SequencePass sequences(context);
  passes::AnnotationPass annotations(context);
  passes::FullQueuePass fullQueue(context);
  // In the order the figures need one another: the steps before the device sweep fills in
  // their time; the kernel table and the steps before their bounds; the devices before the
  // queue depths are laid on their timelines.
  passes::StepsPass(context).finish(report);
  passes::joinOperations(trace, [&](const passes::JoinedOp& op) {
    time.add(op);
    kernels.add(op);
    communication.add(op);
    launch.add(op);
    metricFit.add(op);
    sequences.add(op);
    annotations.add(op);
    fullQueue.add(op);
  });
  time.finish(report);
  kernels.finish(report);
  // The GPU-bound pass reads no operations, only the kernels' metric averages, and for
  // kernels shorter than a sample their names' values fitted from all the samples.
  const NameFits fits = metricFit.finish(report);
  analyzeGpuBounds(trace, report, fits);
  launch.finish(report);
  passes::MemoryPass(context).finish(report);
  passes::HostPass(context).finish(report);
  // These read the host ranges (which the host pass and the gap table read too), the GPU
  // annotations and the copies.
  sequences.finish(report);
  annotations.finish(report);
  fullQueue.finish(report);
  passes::CopyBandwidthPass(context).finish(report);
  communication.finish(report);
  out.collectives = communication.collectives();
  passes::CriticalPathPass(context).finish(report);
  return out;
}

RankReport analyzeTrace(CollectedTrace trace, const AnalysisOptions& options) {
  return analyzeRank(std::move(trace), options).report;
}

AnalysisReport combineRanks(std::vector<RankReport> ranks,
                            const std::vector<RankCollectives>& collectives,
                            const AnalysisOptions& options) {
  AnalysisReport report;
  report.ranks = std::move(ranks);
  report.stragglers = passes::stragglers(collectives, options);
  report.findings = findingsOf(report, options);
  return report;
}

AnalysisReport analyzeTraces(std::vector<CollectedTrace> traces, const AnalysisOptions& options) {
  std::vector<RankReport> ranks;
  std::vector<RankCollectives> collectives;
  for (CollectedTrace& trace : traces) {
    RankAnalysis rank = analyzeRank(std::move(trace), options);
    ranks.push_back(std::move(rank.report));
    collectives.push_back(std::move(rank.collectives));
  }
  return combineRanks(std::move(ranks), collectives, options);
}

}  // namespace kinetrace::detail
