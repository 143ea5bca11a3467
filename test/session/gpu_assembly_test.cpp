#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "output/trace_events.h"
#include "session/session.h"
#include "session/session_support.h"

// A whole session with GPU records from a stand-in source: launch calls recorded on the
// application's threads (as CUPTI's launch callback records them) are joined to the GPU work
// they started, and the trace comes out the way Perfetto needs it: arrows with both ends,
// External ids, spans, syncs on their own track, overlapping work on lanes, and every track's
// slices nested.

namespace kinetrace {
namespace {

using detail::CallEffect;
using detail::GpuBatch;
using detail::StringTable;
using testing::dataOf;
using testing::FakeGpuSource;
using testing::recordApiCall;

constexpr uint16_t kLaunchKernel = 211;
constexpr uint16_t kMemcpyAsync = 41;
constexpr uint16_t kStreamSynchronize = 131;
constexpr uint32_t kStream = 7;

std::unique_ptr<Profiler> gpuProfiler(std::shared_ptr<FakeGpuSource::State> gpu) {
  gpu->apiNames = {{kLaunchKernel, "cudaLaunchKernel"},
                   {kMemcpyAsync, "cudaMemcpyAsync"},
                   {kStreamSynchronize, "cudaStreamSynchronize"}};
  Config config;
  config.activities = ActivitySet::parse("host,kernel,memcpy,sync,launch");
  detail::SessionOptions options;
  options.gpuSourceFactory = [gpu] { return std::make_unique<FakeGpuSource>(gpu); };
  return detail::makeProfiler(config, std::move(options));
}

detail::GpuPlacement placed(uint32_t correlationId, int64_t startNs, int64_t endNs,
                            uint32_t stream = kStream) {
  detail::GpuPlacement at;
  at.correlationId = correlationId;
  at.startNs = startNs;
  at.endNs = endNs;
  at.streamId = stream;
  at.deviceId = 0;
  at.contextId = 1;
  return at;
}

std::vector<const OwnedEvent*> eventsOf(const MemorySink& sink, Phase phase,
                                        const std::string& category = "") {
  std::vector<const OwnedEvent*> found;
  for (const OwnedEvent& e : sink.events()) {
    if (e.phase == phase && (category.empty() || e.category == category)) found.push_back(&e);
  }
  return found;
}

uint64_t externalIdOf(const OwnedEvent& e) {
  const OwnedArg* arg = e.arg("External id");
  if (arg == nullptr) return 0;
  if (const auto* u = std::get_if<uint64_t>(&arg->value)) return *u;
  if (const auto* i = std::get_if<int64_t>(&arg->value)) return static_cast<uint64_t>(*i);
  return 0;
}

TEST(GpuAssemblyTest, LaunchesJoinTheirGpuWorkWithArrowsExternalIdsSpansSyncTracksAndLanes) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  auto profiler = gpuProfiler(gpu);
  profiler->start();
  uint64_t stepId = 0;
  int64_t lastCallEnd = 0;
  {
    Range step("ProfilerStep#1");
    stepId = detail::HostRecorder::innermostOpenRange();
    recordApiCall(101, kLaunchKernel, CallEffect::Kernel);
    recordApiCall(102, kLaunchKernel, CallEffect::Kernel);
    recordApiCall(103, kMemcpyAsync, CallEffect::Copy);
    lastCallEnd = recordApiCall(104, kStreamSynchronize, CallEffect::Sync).second;
  }
  const int64_t t = lastCallEnd + 1000;  // GPU work starts after every launch
  gpu->queue([t](GpuBatch& batch, StringTable& strings) {
    detail::KernelRecord first;
    first.at = placed(101, t, t + 50000);
    first.name = strings.intern("gemm");
    detail::KernelRecord second;  // starts before the first ends: programmatic dependent launch
    second.at = placed(102, t + 1000, t + 60000);
    second.name = strings.intern("relu");
    batch.records.kernels = {first, second};
    detail::MemcpyRecord copy;
    copy.at = placed(103, t + 70000, t + 80000);
    copy.bytes = 4096;
    copy.copyKind = detail::CopyKind::HtoD;
    batch.records.memcpys = {copy};
    detail::SyncRecord sync;  // the host waiting for the stream: overlaps its work
    sync.at = placed(104, t + 500, t + 85000);
    sync.kind = detail::SyncKind::StreamSync;
    batch.records.syncs = {sync};
  });
  Trace trace = profiler->stop();
  const auto& records = dataOf(trace).records;
  ASSERT_EQ(records.kernels.size(), 2u);
  ASSERT_EQ(records.memcpys.size(), 1u);
  ASSERT_EQ(records.syncs.size(), 1u);
  EXPECT_EQ(trace.stats().apiCalls, 4u);
  const Metadata metadata = trace.metadata();
  EXPECT_EQ(
      testing::unsignedOf(testing::metadataValue(metadata, "kinetrace_gpu_ops_without_launch")),
      0u);
  EXPECT_EQ(
      testing::unsignedOf(testing::metadataValue(metadata, "kinetrace_gpu_ops_before_launch")), 0u);

  MemorySink sink;
  trace.writeTo(sink);

  // Arrows: an 's' at each launch of GPU work and an 'f' at the work, same ids, no orphans.
  std::multiset<uint64_t> starts, ends;
  for (const OwnedEvent* e : eventsOf(sink, Phase::FlowStart)) starts.insert(e->flowId);
  for (const OwnedEvent* e : eventsOf(sink, Phase::FlowEnd)) ends.insert(e->flowId);
  EXPECT_EQ(starts, (std::multiset<uint64_t>{101, 102, 103}));
  EXPECT_EQ(ends, starts);
  for (const OwnedEvent* s : eventsOf(sink, Phase::FlowStart)) {
    EXPECT_EQ(s->pid, dataOf(trace).tables.pid) << "an arrow starts on the launching thread";
  }

  // External ids: the range, its calls and the GPU work they launched share the range's id.
  const auto ranges = eventsOf(sink, Phase::Complete, "user_annotation");
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(externalIdOf(*ranges[0]), stepId);
  const auto calls = eventsOf(sink, Phase::Complete, "cuda_runtime");
  ASSERT_EQ(calls.size(), 4u);
  std::set<std::string> callNames;
  for (const OwnedEvent* call : calls) {
    callNames.insert(call->name);
    EXPECT_EQ(externalIdOf(*call), stepId) << call->name;
    EXPECT_EQ(call->tid, ranges[0]->tid) << "calls are on the thread that made them";
  }
  EXPECT_EQ(callNames, (std::set<std::string>{"cudaLaunchKernel", "cudaMemcpyAsync",
                                              "cudaStreamSynchronize"}));
  const auto kernels = eventsOf(sink, Phase::Complete, "kernel");
  ASSERT_EQ(kernels.size(), 2u);
  for (const OwnedEvent* kernel : kernels) EXPECT_EQ(externalIdOf(*kernel), stepId) << kernel->name;
  const auto copies = eventsOf(sink, Phase::Complete, "gpu_memcpy");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0]->name.rfind("Memcpy HtoD", 0), 0u) << copies[0]->name;
  EXPECT_EQ(externalIdOf(*copies[0]), stepId);

  // Overlapping kernels of one stream on separate lanes.
  std::set<int64_t> kernelTids;
  for (const OwnedEvent* kernel : kernels) kernelTids.insert(kernel->tid);
  EXPECT_EQ(kernelTids,
            (std::set<int64_t>{kStream, detail::gpuTrackTid(kStream, detail::kGpuOpsTrack, 1)}));
  EXPECT_EQ(copies[0]->tid, kStream) << "the copy overlaps neither kernel";

  // The sync on the stream's sync track, which nothing else uses.
  const auto syncs = eventsOf(sink, Phase::Complete, "cuda_sync");
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0]->name, "Stream Sync");
  EXPECT_EQ(syncs[0]->tid, detail::gpuTrackTid(kStream, detail::kGpuSyncTrack, 0));
  for (const OwnedEvent& e : sink.events()) {
    if (e.phase == Phase::Complete && e.tid == syncs[0]->tid && e.pid == syncs[0]->pid) {
      EXPECT_EQ(e.category, "cuda_sync") << e.name << " on the sync track";
    }
  }

  // The range's GPU time on the stream: from the first to the last work it launched.
  const auto spans = eventsOf(sink, Phase::Complete, "gpu_user_annotation");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]->name, "ProfilerStep#1");
  EXPECT_EQ(externalIdOf(*spans[0]), stepId);
  EXPECT_EQ(spans[0]->tid, detail::gpuTrackTid(kStream, detail::kGpuSpanTrack, 0));
  EXPECT_EQ(spans[0]->timestampNs, t);
  EXPECT_EQ(spans[0]->timestampNs + spans[0]->durationNs, t + 80000) << "syncs are not GPU work";

  EXPECT_EQ(testing::firstPartialOverlap(sink.events()), "");
}

// Many threads launching from nested ranges onto a few streams, GPU work overlapping at
// random: every (pid, tid) track of the written trace holds slices that nest, and every
// arrow has both ends.
TEST(GpuAssemblyTest, EveryTrackOfABusyTraceNestsAndEveryArrowHasBothEnds) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  auto profiler = gpuProfiler(gpu);
  profiler->start();
  constexpr int kThreads = 3;
  constexpr int kStepsPerThread = 20;
  constexpr int kLaunchesPerStep = 5;
  std::vector<std::vector<std::pair<uint32_t, int64_t>>> launches(kThreads);  // (id, call end)
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([thread, &launches] {
      for (int step = 0; step < kStepsPerThread; ++step) {
        Range outer("step " + std::to_string(step));
        for (int i = 0; i < kLaunchesPerStep; ++i) {
          Range inner("layer " + std::to_string(i));
          const auto id = static_cast<uint32_t>(1000 * (thread + 1) + step * kLaunchesPerStep + i);
          const CallEffect effect = i == 3 ? CallEffect::Sync : CallEffect::Kernel;
          const uint16_t cbid = effect == CallEffect::Sync ? kStreamSynchronize : kLaunchKernel;
          launches[thread].emplace_back(id, recordApiCall(id, cbid, effect).second);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  gpu->queue([&launches](GpuBatch& batch, StringTable& strings) {
    std::mt19937 random(42);
    for (const auto& perThread : launches) {
      for (const auto& [id, callEnd] : perThread) {
        const int64_t start = callEnd + std::uniform_int_distribution<int64_t>(1, 200000)(random);
        const int64_t end = start + std::uniform_int_distribution<int64_t>(1, 300000)(random);
        const uint32_t stream = 7 + static_cast<uint32_t>(random() % 3);
        if (id % 5 == 3) {
          detail::SyncRecord sync;
          sync.at = placed(id, start, end, stream);
          sync.kind = detail::SyncKind::StreamSync;
          batch.records.syncs.push_back(sync);
        } else {
          detail::KernelRecord kernel;
          kernel.at = placed(id, start, end, stream);
          kernel.name = strings.intern("kernel " + std::to_string(id % 7));
          batch.records.kernels.push_back(kernel);
        }
      }
    }
  });
  Trace trace = profiler->stop();
  const std::size_t total = kThreads * kStepsPerThread * kLaunchesPerStep;
  EXPECT_EQ(trace.stats().gpuKernels + trace.stats().gpuSyncs, total);
  EXPECT_EQ(trace.stats().gpuSyncs, kThreads * kStepsPerThread);

  MemorySink sink;
  trace.writeTo(sink);
  EXPECT_EQ(testing::firstPartialOverlap(sink.events()), "");
  std::multiset<uint64_t> starts, ends;
  for (const OwnedEvent* e : eventsOf(sink, Phase::FlowStart)) starts.insert(e->flowId);
  for (const OwnedEvent* e : eventsOf(sink, Phase::FlowEnd)) ends.insert(e->flowId);
  EXPECT_EQ(starts.size(), trace.stats().gpuKernels) << "one arrow per launched kernel";
  EXPECT_EQ(ends, starts);
  std::set<int64_t> laneTids;
  for (const OwnedEvent* kernel : eventsOf(sink, Phase::Complete, "kernel"))
    laneTids.insert(kernel->tid);
  EXPECT_GT(laneTids.size(), 3u) << "overlapping kernels needed lanes beyond the three streams";
  EXPECT_FALSE(eventsOf(sink, Phase::Complete, "gpu_user_annotation").empty());
}

}  // namespace
}  // namespace kinetrace
