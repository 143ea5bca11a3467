#include "analysis/passes/memory_pass.h"

#include <algorithm>
#include <vector>

namespace kinetrace::detail::passes {

void MemoryPass::finish(RankReport& report) {
  MemoryReport& m = report.memory;
  std::vector<StepReport>& steps = report.steps;
  std::vector<MemorySample>& curve = report.memoryCurve;
  m = MemoryReport{};
  m.samples = context_.trace.memory.size();
  if (m.samples == 0) return;
  // The curve: the highest sample of each of kMemoryCurvePoints stretches, so no peak is
  // lost.
  const uint64_t stride =
      (m.samples + RankReport::kMemoryCurvePoints - 1) / RankReport::kMemoryCurvePoints;
  // Each step's allocation at its end: the last sample at or before it.
  std::vector<std::size_t> byEnd(steps.size());
  for (std::size_t i = 0; i < byEnd.size(); ++i) byEnd[i] = i;
  std::stable_sort(byEnd.begin(), byEnd.end(), [&steps](std::size_t a, std::size_t b) {
    return steps[a].endNs < steps[b].endNs;
  });
  std::vector<bool> sampled(steps.size(), false);
  std::size_t nextStep = 0;
  uint64_t index = 0;
  MemorySample last;
  MemorySample highest;
  context_.trace.memory.drain([&](const SequencedSample& sequenced) {
    const MemorySample& s = sequenced.sample;
    for (; nextStep < byEnd.size() && steps[byEnd[nextStep]].endNs < s.timeNs; ++nextStep) {
      if (index == 0) continue;
      steps[byEnd[nextStep]].allocatedAtEndBytes = last.allocatedBytes;
      sampled[byEnd[nextStep]] = true;
    }
    if (index == 0) m.firstBytes = s.allocatedBytes;
    if (s.allocatedBytes > m.peakBytes) {
      m.peakBytes = s.allocatedBytes;
      m.peakAtNs = s.timeNs;
    }
    if (index % stride == 0 || s.allocatedBytes > highest.allocatedBytes) highest = s;
    if (index % stride == stride - 1 || index + 1 == m.samples) curve.push_back(highest);
    last = s;
    ++index;
  });
  m.lastBytes = last.allocatedBytes;
  for (; nextStep < byEnd.size(); ++nextStep) {
    steps[byEnd[nextStep]].allocatedAtEndBytes = last.allocatedBytes;
    sampled[byEnd[nextStep]] = true;
  }
  std::vector<int64_t> atStepEnd;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (sampled[i]) atStepEnd.push_back(steps[i].allocatedAtEndBytes);
  }
  if (atStepEnd.size() >= 3) {
    m.growsEveryStep = true;
    for (std::size_t i = 1; i < atStepEnd.size(); ++i) {
      if (atStepEnd[i] <= atStepEnd[i - 1]) m.growsEveryStep = false;
    }
    m.growthPerStepBytes =
        (atStepEnd.back() - atStepEnd.front()) / static_cast<int64_t>(atStepEnd.size() - 1);
  }
}

}  // namespace kinetrace::detail::passes
