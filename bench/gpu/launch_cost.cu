// What tracing costs per kernel launch, without Python in the way: batches of empty
// kernels launched back to back, each batch ended by a stream synchronisation, the shape of
// one training step of a launch-bound program.
//
//   launch_cost [--batches 300] [--kernels 300] [--warmup 30] [--functions 1] [--param-bytes 16]
//
//   --functions F     launches cycle through F distinct kernel functions (1-64), as a
//                     framework's do (a PyTorch training step launches about 44)
//   --param-bytes B   each kernel takes a B-byte parameter block: 16, 1024 or 4000
//                     (framework kernels pass structs of hundreds of bytes)
//
// Run it bare, under `kinetrace run`, and with CUDA_INJECTION64_PATH=libcupti_floor.so.
// Prints one line:
//
//   RESULT launch_ns=2100.0 batch_us=650.0 sync_us=12.0 get_device_ns=20.0 stream_query_ns=300.0
//          kernels=300 batches=300
//
//   launch_ns  median over batches of (time to enqueue the batch) / kernels: the host cost
//              of one launch, what a launch-bound program pays per kernel
//   batch_us   median time from the first launch to the synchronisation's return
//   sync_us    median time spent in the synchronisation alone
//   get_device_ns, stream_query_ns
//              median cost of a cudaGetDevice() (runtime only) and of a cudaStreamQuery() on
//              the idle stream (runtime and driver), timed per batch over `kernels` calls:
//              what a tracer's mere presence adds to every CUDA call, launch or not
//              (frameworks make several such calls per kernel)

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace {

template <int Bytes>
struct ParameterBlock {
  unsigned char bytes[Bytes];
};

// Does nothing; one instantiation per (Id, Bytes) is one distinct function to the driver.
template <int Id, int Bytes>
__global__ void emptyKernel(ParameterBlock<Bytes> block, int* sink) {
  if (sink != nullptr && threadIdx.x == 1024) *sink = block.bytes[Id % Bytes];  // never true
}

constexpr int kMaxFunctions = 64;

template <int Bytes, int... Ids>
std::vector<const void*> kernelTable(std::integer_sequence<int, Ids...>) {
  return {reinterpret_cast<const void*>(&emptyKernel<Ids, Bytes>)...};
}

std::vector<const void*> kernelsWithParameterBytes(int bytes) {
  auto ids = std::make_integer_sequence<int, kMaxFunctions>();
  switch (bytes) {
    case 16:
      return kernelTable<16>(ids);
    case 1024:
      return kernelTable<1024>(ids);
    case 4000:
      return kernelTable<4000>(ids);
    default:
      return {};
  }
}

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "launch_cost: %s failed: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

int argument(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = argument(argc, argv, "--batches", 300);
  const int kernels = argument(argc, argv, "--kernels", 300);
  const int warmup = argument(argc, argv, "--warmup", 30);
  const int functions = argument(argc, argv, "--functions", 1);
  const int parameterBytes = argument(argc, argv, "--param-bytes", 16);
  const std::vector<const void*> table = kernelsWithParameterBytes(parameterBytes);
  if (batches <= 0 || kernels <= 0 || warmup < 0 || functions < 1 || functions > kMaxFunctions ||
      table.empty()) {
    std::fprintf(stderr,
                 "usage: launch_cost [--batches N>0] [--kernels N>0] [--warmup N>=0] "
                 "[--functions 1-64] [--param-bytes 16|1024|4000]\n");
    return 2;
  }
  // Argument storage big enough for the largest block; its contents do not matter.
  std::vector<unsigned char> parameters(4000, 0);
  int* noSink = nullptr;
  void* arguments[] = {parameters.data(), &noSink};
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  using Clock = std::chrono::steady_clock;
  auto micros = [](Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
  };
  std::vector<double> launchNs, batchUs, syncUs, getDeviceNs, streamQueryNs;
  for (int batch = 0; batch < warmup + batches; ++batch) {
    Clock::time_point start = Clock::now();
    for (int k = 0; k < kernels; ++k) {
      check(cudaLaunchKernel(table[k % functions], dim3(1), dim3(32), arguments, 0, stream),
            "cudaLaunchKernel");
    }
    Clock::time_point launched = Clock::now();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    Clock::time_point done = Clock::now();
    check(cudaGetLastError(), "kernel launch");

    int device = -1;
    Clock::time_point callsStart = Clock::now();
    for (int k = 0; k < kernels; ++k) check(cudaGetDevice(&device), "cudaGetDevice");
    Clock::time_point gotDevice = Clock::now();
    for (int k = 0; k < kernels; ++k) check(cudaStreamQuery(stream), "cudaStreamQuery");
    Clock::time_point queried = Clock::now();

    if (batch < warmup) continue;
    launchNs.push_back(micros(launched - start) * 1000.0 / kernels);
    batchUs.push_back(micros(done - start));
    syncUs.push_back(micros(done - launched));
    getDeviceNs.push_back(micros(gotDevice - callsStart) * 1000.0 / kernels);
    streamQueryNs.push_back(micros(queried - gotDevice) * 1000.0 / kernels);
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::printf(
      "RESULT launch_ns=%.1f batch_us=%.1f sync_us=%.1f get_device_ns=%.1f stream_query_ns=%.1f "
      "kernels=%d batches=%d functions=%d param_bytes=%d\n",
      median(launchNs), median(batchUs), median(syncUs), median(getDeviceNs), median(streamQueryNs),
      kernels, batches, functions, parameterBytes);
  return 0;
}
