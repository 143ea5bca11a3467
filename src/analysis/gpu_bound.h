#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

// What bounds a busy GPU: each kernel's time classed by the GPU hardware metrics sampled
// while it ran (`kinetrace run --gpu-metrics`), from the overlap-weighted averages the
// trace carries in the kernel's args ("SM throughput (%)", "DRAM throughput (%)", ...).
//
// The classes, from the units' throughput as a share of their peak:
//   tensor    the tensor pipe is active at least kLimiterPercent of the time, and at least
//             as much as DRAM is busy: the kernel runs on the tensor cores (a GEMM, an
//             attention). Said before "compute", because the SM throughput of such a kernel
//             is high too (the tensor pipe is one of the SM's units): "tensor" says more
//   memory    DRAM throughput at least kLimiterPercent, and above SM throughput: DRAM
//             bandwidth limits it (copies, elementwise, reductions)
//   compute   SM throughput at least kLimiterPercent (and DRAM below it, or below SM): an
//             SM unit (FMA, ALU, load/store, ...) limits it
//   neither   nothing near its peak: the kernel is bound by latency (memory latency,
//             dependent instructions), by occupancy, or is too small to fill the GPU
//   unknown   the kernel has no averages of SM and DRAM throughput (sampling was off, the
//             kernel ran before the first sample, or those metrics were not asked for)
//
// kLimiterPercent = 60: Nsight Compute's speed-of-light rule calls a unit the limiter
// above about 60% of its peak, and reads both compute and memory throughput below 60% as
// latency-bound; a performance engineer reading this report reads it that way too.

namespace kinetrace::detail {

enum class GpuBound : uint8_t { Memory, Compute, Tensor, Neither, Unknown };
inline constexpr std::size_t kGpuBoundCount = 5;
// In the order of the enum: for tables and the JSON's keys.
inline constexpr std::array<GpuBound, kGpuBoundCount> kGpuBounds = {
    GpuBound::Memory, GpuBound::Compute, GpuBound::Tensor, GpuBound::Neither, GpuBound::Unknown};

// What the reports say of each class, one row each, in the order of the enum: the one place
// its name, colour and advice are chosen.
struct GpuBoundInfo {
  GpuBound bound;
  const char* name;    // "memory": the text's word and the JSON's key
  const char* colour;  // the HTML report's
  const char* advice;  // what helps a kernel of the class ("" for unknown)
};
inline constexpr std::array<GpuBoundInfo, kGpuBoundCount> kGpuBoundInfo = {{
    {GpuBound::Memory, "memory", "#59a14f",
     "DRAM bandwidth limits it: move fewer bytes (fuse elementwise kernels, as torch.compile "
     "does; lower precision; fewer copies)"},
    {GpuBound::Compute, "compute", "#4e79a7",
     "the SMs' pipes limit it: see whether its math can run on the tensor cores (bf16, fp16 "
     "or tf32 matmuls) or be done less often"},
    {GpuBound::Tensor, "tensor", "#b07aa1",
     "it runs on the tensor cores near their peak: only less work (or lower precision) makes "
     "it faster"},
    {GpuBound::Neither, "neither", "#edc948",
     "no unit is near its peak: latency or occupancy bound (too small to fill the GPU, or "
     "waiting on memory latency); larger batches or fused kernels help"},
    {GpuBound::Unknown, "unknown", "#d7d7d7", ""},
}};
constexpr bool inEnumOrder(const std::array<GpuBoundInfo, kGpuBoundCount>& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (static_cast<std::size_t>(rows[i].bound) != i) return false;
  }
  return true;
}
static_assert(inEnumOrder(kGpuBoundInfo), "a row per class, in the enum's order");
constexpr const GpuBoundInfo& infoOf(GpuBound bound) {
  return kGpuBoundInfo[static_cast<std::size_t>(bound)];
}

// A unit at or above this share of its peak limits the kernel (see above).
inline constexpr double kLimiterPercent = 60.0;

// The display names (and unit "%") of the metrics the classes are read from, as
// `kinetrace run --gpu-metrics sm,dram,tensor` (the default set) writes them.
inline constexpr char kMetricSmThroughput[] = "SM throughput";
inline constexpr char kMetricDramThroughput[] = "DRAM throughput";
inline constexpr char kMetricTensorActive[] = "Tensor pipe active";
inline constexpr char kMetricUnitPercent[] = "%";

// The averages a class is read from, in % of peak; nullopt where the kernel has none.
struct BoundInputs {
  std::optional<double> sm;
  std::optional<double> dram;
  std::optional<double> tensor;
};

// The class of a kernel's time (see above). Pure: the same inputs, the same class.
GpuBound classifyGpuBound(const BoundInputs& in);
// "memory", "compute", "tensor", "neither", "unknown".
const char* gpuBoundName(GpuBound bound);
// The class with the numbers that justify it, the telling one first: "memory (DRAM 82%,
// SM 6%)", "tensor (tensor 93%, SM 71%, DRAM 12%)", "unknown (no SM or DRAM throughput)".
std::string describeGpuBound(GpuBound bound, const BoundInputs& in);

// A metric found in the kernels' args: its display name and unit ("SM throughput", "%").
struct MetricName {
  std::string name;
  std::string unit;
  // The args' key: "SM throughput (%)".
  std::string key() const { return name + " (" + unit + ")"; }
};

// Kernel time by what bounded it, and the time-weighted averages that say so: of a whole
// trace, of one kernel name (the top-kernels table), of one step (weighted by each
// kernel's overlap with the step).
struct BoundMix {
  // One per metric of GpuMetricsReport::metrics, in its order; NaN where none of the
  // kernels carried that metric.
  std::vector<double> averages;
  std::array<int64_t, kGpuBoundCount> ns{};  // kernel time of each class, by GpuBound
  // One kernel name's: the class of its averages. A step's or a trace's (byTime): the class
  // with the most kernel time, as averages over different kernels would blur a memory-bound
  // and a compute-bound kernel into "neither".
  GpuBound bound = GpuBound::Unknown;
  bool byTime = false;
  int64_t totalNs() const;
  bool empty() const { return averages.empty(); }
};

// A kernel name's metrics solved from all the samples (analysis/metric_fit.h), which stand
// in for its averages when its kernels are shorter than a sample: a sample averages its whole
// window, the name's kernels, its neighbours and idle time alike.
struct MetricFitRow {
  bool fitted = false;             // the name was a column of the fit
  bool shorterThanSample = false;  // its mean kernel is shorter than the sampling interval
  // Every fitted metric's value is told apart from the other names' (its standard error
  // within kMostFitErrorPoints); otherwise its values are not shown as its own.
  bool resolved = false;
  std::vector<double> values;  // per GpuMetricsReport::metrics; NaN: not fitted
  // The same; infinity: cannot be told. At least kModelErrorPoints / sqrt(ownVariation).
  std::vector<double> standardError;
  double ownVariation = 0;  // LinearFit::Result::ownVariation, the least over the metrics
};
// A fitted value is the name's own when its standard error is at most this many points.
inline constexpr double kMostFitErrorPoints = 2.5;
// What a sample may differ from the sum the fit assumes, in points, whatever the residuals
// say: the residuals (0.3-1.3 points a sample on a ResNet-18 loop) show only what the fit
// could not absorb. A name is many kernels of different shapes, with one value, and a
// kernel's write-backs to DRAM land in the time of the kernel after it; where a name's
// occupancy hardly varies apart from its neighbours', the fit lays such differences on it
// unseen. Against Nsight Compute on that loop, names with less than 4 samples' worth of
// variation of their own were off by up to 40 points with standard errors of 1-3; with this
// floor, a value needs 4 samples' worth (5 / sqrt(4) = 2.5) to be called the name's own.
inline constexpr double kModelErrorPoints = 5.0;

// What the fit found over the whole trace.
struct MetricFitSummary {
  bool done = false;
  uint64_t samples = 0;      // sample windows fitted (each device's)
  std::size_t names = 0;     // kernel names with a column of their own
  std::vector<double> r2;    // per metric, what the fit explains of the samples; NaN: not fitted
  std::vector<double> idle;  // per metric, the value fitted to idle time; NaN: not fitted
  // Non-zero: the windows moved by this much explained the samples clearly better than the
  // windows as recorded (the samples' clock is not the kernels'); no name is resolved then.
  int64_t misalignedNs = 0;
  double misalignedUnexplained = 0;  // what the moved windows left unexplained (1 - R², summed)
  std::size_t shortNames = 0;        // of the names, those whose kernels are shorter than a sample
  std::size_t shortResolved = 0;     // of them, those resolved
};

// What the trace says of its GPU metrics, and what the analysis found of them.
struct GpuMetricsReport {
  std::vector<MetricName> metrics;  // as found in kernels' args, first seen first
  uint64_t kernels = 0;             // kernels (not copies, memsets) seen
  uint64_t kernelsWithMetrics = 0;  // of them, those carrying averages
  BoundMix all;                     // every kernel of the trace
  // The trace's "kinetrace_gpu_metrics" metadata, when it has it: what sampling lost.
  bool hasMetadata = false;
  int64_t intervalNs = 0;
  uint64_t samples = 0;
  uint64_t lost = 0;
  uint64_t corrupted = 0;
  uint64_t setupDropped = 0;
  uint64_t kernelsWithoutTheirSamples = 0;
  MetricFitSummary fit;
  // Whether there is anything to say: kernels with averages, or metadata of sampling.
  bool any() const { return !metrics.empty() || hasMetadata; }
};

// The inputs of a class from averages laid out as `metrics` (NaN: none).
BoundInputs boundInputsOf(const std::vector<MetricName>& metrics,
                          const std::vector<double>& averages);
// The averages the classes read, "SM 32%, DRAM 57%, tensor 37%" ("" when none).
std::string averagesOf(const BoundMix& mix, const std::vector<MetricName>& metrics);
// A kernel name's mix: describeGpuBound of its class and averages. A step's or a trace's
// (byTime): its leading class's share and the averages, "memory 60% of kernel time (SM
// 32%, DRAM 57%, tensor 37%)".
std::string describeMix(const BoundMix& mix, const std::vector<MetricName>& metrics);

// What the GPU-bound pass uses in place of a short kernel's own averages
// (passes/metric_fit_pass.h): its name's fitted values, or none when the fit could not tell
// them apart.
struct NameFit {
  bool shorterThanSample = false;
  bool resolved = false;
  std::vector<double> values;  // per metric; NaN: not fitted
};
using NameFits = std::unordered_map<uint32_t, NameFit>;  // by the trace's name id

struct CollectedTrace;
struct RankReport;

// Reads the trace's kernel metric averages (consumed) and fills report.gpuMetrics, each
// top kernel's bound and each step's; report.kernels and report.steps must be final. A
// kernel shorter than a sample whose name was fitted is classed by its name's fitted values
// (`fits`), or as unknown where they could not be told; its own averages are mostly its
// neighbours'. Memory: the trace's budget (its kernelMetrics list), whatever its length.
void analyzeGpuBounds(CollectedTrace& trace, RankReport& report, const NameFits& fits = {});

}  // namespace kinetrace::detail
