// Events per second that writeTrace (EventWriter + a file sink) writes to a file, on one
// core, and the bytes each takes, in each output format: the second argument is the format
// (0 Chrome JSON, 1 JSON gzip, 2 Perfetto .pftrace), also shown as the label.
// Target: 1 million kernel events per second, goal 2 million; a .pftrace at most a quarter
// of the JSON's size and written at least as fast.
//
//   bench_json_sink --benchmark_counters_tabular=true
//
// items_per_second counts trace records written (one JSON event each; the launch bench
// writes four events per item: call, kernel, and the two ends of the flow).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "output/atomic_file.h"
#include "output/chrome_json_sink.h"
#include "output/trace_events.h"

namespace kinetrace::detail {
namespace {

constexpr int64_t kStart = 1'750'000'000'000'000'000;
constexpr uint32_t kPid = 4242;

constexpr const char* kFormatExtensions[] = {".json", ".json.gz", ".pftrace"};

std::string benchPath(int64_t format) {
  return "/tmp/kinetrace_bench_" + std::to_string(::getpid()) + kFormatExtensions[format];
}

// Kernel names as CUPTI reports them: long demangled template signatures.
StringId kernelName(TraceData& trace, int variant) {
  return trace.tables.strings.intern(
      "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_"
      "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8::Params, "
      "at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned "
      "int, float, 4>) [variant " +
      std::to_string(variant) + "]");
}

KernelRecord makeKernel(TraceData& trace, uint32_t i) {
  KernelRecord k;
  const int64_t t = kStart + int64_t{i} * 2'345;
  k.at.startNs = t + 1'000;
  k.at.endNs = t + 2'100;
  k.at.externalId = 1'000 + i / 8;
  k.at.correlationId = 50'000 + i;
  k.at.deviceId = i % 8;
  k.at.contextId = 1;
  k.at.streamId = 7 + i % 4;
  k.queuedNs = t + 900;
  k.name = kernelName(trace, static_cast<int>(i % 64));
  k.grid[0] = 1024;
  k.grid[1] = 8;
  k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registersPerThread = 128;
  k.staticSharedBytes = 16'384;
  k.dynamicSharedBytes = 49'152;
  k.blocksPerSm = 7.757576f;
  k.warpsPerSm = 62.060608f;
  k.occupancyPercent = 48.5f;
  return k;
}

TraceData kernelTrace(uint32_t count) {
  TraceData trace;
  trace.tables.pid = kPid;
  trace.startNs = kStart;
  trace.stopNs = kStart + int64_t{count} * 2'345 + 10'000;
  trace.records.kernels.reserve(count);
  for (uint32_t i = 0; i < count; ++i) trace.records.kernels.push_back(makeKernel(trace, i));
  return trace;
}

TraceData rangeTrace(uint32_t count) {
  static const char* const kNames[] = {"aten::mm",
                                       "aten::add_",
                                       "aten::layer_norm",
                                       "ProfilerStep#12",
                                       "aten::_scaled_dot_product_attention",
                                       "forward",
                                       "backward",
                                       "optimizer.step"};
  TraceData trace;
  trace.tables.pid = kPid;
  trace.startNs = kStart;
  trace.stopNs = kStart + int64_t{count} * 1'000 + 10'000;
  for (uint32_t t = 0; t < 8; ++t) trace.tables.threads.push_back(ThreadInfo{kPid, 5000 + t, 0});
  trace.records.ranges.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    RangeRecord r;
    r.startNs = kStart + int64_t{i} * 1'000 + 17;
    r.endNs = r.startNs + 731;
    r.externalId = i + 1;
    r.name = trace.tables.strings.intern(kNames[i % 8]);
    r.thread = i % 8;
    r.category = i % 3 == 0 ? RangeCategory::UserAnnotation : RangeCategory::CpuOp;
    trace.records.ranges.push_back(r);
  }
  return trace;
}

// Each item is a launch call and its kernel joined by an ac2g flow: the common shape of a
// real trace.
TraceData launchTrace(uint32_t count) {
  TraceData trace = kernelTrace(count);
  trace.tables.threads.push_back(ThreadInfo{kPid, kPid, 0});
  const auto thread = static_cast<uint32_t>(trace.tables.threads.size() - 1);
  const StringId launchName = trace.tables.strings.intern("cudaLaunchKernel");
  trace.records.apiCalls.reserve(count);
  trace.records.flows.reserve(count);
  for (KernelRecord& k : trace.records.kernels) {
    ApiCallRecord call;
    call.startNs = k.at.startNs - 900;
    call.endNs = call.startNs + 600;
    call.externalId = k.at.externalId;
    call.correlationId = k.at.correlationId;
    call.callbackId = 211;
    call.thread = thread;
    call.name = launchName;
    call.effect = CallEffect::Kernel;
    k.at.hasLaunchCall = true;
    trace.records.apiCalls.push_back(call);
    trace.records.flows.push_back(FlowRecord{call.startNs, call.correlationId, thread});
  }
  return trace;
}

void saveTrace(benchmark::State& state, const TraceData& trace) {
  const std::string path = benchPath(state.range(1));
  state.SetLabel(kFormatExtensions[state.range(1)]);
  for (auto _ : state) {
    auto sink = openSink(path);
    writeTrace(trace, path, {}, *sink);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  if (FILE* file = std::fopen(path.c_str(), "rb")) {
    std::fseek(file, 0, SEEK_END);
    state.counters["bytes_per_item"] = static_cast<double>(std::ftell(file)) / state.range(0);
    std::fclose(file);
  }
  std::remove(path.c_str());
}

// Discards the bytes: measures serialisation alone, without the file system.
class NullOutput : public ByteOutput {
 public:
  void write(const char* data, std::size_t size) override {
    benchmark::DoNotOptimize(data);
    bytes_ += size;
  }
  void commit() override {}

 private:
  std::size_t bytes_ = 0;
};

void BM_KernelEventsSerialiseOnly(benchmark::State& state) {
  const TraceData trace = kernelTrace(static_cast<uint32_t>(state.range(0)));
  for (auto _ : state) {
    ChromeJsonSink sink(std::make_unique<NullOutput>());
    writeTrace(trace, "null", {}, sink);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_KernelEvents(benchmark::State& state) {
  saveTrace(state, kernelTrace(static_cast<uint32_t>(state.range(0))));
}
void BM_HostRanges(benchmark::State& state) {
  saveTrace(state, rangeTrace(static_cast<uint32_t>(state.range(0))));
}
void BM_LaunchKernelAndFlow(benchmark::State& state) {
  saveTrace(state, launchTrace(static_cast<uint32_t>(state.range(0))));
}

// What torch.profiler records per op with record_shapes=True, events built directly (no
// EventWriter): a cpu_op with its shapes and types as JSON text, the cudaLaunchKernel it
// makes, the kernel, and the launch arrow's two ends. Shapes repeat from step to step, as
// in training. One item is the five events.
void BM_TorchStyleOps(benchmark::State& state) {
  static const char* const kOps[] = {"aten::linear", "aten::add",     "aten::layer_norm",
                                     "aten::gelu",   "aten::softmax", "aten::matmul"};
  static const char* const kDims[] = {
      "[[32, 512], [2048, 512], [2048]]", "[[32, 2048], [32, 2048], []]",
      "[[32, 512], [512], [512], [512]]", "[[32, 2048]]",
      "[[32, 8, 128, 128], [], []]",      "[[32, 8, 128, 64], [32, 8, 64, 128]]"};
  static const char* const kTypes[] = {
      "[\"float\", \"float\", \"float\"]",       "[\"float\", \"float\", \"Scalar\"]",
      "[\"float\", \"\", \"float\", \"float\"]", "[\"float\"]",
      "[\"float\", \"Scalar\", \"\"]",           "[\"float\", \"float\"]"};
  static const char* const kKernels[] = {
      "ampere_sgemm_128x64_tn",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3>)",
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
      "float, float const*, float const*, float const*, float*, float*, float*)",
      "void at::native::vectorized_elementwise_kernel<4, "
      "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
      "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
      "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
      "const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
      "void (anonymous namespace)::softmax_warp_forward<float, float, float, 7, false, "
      "false>(float*, float const*, int, int, int, bool const*, int, bool)",
      "ampere_sgemm_128x128_nn"};
  const auto items = static_cast<int64_t>(state.range(0));
  const std::string path = benchPath(state.range(1));
  state.SetLabel(kFormatExtensions[state.range(1)]);
  for (auto _ : state) {
    std::unique_ptr<Sink> sink = openSink(path);
    sink->begin(TraceHeader{path, kStart, {{"schemaVersion", 1}}});
    for (int64_t i = 0; i < items; ++i) {
      const int op = static_cast<int>(i % 6);
      const int64_t t = kStart + i * 5'000;
      const Arg opArgs[] = {{"External id", i + 1},
                            {"Record function id", int64_t{0}},
                            {"Ev Idx", i % 1000},
                            {"Input Dims", JsonText{kDims[op]}},
                            {"Input type", JsonText{kTypes[op]}},
                            {"Concrete Inputs", JsonText{"[\"\", \"\", \"\"]"}}};
      Event e;
      e.phase = Phase::Complete;
      e.name = kOps[op];
      e.category = "cpu_op";
      e.pid = kPid;
      e.tid = kPid;
      e.timestampNs = t;
      e.durationNs = 3'100;
      e.args = opArgs;
      e.argCount = 6;
      sink->write(e);
      const Arg callArgs[] = {
          {"External id", i + 1}, {"cbid", int64_t{211}}, {"correlation", i + 9}};
      e.name = "cudaLaunchKernel";
      e.category = "cuda_runtime";
      e.timestampNs = t + 1'000;
      e.durationNs = 1'500;
      e.args = callArgs;
      e.argCount = 3;
      sink->write(e);
      const Arg kernelArgs[] = {{"External id", i + 1},
                                {"queued", int64_t{0}},
                                {"device", int64_t{0}},
                                {"context", int64_t{1}},
                                {"stream", int64_t{7}},
                                {"correlation", i + 9},
                                {"registers per thread", int64_t{32}},
                                {"shared memory", int64_t{0}},
                                {"blocks per SM", 0.5},
                                {"warps per SM", 2.0},
                                {"grid", Dim3{1024, 1, 1}},
                                {"block", Dim3{128, 1, 1}},
                                {"est. achieved occupancy %", 25.0}};
      e.name = kKernels[op];
      e.category = "kernel";
      e.pid = 0;
      e.tid = 7;
      e.timestampNs = t + 4'000;
      e.durationNs = 2'345;
      e.args = kernelArgs;
      e.argCount = 13;
      sink->write(e);
      Event flow;
      flow.phase = Phase::FlowEnd;
      flow.name = flow.category = "ac2g";
      flow.pid = 0;
      flow.tid = 7;
      flow.timestampNs = t + 4'000;
      flow.flowId = static_cast<uint64_t>(i + 9);
      sink->write(flow);
      flow.phase = Phase::FlowStart;
      flow.pid = kPid;
      flow.tid = kPid;
      flow.timestampNs = t + 1'000;
      sink->write(flow);
    }
    sink->end({});
  }
  state.SetItemsProcessed(state.iterations() * items);
  if (FILE* file = std::fopen(path.c_str(), "rb")) {
    std::fseek(file, 0, SEEK_END);
    state.counters["bytes_per_item"] = static_cast<double>(std::ftell(file)) / items;
    std::fclose(file);
  }
  std::remove(path.c_str());
}

// Wall time for the file benchmarks: part of a write's cost lands in kernel threads
// (writeback, freeing the replaced file) that the process CPU clock does not see.
BENCHMARK(BM_KernelEvents)
    ->ArgsProduct({{200'000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_KernelEventsSerialiseOnly)->Arg(200'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostRanges)
    ->ArgsProduct({{200'000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TorchStyleOps)
    ->ArgsProduct({{100'000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LaunchKernelAndFlow)
    ->ArgsProduct({{200'000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// A short trace (200 events, the size of the census program's): what a format costs to set
// up and finish, file creation and rename included, rather than per event.
BENCHMARK(BM_LaunchKernelAndFlow)
    ->ArgsProduct({{50}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace kinetrace::detail

BENCHMARK_MAIN();
