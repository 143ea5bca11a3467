// libkineto's API on kinetrace's core, driven the way PyTorch drives it (the calls of its
// kineto_shim and collection code), with GPU records from a stand-in source: what PyTorch's
// key_averages() and export_chrome_trace() rely on.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ApproximateClock.h"
#include "activity_profiler.h"
#include "host/host_recorder.h"
#include "kinetrace/config.h"
#include "libkineto.h"
#include "session/seam.h"
#include "session/session.h"
#include "session/session_support.h"
#include "support/temp_dir.h"

namespace kinetrace {
namespace {

using detail::CallEffect;
using detail::GpuBatch;
using detail::StringTable;
using kineto::ActivityProfiler;
using libkineto::ActivityType;
using libkineto::CpuTraceBuffer;
using libkineto::GenericTraceActivity;
using libkineto::ITraceActivity;
using testing::FakeGpuSource;
using testing::recordApiCall;

constexpr uint16_t kLaunchKernel = 211;
constexpr uint32_t kStream = 7;

ActivityProfiler makeBackend(std::shared_ptr<FakeGpuSource::State> gpu) {
  gpu->apiNames = {{kLaunchKernel, "cudaLaunchKernel"}};
  return ActivityProfiler(/*cpuOnly=*/false, Config{}, /*activitiesFromEnvironment=*/false,
                          [gpu](const Config& config) {
                            detail::SessionOptions options;
                            options.gpuSourceFactory = [gpu] {
                              return std::make_unique<FakeGpuSource>(gpu);
                            };
                            return detail::makeProfiler(config, std::move(options));
                          });
}

const std::set<ActivityType> kTorchCudaTypes = {
    ActivityType::CPU_OP,       ActivityType::USER_ANNOTATION, ActivityType::EXTERNAL_CORRELATION,
    ActivityType::GPU_MEMCPY,   ActivityType::GPU_MEMSET,      ActivityType::CONCURRENT_KERNEL,
    ActivityType::CUDA_RUNTIME, ActivityType::CUDA_DRIVER};

detail::KernelRecord kernel(uint32_t correlationId, int64_t startNs, StringTable& strings,
                            const char* name) {
  detail::KernelRecord k;
  k.at.correlationId = correlationId;
  k.at.startNs = startNs;
  k.at.endNs = startNs + 20000;
  k.at.streamId = kStream;
  k.at.deviceId = 0;
  k.at.contextId = 1;
  k.name = strings.intern(name);
  return k;
}

// A CPU op as PyTorch's TraceWrapper::addCPUActivity writes it.
GenericTraceActivity* addOp(CpuTraceBuffer& buffer, ActivityType type, const std::string& name,
                            int32_t id, int64_t startNs, int64_t endNs) {
  buffer.emplace_activity(buffer.span, type, name);
  GenericTraceActivity& op = CpuTraceBuffer::toRef(buffer.activities.back());
  op.device = libkineto::processId();
  op.resource = libkineto::systemThreadId();
  op.id = id;
  op.startTime = startNs;
  op.endTime = endNs;
  return buffer.activities.back().get();
}

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(LibkinetoBackendTest, GpuWorkLinksToTheOpWhosePushedIdWasOnTopWithPairedFlows) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  ActivityProfiler backend = makeBackend(gpu);
  backend.init();
  backend.prepareTrace(kTorchCudaTypes, "");
  backend.startTrace();
  ASSERT_TRUE(backend.isActive());

  const int64_t opStart = internal::clockNowNs();
  backend.pushCorrelationId(7);  // aten::mm
  const int64_t launchEnd = recordApiCall(101, kLaunchKernel, CallEffect::Kernel).second;
  backend.popCorrelationId();
  backend.pushCorrelationId(8);  // aten::relu
  recordApiCall(102, kLaunchKernel, CallEffect::Kernel);
  backend.popCorrelationId();
  const int64_t opEnd = internal::clockNowNs();
  const int64_t t = launchEnd + 100000;
  gpu->queue([t](GpuBatch& batch, StringTable& strings) {
    batch.records.kernels = {kernel(101, t, strings, "gemm"),
                             kernel(102, t + 30000, strings, "relu"),
                             kernel(103, t + 60000, strings, "orphan")};
  });
  // The stand-in GPU ran the kernels before the stop, as a real one would have.
  while (internal::clockNowNs() <= t + 81000) {
  }

  // PyTorch hands over its ops before it stops the trace.
  auto buffer = std::make_unique<CpuTraceBuffer>();
  buffer->span.startTime = opStart;
  buffer->gpuOpCount = -1;
  GenericTraceActivity* step =
      addOp(*buffer, ActivityType::USER_ANNOTATION, "ProfilerStep#3", 9, opStart, opEnd);
  GenericTraceActivity* mm = addOp(*buffer, ActivityType::CPU_OP, "aten::mm", 7, opStart, opEnd);
  GenericTraceActivity* relu =
      addOp(*buffer, ActivityType::CPU_OP, "aten::relu", 8, opStart + 1, opEnd);
  backend.transferCpuTrace(std::move(buffer));
  std::unique_ptr<libkineto::ActivityTraceInterface> trace = backend.stopTrace();
  ASSERT_NE(trace, nullptr);
  EXPECT_FALSE(backend.isActive());

  const std::vector<const ITraceActivity*>& all = *trace->activities();
  ASSERT_GE(all.size(), 3u);
  // The same objects PyTorch made, first and in order: it finds its ops by address.
  EXPECT_EQ(all[0], step);
  EXPECT_EQ(all[1], mm);
  EXPECT_EQ(all[2], relu);

  std::map<std::string, const ITraceActivity*> kernels;
  std::map<int64_t, const ITraceActivity*> launches;
  for (const ITraceActivity* a : all) {
    if (a->type() == ActivityType::CONCURRENT_KERNEL) kernels[a->name()] = a;
    if (a->type() == ActivityType::CUDA_RUNTIME) launches[a->correlationId()] = a;
  }
  ASSERT_EQ(kernels.size(), 3u);
  ASSERT_EQ(launches.size(), 2u);
  const ITraceActivity* gemm = kernels.at("gemm");
  EXPECT_EQ(gemm->linkedActivity(), mm) << "key_averages() attributes gemm's time to aten::mm";
  EXPECT_EQ(kernels.at("relu")->linkedActivity(), relu);
  EXPECT_EQ(kernels.at("orphan")->linkedActivity(), nullptr);
  EXPECT_EQ(gemm->deviceId(), 0);
  EXPECT_EQ(gemm->resourceId(), kStream);
  EXPECT_EQ(gemm->correlationId(), 101);
  EXPECT_EQ(gemm->duration(), 20000);
  EXPECT_EQ(launches.at(101)->linkedActivity(), mm);
  EXPECT_EQ(launches.at(101)->resourceId(), libkineto::systemThreadId());

  // Flows: launch starts, kernel ends, same id; the kernel without a launch has none.
  EXPECT_EQ(launches.at(101)->flowType(), static_cast<int>(libkineto::kLinkAsyncCpuGpu));
  EXPECT_TRUE(launches.at(101)->flowStart());
  EXPECT_EQ(launches.at(101)->flowId(), 101);
  EXPECT_EQ(gemm->flowType(), static_cast<int>(libkineto::kLinkAsyncCpuGpu));
  EXPECT_FALSE(gemm->flowStart());
  EXPECT_EQ(gemm->flowId(), 101);
  EXPECT_EQ(kernels.at("orphan")->flowType(), 0);
  // GPU time sits in the ops' time base: after its launch.
  EXPECT_GT(gemm->timestamp(), launches.at(101)->timestamp());

  // The user annotation around both launches gets its GPU span on the stream, from the
  // first to the last kernel launched inside it (key_averages() gives it device time).
  std::vector<const ITraceActivity*> annotations;
  for (const ITraceActivity* a : all) {
    if (a->type() == ActivityType::GPU_USER_ANNOTATION) annotations.push_back(a);
  }
  ASSERT_EQ(annotations.size(), 1u);
  EXPECT_EQ(annotations[0]->name(), "ProfilerStep#3");
  EXPECT_EQ(annotations[0]->linkedActivity(), nullptr) << "unlinked, as libkineto leaves it";
  EXPECT_EQ(annotations[0]->getMetadataValue("External id"), std::to_string(step->id));
  EXPECT_EQ(annotations[0]->resourceId(), kStream);
  EXPECT_EQ(annotations[0]->timestamp(), gemm->timestamp());
  EXPECT_EQ(annotations[0]->timestamp() + annotations[0]->duration(),
            kernels.at("relu")->timestamp() + kernels.at("relu")->duration());
}

TEST(LibkinetoBackendTest, SavedTraceHoldsTheOpsWithMetadataAddedAfterStopAndTheBackendsOwn) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  ActivityProfiler backend = makeBackend(gpu);
  backend.prepareTrace(kTorchCudaTypes, "");
  backend.addMetadata("before_start", "1");
  backend.startTrace();
  const int64_t opStart = internal::clockNowNs();
  backend.pushCorrelationId(7);
  const int64_t launchEnd = recordApiCall(101, kLaunchKernel, CallEffect::Kernel).second;
  backend.popCorrelationId();
  const int64_t opEnd = internal::clockNowNs();
  gpu->queue([t = launchEnd + 1000](GpuBatch& batch, StringTable& strings) {
    batch.records.kernels = {kernel(101, t, strings, "gemm")};
  });
  while (internal::clockNowNs() <= launchEnd + 22000) {  // the kernel ran before the stop
  }
  backend.recordThreadInfo();
  auto buffer = std::make_unique<CpuTraceBuffer>();
  addOp(*buffer, ActivityType::USER_ANNOTATION, "fwd", 6, opStart, opEnd);
  GenericTraceActivity* mm = addOp(*buffer, ActivityType::CPU_OP, "aten::mm", 7, opStart, opEnd);
  backend.transferCpuTrace(std::move(buffer));
  auto trace = backend.stopTrace();

  // What PyTorch does after stopTrace(): metadata on its ops, then on the trace.
  mm->addMetadata("Input Dims", "[[8, 512], [512, 16]]");
  mm->addMetadataQuoted("Call stack", "train.py(12): step");
  mm->addMetadata("Ev Idx", 0);
  backend.addMetadata("distributedInfo", R"({"rank": 0, "world_size": 1})");

  testing::TempDir dir;
  const std::string path = (dir / "torch.json").string();
  trace->save(path);
  const nlohmann::json json = readJson(path);
  EXPECT_EQ(json["distributedInfo"]["rank"], 0);
  EXPECT_EQ(json["before_start"], 1);
  EXPECT_EQ(json["kinetrace_backend"], "libkineto_api");
  EXPECT_EQ(json["kinetrace_cupti_dropped_records"], 0) << "losses are in the trace";
  EXPECT_TRUE(json.contains("kinetrace_gpu_clock_offset_bound_ns"));

  const nlohmann::json* op = nullptr;
  const nlohmann::json* gemm = nullptr;
  std::multiset<uint64_t> flowStarts, flowEnds;
  for (const nlohmann::json& e : json["traceEvents"]) {
    if (e.value("name", "") == "aten::mm" && e.value("cat", "") == "cpu_op") op = &e;
    if (e.value("name", "") == "gemm") gemm = &e;
    if (e.value("ph", "") == "s") flowStarts.insert(e["id"].get<uint64_t>());
    if (e.value("ph", "") == "f") flowEnds.insert(e["id"].get<uint64_t>());
  }
  ASSERT_NE(op, nullptr);
  ASSERT_NE(gemm, nullptr);
  bool annotationWritten = false;
  for (const nlohmann::json& e : json["traceEvents"]) {
    annotationWritten |=
        e.value("cat", "") == "gpu_user_annotation" && e.value("name", "") == "fwd";
  }
  EXPECT_TRUE(annotationWritten) << "the GPU span of the user annotation is in the saved trace";
  EXPECT_EQ((*op)["args"]["Input Dims"], nlohmann::json::parse("[[8, 512], [512, 16]]"));
  EXPECT_EQ((*op)["args"]["Call stack"], "train.py(12): step");
  EXPECT_EQ((*op)["args"]["External id"], 7);
  EXPECT_EQ((*gemm)["args"]["External id"], 7) << "the kernel names its op as libkineto does";
  EXPECT_EQ(flowStarts, flowEnds) << "no unpaired flows";
  EXPECT_EQ(flowStarts.count(101), 1u);
}

TEST(LibkinetoBackendTest, AStopWithoutAStartStillReturnsTheOpsAndSavesThem) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  ActivityProfiler backend = makeBackend(gpu);
  auto buffer = std::make_unique<CpuTraceBuffer>();
  GenericTraceActivity* op = addOp(*buffer, ActivityType::CPU_OP, "aten::add", 1, 1000, 2000);
  backend.transferCpuTrace(std::move(buffer));
  auto trace = backend.stopTrace();
  ASSERT_NE(trace, nullptr) << "PyTorch reads activities() of whatever stopTrace() returns";
  ASSERT_EQ(trace->activities()->size(), 1u);
  EXPECT_EQ(trace->activities()->front(), op);
  testing::TempDir dir;
  trace->save((dir / "cpu.json").string());
  const nlohmann::json json = readJson((dir / "cpu.json").string());
  bool found = false;
  for (const auto& e : json["traceEvents"]) found |= e.value("name", "") == "aten::add";
  EXPECT_TRUE(found);
  EXPECT_TRUE(json.contains("kinetrace_note"));
}

TEST(LibkinetoBackendTest, SavingToAnUnwritablePathSaysWhichPath) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  ActivityProfiler backend = makeBackend(gpu);
  auto trace = backend.stopTrace();
  try {
    trace->save("/nonexistent-dir/x/trace.json");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/trace.json"), std::string::npos)
        << e.what();
  }
}

TEST(LibkinetoBackendTest, PushedIdsNestAndWinOverKinetraceRangesAtLaunch) {
  using detail::HostRecorder;
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), 0u);
  internal::pushCorrelationId(5);
  internal::pushCorrelationId(6);
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), 6u);
  internal::popCorrelationId();
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), 5u);
  internal::popCorrelationId();
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), 0u);
  internal::popCorrelationId();  // one pop too many is harmless
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), 0u);
  // Deeper than the stack keeps: the depth is counted and the top comes back after the pops.
  for (uint64_t i = 1; i <= detail::kMaxPushedCorrelations + 3; ++i) internal::pushCorrelationId(i);
  for (int i = 0; i < 3; ++i) internal::popCorrelationId();
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), detail::kMaxPushedCorrelations);
  for (uint32_t i = 0; i < detail::kMaxPushedCorrelations; ++i) internal::popCorrelationId();
  EXPECT_EQ(HostRecorder::pushedCorrelationOutOfLine(), 0u);
}

TEST(LibkinetoApiTest, IdleCallsAreSafeAndSessionsRunBackToBackFromDifferentThreads) {
  libkineto_init(/*cpuOnly=*/true, /*logOnError=*/true);
  libkineto::LibkinetoApi& api = libkineto::api();
  ASSERT_TRUE(api.isProfilerRegistered());
  api.initProfilerIfRegistered();
  EXPECT_TRUE(api.isProfilerInitialized());
  api.activityProfiler().step();  // idle: nothing to do, nothing breaks
  api.resetKinetoTLS();
  for (int session = 0; session < 4; ++session) {
    std::thread([&api, session] {
      api.activityProfiler().prepareTrace({ActivityType::CPU_OP}, "");
      api.activityProfiler().startTrace();
      EXPECT_TRUE(api.activityProfiler().isActive()) << "session " << session;
      auto buffer = std::make_unique<CpuTraceBuffer>();
      addOp(*buffer, ActivityType::CPU_OP, "op" + std::to_string(session), session + 1, 10, 20);
      api.activityProfiler().transferCpuTrace(std::move(buffer));
      auto trace = api.activityProfiler().stopTrace();
      ASSERT_NE(trace, nullptr);
      EXPECT_EQ(trace->activities()->size(), 1u);
    }).join();
  }
  api.activityProfiler().step();
}

TEST(LibkinetoApiTest, ExitingWhileATraceRecordsEndsItCleanly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        libkineto_init(/*cpuOnly=*/true, /*logOnError=*/true);
        libkineto::api().activityProfiler().prepareTrace({ActivityType::CPU_OP}, "");
        libkineto::api().activityProfiler().startTrace();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "exited while a trace was recording");
}

TEST(LibkinetoApiTest, ActivityTypeNamesAreTheTraceCategories) {
  EXPECT_STREQ(libkineto::toString(ActivityType::CONCURRENT_KERNEL), "kernel");
  EXPECT_STREQ(libkineto::toString(ActivityType::CPU_OP), "cpu_op");
  EXPECT_STREQ(libkineto::toString(ActivityType::GPU_USER_ANNOTATION), "gpu_user_annotation");
  for (ActivityType type : libkineto::activityTypes()) {
    EXPECT_EQ(libkineto::toActivityType(libkineto::toString(type)), type);
  }
  EXPECT_THROW(libkineto::toActivityType("warp_drive"), std::invalid_argument);
  EXPECT_EQ(libkineto::defaultActivityTypes().back(), ActivityType::CUDA_EVENT);
}

TEST(LibkinetoApiTest, ClockConverterIsTheIdentityUntilTheFrameworkSetsOne) {
  auto& converter = libkineto::get_time_converter();
  EXPECT_EQ(converter(12345), 12345);
  EXPECT_EQ(kineto::measureClockOffsetNs(), 0) << "no converter set: nothing to shift";
}

}  // namespace
}  // namespace kinetrace
