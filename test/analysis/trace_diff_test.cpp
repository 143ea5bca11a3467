// `kinetrace diff`: what a run's profile holds (names by step, as HTA assigns iterations), how
// two runs' steps are matched, the noise rule, and what is said first for a change of one
// known cause; then hostile inputs.

#include "analysis/diff/trace_diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/diff/run_profile.h"
#include "analysis_trace_builder.h"

namespace kinetrace::detail {
namespace {

constexpr const char* kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// A training loop, one step after another on one host thread and one stream: the data loader,
// forward (one aten::linear per kernel), backward after `autogradUs` of host bookkeeping, and
// the host waiting for the GPU at the step's end.
struct Loop {
  int64_t loaderUs = 1'000;
  std::vector<std::pair<std::string, int64_t>> forward = {
      {"gemm_layer_0", 1'000}, {"gemm_layer_1", 1'000}, {"output_gemm", 900}};
  std::vector<std::pair<std::string, int64_t>> backward = {{"gemm_grad_1", 1'500},
                                                           {"gemm_grad_0", 1'500}};
  int64_t autogradUs = 500;
  // The host's own time in each forward operator (the GPU waits on it when long), and
  // whether each layer's operator has a name of its own ("aten::linear#0", ...).
  int64_t operatorUs = 0;
  bool operatorPerLayer = false;
  bool syncAfterForward = false;
  int firstStep = 1;
  int steps = 5;
  bool stepRanges = true;
  // Added to each step's loader, step by step in turn: a spread of step times.
  std::vector<int64_t> loaderJitterUs = {0};
};

CollectedTrace build(const Loop& loop, TraceBuilder builder = TraceBuilder(0)) {
  TraceBuilder& t = builder;
  int64_t host = 10, gpu = 0;
  auto launch = [&](const std::string& name, int64_t durationUs) {
    const int64_t start = std::max(gpu + 1, host + 5);
    t.op(name, host, host + 3, start, start + durationUs);
    gpu = start + durationUs;
    host += 4;
  };
  for (int i = 0; i < loop.steps; ++i) {
    const int64_t stepStart = host;
    host += loop.loaderUs +
            loop.loaderJitterUs[static_cast<std::size_t>(i) % loop.loaderJitterUs.size()];
    t.range(kLoader, stepStart, host);
    const int64_t forwardStart = host++;
    for (std::size_t layer = 0; layer < loop.forward.size(); ++layer) {
      const auto& [name, us] = loop.forward[layer];
      const int64_t opStart = host++;
      host += loop.operatorUs;
      launch(name, us);
      t.range(loop.operatorPerLayer ? "aten::linear#" + std::to_string(layer) : "aten::linear",
              opStart, ++host, 0, "cpu_op");
    }
    t.range("## forward ##", forwardStart, ++host);
    if (loop.syncAfterForward) {
      // loss.item(): the host waits in a stream sync until forward's kernels are done.
      const int64_t itemStart = host;
      const int64_t syncEnd = gpu + 2;
      t.call("cudaStreamSynchronize", host + 1, syncEnd);
      t.sync("Stream Sync", host + 1, syncEnd, 7);
      host = syncEnd + 1;
      t.range("aten::item", itemStart, host, 0, "cpu_op");
    }
    const int64_t backwardStart = host;
    host += loop.autogradUs;
    for (const auto& [name, us] : loop.backward) launch(name, us);
    t.range("## backward ##", backwardStart, ++host);
    host = std::max(host, gpu) + 5;
    if (loop.stepRanges) {
      t.range("ProfilerStep#" + std::to_string(loop.firstStep + i), stepStart, host);
    }
    host += 2;
  }
  return t.take();
}

RunProfile profile(const Loop& loop) {
  return profileRank(build(loop), AnalysisOptions{});
}

DiffReport compare(const Loop& base, const Loop& after) {
  std::vector<RunProfile> b, a;
  b.push_back(profile(base));
  a.push_back(profile(after));
  return diffRuns(b, a, DiffOptions{});
}

const NameDiff* row(const RankDiff& r, NameKind kind, const std::string& name) {
  for (const NameDiff& n : r.names) {
    if (n.kind == kind && n.name == name) return &n;
  }
  return nullptr;
}

const NameProfile* named(const RunProfile& p, const std::string& name) {
  for (const NameProfile& n : p.names) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::vector<std::string> idsOf(const DiffReport& report) {
  std::vector<std::string> ids;
  for (const DiffFinding& f : report.findings) ids.push_back(f.id);
  return ids;
}

std::string textOf(const DiffReport& report) {
  std::string text;
  for (const DiffFinding& f : report.findings) text += f.text + "\n";
  return text;
}

// ---- a run's profile -------------------------------------------------------------------

TEST(RunProfileTest, CountsAKernelInTheStepItsLaunchStartedIn) {
  TraceBuilder t(0);
  t.range("ProfilerStep#1", 0, 100);
  t.range("ProfilerStep#2", 100, 200);
  // Launched at 90, in step 1; it runs in step 2.
  t.op("late_kernel", 90, 95, 120, 150);
  // No launch call in the trace: in no step.
  t.kernel("orphan", 130, 140);
  // A runtime call, by its start.
  t.call("cudaStreamSynchronize", 99, 130);
  // A range that starts in step 1 and ends in step 2 belongs to step 1.
  t.range("aten::copy_", 95, 110, 0, "cpu_op");
  t.range("## optimizer ##", 150, 180);
  const RunProfile p = profileRank(t.take(), AnalysisOptions{});

  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].number, 1);
  EXPECT_EQ(p.steps[1].number, 2);
  EXPECT_EQ(p.steps[1].endNs - p.steps[1].startNs, 100 * kUs);
  const NameProfile* late = named(p, "late_kernel");
  ASSERT_NE(late, nullptr);
  ASSERT_EQ(late->slots.size(), 1u);
  EXPECT_EQ(late->slots[0].first, 0u);
  EXPECT_EQ(late->slots[0].second.ns, 30 * kUs);
  const NameProfile* orphan = named(p, "orphan");
  ASSERT_NE(orphan, nullptr);
  EXPECT_EQ(orphan->slots[0].first, kOutsideSteps);
  EXPECT_EQ(p.gpuOpsWithoutCall, 1u);
  const NameProfile* copy = named(p, "aten::copy_");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind, NameKind::Op);
  EXPECT_EQ(copy->slots[0].first, 0u);
  const NameProfile* optimizer = named(p, "## optimizer ##");
  ASSERT_NE(optimizer, nullptr);
  EXPECT_EQ(optimizer->kind, NameKind::Annotation);
  EXPECT_EQ(optimizer->slots[0].first, 1u);
  const NameProfile* sync = named(p, "cudaStreamSynchronize");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->kind, NameKind::Call);
  EXPECT_EQ(sync->slots[0].first, 0u);
  EXPECT_EQ(sync->slots[0].second.ns, 31 * kUs);
  const NameProfile* launch = named(p, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->slots[0].second.count, 1u);
  // The steps are the step time, not annotations.
  EXPECT_EQ(named(p, "ProfilerStep#1"), nullptr);
}

TEST(RunProfileTest, LeavesTheAnalysisItsOperationsAndCalls) {
  Loop loop;
  const RunProfile p = profile(loop);
  // analyze's figures are those of every operation joined to its call, as without the diff.
  AnalysisOptions options;
  const RankReport alone = analyze(build(loop), options);
  EXPECT_EQ(p.report.gpuOps, alone.gpuOps);
  EXPECT_EQ(p.report.opsWithHostRange, alone.opsWithHostRange);
  EXPECT_EQ(p.report.time.hostWaitNs, alone.time.hostWaitNs);
  EXPECT_EQ(p.report.time.launchNs, alone.time.launchNs);
  EXPECT_EQ(p.report.launchLatency.count, alone.launchLatency.count);
  EXPECT_GT(p.report.launchLatency.count, 0u);
}

TEST(RunProfileTest, PrefersProfilerStepsToOtherStepRanges) {
  TraceBuilder t(0);
  t.range("ProfilerStep#7", 0, 100);
  t.range("step 7", 10, 90);
  t.op("k", 20, 22, 30, 40);
  const RunProfile p = profileRank(t.take(), AnalysisOptions{});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].name, "ProfilerStep#7");
  EXPECT_EQ(named(p, "step 7"), nullptr);  // a step range, not an annotation
}

TEST(RunProfileTest, StepNumbersComeFromTheFirstDigits) {
  EXPECT_EQ(stepNumberOf("ProfilerStep#12"), 12);
  EXPECT_EQ(stepNumberOf("step 3"), 3);
  EXPECT_EQ(stepNumberOf("step"), std::nullopt);
  EXPECT_EQ(stepNumberOf("step 99999999999999999999999"), std::nullopt);
}

// ---- steps matched -----------------------------------------------------------------------

TEST(TraceDiffTest, ComparesTheStepsBothRunsNumber) {
  Loop base, after;
  base.firstStep = 1;   // 1-5
  after.firstStep = 3;  // 3-7
  const DiffReport report = compare(base, after);
  const RankDiff& r = report.ranks.at(0);
  EXPECT_EQ(r.match, StepMatch::Matched);
  EXPECT_EQ(r.base.compared, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(r.after.compared, (std::vector<int64_t>{3, 4, 5}));
  const NameDiff* gemm = row(r, NameKind::Kernel, "output_gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->baseCount, 3u);
  EXPECT_EQ(gemm->afterCount, 3u);
  EXPECT_EQ(gemm->baseNs, 3 * 900 * kUs);
  const auto ids = idsOf(report);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "steps-compared"), ids.end()) << textOf(report);
}

TEST(TraceDiffTest, AveragesPerStepWhenTheRunsShareNoStepNumber) {
  Loop base, after;
  base.steps = 4;
  after.firstStep = 11;
  after.steps = 6;
  const DiffReport report = compare(base, after);
  const RankDiff& r = report.ranks.at(0);
  EXPECT_EQ(r.match, StepMatch::Averaged);
  EXPECT_EQ(r.base.comparedCount, 4u);
  EXPECT_EQ(r.after.comparedCount, 6u);
  const NameDiff* gemm = row(r, NameKind::Kernel, "output_gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->baseCount, 4u);
  EXPECT_EQ(gemm->afterCount, 6u);
  EXPECT_DOUBLE_EQ(gemm->baseCountPerStep, 1.0);
  EXPECT_DOUBLE_EQ(gemm->afterCountPerStep, 1.0);
  EXPECT_EQ(gemm->change, NameChange::Unchanged);  // by count per step, not in total
  EXPECT_NEAR(gemm->time.delta(), 0.0, 1.0);
  EXPECT_EQ(report.findings.at(0).id, "no-change") << textOf(report);
}

TEST(TraceDiffTest, ComparesWholeTracesWhenOneRunHasNoSteps) {
  Loop base, after;
  after.stepRanges = false;
  const DiffReport report = compare(base, after);
  const RankDiff& r = report.ranks.at(0);
  EXPECT_EQ(r.match, StepMatch::Whole);
  EXPECT_EQ(r.after.steps, 0u);
  const NameDiff* gemm = row(r, NameKind::Kernel, "output_gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->baseCount, 5u);  // every one, steps or not
  bool said = false;
  for (const DiffFinding& f : report.findings) {
    if (f.id == "no-steps") said = f.text.find("NEW has no step ranges") != std::string::npos;
  }
  EXPECT_TRUE(said) << textOf(report);
}

TEST(TraceDiffTest, LeavesOutAStepFarFromTheRestOfItsRunOnBothSides) {
  // BASE's first step carries 9 ms more (a profiler starting); NEW's steps are alike.
  Loop base, after;
  base.loaderJitterUs = {9'000, 0, 20, -20, 10};
  after.loaderJitterUs = {0, 10, -10, 20, 0};
  const DiffReport report = compare(base, after);
  const RankDiff& r = report.ranks.at(0);
  EXPECT_EQ(r.base.compared, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(r.after.compared, (std::vector<int64_t>{2, 3, 4, 5}));
  ASSERT_EQ(r.base.leftOut.size(), 1u);
  EXPECT_EQ(r.base.leftOut[0].first, "ProfilerStep#1");
  ASSERT_EQ(r.after.leftOut.size(), 1u);  // its match, on the other side
  EXPECT_EQ(report.findings.at(0).id, "no-change") << textOf(report);
  const auto ids = idsOf(report);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "steps-left-out"), ids.end()) << textOf(report);
  // More than a quarter of the steps far from the median is the run's spread: none left out.
  Loop spread;
  spread.loaderJitterUs = {0, 4'000};
  EXPECT_TRUE(compare(spread, spread).ranks.at(0).base.leftOut.empty());
}

// ---- names added and removed ----------------------------------------------------------------

TEST(TraceDiffTest, ListsNamesAddedAndRemoved) {
  Loop base, after;
  base.forward.push_back({"old_kernel", 50});
  after.forward.push_back({"new_kernel", 50});
  const DiffReport report = compare(base, after);
  const RankDiff& r = report.ranks.at(0);
  const NameDiff* added = row(r, NameKind::Kernel, "new_kernel");
  const NameDiff* removed = row(r, NameKind::Kernel, "old_kernel");
  ASSERT_NE(added, nullptr);
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(added->change, NameChange::Added);
  EXPECT_EQ(added->afterCount, 5u);
  EXPECT_EQ(removed->change, NameChange::Removed);
  EXPECT_EQ(removed->baseCount, 5u);
  EXPECT_EQ(row(r, NameKind::Kernel, "output_gemm")->change, NameChange::Unchanged);
  bool addedSaid = false, removedSaid = false;
  for (const DiffFinding& f : report.findings) {
    if (f.id == "names-added") addedSaid = f.names == std::vector<std::string>{"new_kernel"};
    if (f.id == "names-removed") removedSaid = f.names == std::vector<std::string>{"old_kernel"};
  }
  EXPECT_TRUE(addedSaid) << textOf(report);
  EXPECT_TRUE(removedSaid) << textOf(report);
}

TEST(TraceDiffTest, CountsMoreOrFewerOfANameAsIncreasedOrDecreased) {
  Loop base, after;
  after.forward.push_back({"gemm_layer_0", 1'000});  // twice a step
  after.forward.erase(after.forward.begin() + 1);    // gemm_layer_1 gone
  base.backward.push_back({"gemm_grad_0", 10});
  const DiffReport report = compare(base, after);
  const RankDiff& r = report.ranks.at(0);
  EXPECT_EQ(row(r, NameKind::Kernel, "gemm_layer_0")->change, NameChange::Increased);
  EXPECT_EQ(row(r, NameKind::Kernel, "gemm_grad_0")->change, NameChange::Decreased);
  EXPECT_EQ(row(r, NameKind::Kernel, "gemm_layer_1")->change, NameChange::Removed);
  // Three aten::linear a step on both sides still.
  EXPECT_EQ(row(r, NameKind::Op, "aten::linear")->change, NameChange::Unchanged);
}

// ---- what is said first -------------------------------------------------------------------

TEST(TraceDiffTest, NamesTheDataLoaderFirstWhenOnlyTheLoaderGotSlower) {
  Loop base, after;
  after.loaderUs = 21'000;
  const DiffReport report = compare(base, after);
  ASSERT_FALSE(report.findings.empty());
  const DiffFinding& first = report.findings.front();
  EXPECT_EQ(first.id, "step-time-change") << textOf(report);
  EXPECT_EQ(first.part, "data_loading_idle_ns") << formatDiff(report, DiffOptions{});
  ASSERT_FALSE(first.names.empty()) << first.text;
  EXPECT_EQ(first.names.front(), kLoader);
  EXPECT_NE(first.text.find("Step time rose 20.00 ms"), std::string::npos) << first.text;
  EXPECT_NE(first.text.find("GPU idle while data loading rose 20.00 ms a step"), std::string::npos)
      << first.text;
  // Host wait, which the loader's idle time is a share of, is said with it, not again.
  for (const DiffFinding& f : report.findings) EXPECT_NE(f.part, "host_wait_ns") << f.text;
}

TEST(TraceDiffTest, NamesTheKernelThatGotShorter) {
  Loop base, after;
  after.forward.back().second = 300;  // output_gemm: 900 -> 300 us
  const DiffReport report = compare(base, after);
  const DiffFinding& first = report.findings.at(0);
  EXPECT_EQ(first.id, "step-time-change") << textOf(report);
  EXPECT_EQ(first.part, "compute_ns") << first.text;
  EXPECT_EQ(first.names, std::vector<std::string>{"output_gemm"}) << first.text;
  EXPECT_NE(first.text.find("Step time fell 600.0 us"), std::string::npos) << first.text;
  const NameDiff* gemm = row(report.ranks.at(0), NameKind::Kernel, "output_gemm");
  EXPECT_NEAR(gemm->time.delta(), -600.0 * kUs, 1.0);
  EXPECT_TRUE(gemm->time.beyondNoise);
}

TEST(TraceDiffTest, NamesHostWaitAndTheSyncWhenASyncIsAdded) {
  Loop base, after;
  after.syncAfterForward = true;
  const DiffReport report = compare(base, after);
  const DiffFinding& first = report.findings.at(0);
  EXPECT_EQ(first.id, "step-time-change") << textOf(report);
  EXPECT_EQ(first.part, "host_wait_ns") << first.text;
  EXPECT_NE(std::find(first.names.begin(), first.names.end(), "aten::item"), first.names.end())
      << first.text;
  EXPECT_NE(std::find(first.names.begin(), first.names.end(), "cudaStreamSynchronize"),
            first.names.end())
      << first.text;
  EXPECT_NE(first.text.find("Stream Sync"), std::string::npos) << first.text;
  EXPECT_EQ(row(report.ranks.at(0), NameKind::Op, "aten::item")->change, NameChange::Added);
  EXPECT_EQ(row(report.ranks.at(0), NameKind::Call, "cudaStreamSynchronize")->change,
            NameChange::Added);
}

// Two processes of a host-bound loop: NEW's host ran every operator 30% slower (another CPU
// clock, load beside it), and its output layer's GEMM was made smaller. The step time rose,
// all of it the GPU waiting on the host; the change made is the kernel, said first, and the
// step's change is put down to the host's pace.
TEST(TraceDiffTest, SaysTheWorkChangedFirstWhenTheHostRanSlowerForTheSameWork) {
  Loop base;
  base.forward = {{"gemm_layer_0", 500}, {"gemm_layer_1", 500}, {"gemm_layer_2", 500},
                  {"gemm_layer_3", 500}, {"gemm_layer_4", 500}, {"output_gemm", 900}};
  base.operatorUs = 2'000;
  base.operatorPerLayer = true;
  Loop after = base;
  after.operatorUs = 2'600;
  after.forward.back() = {"output_gemm_small", 300};
  const DiffReport report = compare(base, after);
  ASSERT_GE(report.findings.size(), 3u) << textOf(report);
  EXPECT_EQ(report.findings.at(0).id, "names-added") << textOf(report);
  EXPECT_EQ(report.findings.at(0).names, std::vector<std::string>{"output_gemm_small"});
  EXPECT_EQ(report.findings.at(1).id, "names-removed") << textOf(report);
  const DiffFinding& step = report.findings.at(2);
  EXPECT_EQ(step.id, "step-time-change") << textOf(report);
  EXPECT_EQ(step.part, "host_wait_ns") << step.text;
  EXPECT_NE(step.text.find("The host ran slower for the same work: the 6 operators that ran as "
                           "often a step in both took 30% longer in NEW"),
            std::string::npos)
      << step.text;
  const auto pace = std::find_if(step.evidence.begin(), step.evidence.end(),
                                 [](const auto& e) { return e.first == "host_pace_ratio"; });
  ASSERT_NE(pace, step.evidence.end());
  EXPECT_NEAR(pace->second, 1.3, 0.01);

  // The same host pace and the same kernels: the headline as before, the host's pace said.
  Loop slower = base;
  slower.operatorUs = 2'600;
  const DiffReport paced = compare(base, slower);
  EXPECT_EQ(paced.findings.at(0).id, "step-time-change") << textOf(paced);
  // A pace within kHostPaceShare is not said: the step's change is the host's work.
  Loop slightly = base;
  slightly.operatorUs = 2'200;
  const DiffReport within = compare(base, slightly);
  EXPECT_EQ(within.findings.at(0).text.find("The host ran"), std::string::npos) << textOf(within);
}

// A kernel added whose time the step's noise hides: what ran differently is said first.
TEST(TraceDiffTest, SaysNamesThatCameFirstWhenTheStepTimeDidNotChange) {
  Loop base;
  Loop after = base;
  after.backward.push_back({"tiny_added_kernel", 5});
  const DiffReport report = compare(base, after);
  ASSERT_FALSE(report.ranks.at(0).stepTime.beyondNoise) << textOf(report);
  EXPECT_EQ(report.findings.at(0).id, "names-added") << textOf(report);
  EXPECT_EQ(report.findings.at(0).names, std::vector<std::string>{"tiny_added_kernel"});
  EXPECT_EQ(report.findings.at(1).id, "no-change") << textOf(report);
}

TEST(TraceDiffTest, ReadsTwoRunsOfAnUnchangedProgramAsNoChange) {
  Loop base, after;
  base.loaderJitterUs = {0, 60, -40, 20, -60};
  after.loaderJitterUs = {30, -50, 10, 50, -20};
  const DiffReport report = compare(base, after);
  EXPECT_EQ(report.findings.at(0).id, "no-change") << textOf(report);
  EXPECT_EQ(idsOf(report), std::vector<std::string>{"no-change"}) << textOf(report);
  EXPECT_FALSE(report.ranks.at(0).stepTime.beyondNoise);
}

TEST(TraceDiffTest, TakesAChangeWithinTwiceTheStepSpreadAsNoise) {
  // Step times that alternate 4 ms apart: a spread of about 2.2 ms. A loader 3 ms slower
  // moves the mean by less than twice that; 8 ms slower by more.
  Loop base, small, large;
  base.loaderJitterUs = small.loaderJitterUs = large.loaderJitterUs = {0, 4'000};
  small.loaderUs += 3'000;
  large.loaderUs += 8'000;
  const DiffReport within = compare(base, small);
  EXPECT_FALSE(within.ranks.at(0).stepTime.beyondNoise) << textOf(within);
  EXPECT_GT(within.ranks.at(0).stepTime.noise, 2 * 2'000.0 * kUs);
  EXPECT_EQ(within.findings.at(0).id, "no-change") << textOf(within);
  const DiffReport beyond = compare(base, large);
  EXPECT_TRUE(beyond.ranks.at(0).stepTime.beyondNoise);
  EXPECT_EQ(beyond.findings.at(0).id, "step-time-change") << textOf(beyond);
}

// ---- reports ------------------------------------------------------------------------------

TEST(TraceDiffTest, JsonHasEveryRowAndEachFindingItsIdAndEvidence) {
  Loop base, after;
  after.loaderUs = 21'000;
  const DiffReport report = compare(base, after);
  const nlohmann::json json = nlohmann::json::parse(diffJson(report));
  ASSERT_EQ(json["ranks"].size(), 1u);
  const auto& rank = json["ranks"][0];
  EXPECT_EQ(rank["match"], "matched");
  EXPECT_EQ(rank["kernels"].size(), 5u);
  EXPECT_EQ(rank["ops"].size(), 1u);
  EXPECT_EQ(rank["annotations"].size(), 3u);  // the loader, forward, backward
  EXPECT_EQ(rank["calls"].size(), 1u);        // cudaLaunchKernel
  EXPECT_EQ(rank["parts"].size(), 10u);
  const auto& first = json["findings"][0];
  EXPECT_EQ(first["id"], "step-time-change");
  EXPECT_EQ(first["rank"], 0);
  EXPECT_EQ(first["part"], "data_loading_idle_ns");
  EXPECT_NEAR(first["evidence"]["delta_ns"].get<double>(), 20e6, 1e3);
  for (const auto& finding : json["findings"]) {
    bool known = false;
    for (const FindingKind& kind : kDiffFindingKinds) known = known || finding["id"] == kind.id;
    EXPECT_TRUE(known) << finding["id"];
  }
}

TEST(TraceDiffTest, TextAndHtmlShowTheFindingsAndTables) {
  Loop base, after;
  after.forward.back().second = 300;
  const DiffReport report = compare(base, after);
  DiffOptions options;
  const std::string text = formatDiff(report, options);
  EXPECT_NE(text.find(report.findings.at(0).text), std::string::npos);
  EXPECT_NE(text.find("output_gemm"), std::string::npos);
  const std::string html = diffHtml(report, options);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("output_gemm"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
}

TEST(TraceDiffTest, DocsHoldTheTableOfFindingKinds) {
  std::ifstream file(std::string(KINETRACE_SOURCE_DIR) + "/docs/ANALYSIS.md");
  ASSERT_TRUE(file.good()) << "docs/ANALYSIS.md not found";
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- diff finding kinds -->\n";
  const std::size_t from = doc.find(begin);
  const std::size_t to = doc.find("<!-- end of diff finding kinds -->");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), diffFindingKindsMarkdown());
}

// ---- hostile inputs -------------------------------------------------------------------------

TEST(TraceDiffHostileTest, AnEmptyTraceOnOneSideIsSaidNotACrash) {
  std::vector<RunProfile> b, a;
  b.push_back(profile(Loop{}));
  a.push_back(profileRank(TraceBuilder(0).take(), AnalysisOptions{}));
  const DiffReport report = diffRuns(b, a, DiffOptions{});
  const auto ids = idsOf(report);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "no-steps"), ids.end()) << textOf(report);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "no-gpu-operations"), ids.end()) << textOf(report);
  const RankDiff& r = report.ranks.at(0);
  EXPECT_EQ(row(r, NameKind::Kernel, "output_gemm")->change, NameChange::Removed);
  EXPECT_FALSE(formatDiff(report, DiffOptions{}).empty());
  EXPECT_FALSE(diffHtml(report, DiffOptions{}).empty());
}

TEST(TraceDiffHostileTest, HugeNamesAreKeptWholeInJsonAndCutInText) {
  const std::string huge(1 << 20, 'k');
  Loop base, after;
  after.forward.push_back({huge, 10});
  const DiffReport report = compare(base, after);
  const NameDiff* added = row(report.ranks.at(0), NameKind::Kernel, huge);
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->change, NameChange::Added);
  const std::string text = formatDiff(report, DiffOptions{});
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LT(line.size(), 2'000u);
  EXPECT_NE(diffJson(report).find(huge), std::string::npos);
}

TEST(TraceDiffHostileTest, WhatAProfileKeepsIsTakenFromTheBudgetAndGivenBack) {
  ReadBudget& budget = budgetOf();
  const std::size_t before = budget.used();
  {
    const RunProfile p = profile(Loop{});
    EXPECT_GT(p.held->bytes(), 0u);
    EXPECT_GT(budget.used(), before);
  }
  EXPECT_EQ(budget.used(), before);
}

TEST(TraceDiffHostileTest, ANameTableLargerThanTheBudgetIsRefusedNamingIt) {
  // 2,000 names in each of 200 steps: 400,000 figures, more than a 16 MB budget holds. An
  // error naming what grew, never swap.
  ReadBudget& budget = budgetOf(std::size_t{16} << 20);
  std::string refusal;
  {
    TraceCollector collector("t.json", budget);
    collector.begin(TraceHeader{"t.json", kBase, {}});
    Event e;
    e.phase = Phase::Complete;
    e.pid = kHostPid;
    e.tid = 1;
    std::string name;
    try {
      for (int step = 0; step < 200; ++step) {
        const int64_t start = kBase + step * 1'000'000;
        name = "ProfilerStep#" + std::to_string(step);
        e.name = name;
        e.category = "user_annotation";
        e.timestampNs = start;
        e.durationNs = 900'000;
        collector.write(e);
        e.category = "cpu_op";
        e.durationNs = 10;
        for (int i = 0; i < 2'000; ++i) {
          name = "aten::op_" + std::to_string(i);
          e.name = name;
          e.timestampNs = start + 100 + i * 100;
          collector.write(e);
        }
      }
      collector.end({});
      profileRank(collector.take(), AnalysisOptions{});
    } catch (const Error& error) {
      refusal = error.what();
    }
  }
  EXPECT_NE(refusal.find("names of kernels, operators and annotations"), std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("--memory-mb"), std::string::npos) << refusal;
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail
