// A long, steady storm of tiny kernels, copies and memsets, for proving that a tracer's
// memory stays bounded however long it records. It does not link kinetrace: trace it from
// outside (`kinetrace run -- kernel_storm ...`; bench/gpu/storm.sh does).
//
//   kernel_storm [--seconds 600] [--rate 10000] [--streams 4] [--copies 10] [--memsets 10]
//                [--slice-ms 10] [--rss FILE] [--nvtx-steps 1] [--reset-at S]
//
//   --seconds S    how long to run (default 600: about 6 million kernels at the default rate)
//   --rate N       kernels per second, all streams together (default 10000)
//   --streams K    streams the kernels are spread over, round robin (1-16, default 4)
//   --copies N     host<->device copies per second, pinned memory, alternately HtoD and DtoH
//   --memsets N    device memsets per second
//   --slice-ms M   pacing period: every M ms one burst of launches, then a synchronisation of
//                  every stream, then a sleep (clock_nanosleep, absolute deadlines) until the
//                  next period; a burst launches what the schedule owes, at most 10 periods' worth
//   --rss FILE     a sampler thread writes the process's resident set size once a second
//                  (CSV with header "seconds,rss_bytes", from /proc/self/statm)
//   --nvtx-steps 1 each pacing period is a step of a training loop: an NVTX range "step K"
//                  (K from 0) from before its burst to after its synchronisation, so a tracer
//                  can count steps (kinetrace run --schedule, kinetrace trigger --steps)
//   --reset-at S   after S seconds, cudaDeviceReset(): the CUDA context is destroyed under
//                  the tracer, then streams and buffers are made again and the storm goes on
//
// Kernels cycle through four distinct functions; each adds 1 to its own device counter, and
// the counters are checked against the launches at the end. At the end it prints one line with
// exact counts of what it launched (only calls that returned cudaSuccess are counted; the
// counters' zeroing memset and read-back copy are included):
//
//   STORM kernels=6000000 memcpys=6001 memsets=6001 seconds=600.0
//
// Exit status: 0, 1 after a CUDA error (what failed is printed), 2 for a usage mistake.

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kFunctions = 4;
constexpr size_t kCopyBytes = 4096;

// Tiny on purpose: the launch is the event, not the work.
template <int Id>
__global__ void stormKernel(unsigned long long* counters) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&counters[Id], 1ull);
}

const void* const kKernels[kFunctions] = {
    reinterpret_cast<const void*>(&stormKernel<0>), reinterpret_cast<const void*>(&stormKernel<1>),
    reinterpret_cast<const void*>(&stormKernel<2>), reinterpret_cast<const void*>(&stormKernel<3>)};

struct Options {
  double seconds = 600;
  long long rate = 10000;
  int streams = 4;
  long long copies = 10;
  long long memsets = 10;
  int sliceMs = 10;
  std::string rssPath;
  bool nvtxSteps = false;
  double resetAt = -1;  // seconds; < 0: never
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "kernel_storm: %s\n"
               "usage: kernel_storm [--seconds S>0] [--rate N>0] [--streams 1-16] [--copies N>=0]\n"
               "                    [--memsets N>=0] [--slice-ms 1-1000] [--rss FILE]\n"
               "                    [--nvtx-steps 0|1] [--reset-at S]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (i + 1 >= argc) usage(("option " + name + " needs a value").c_str());
    const char* value = argv[++i];
    char* end = nullptr;
    if (name == "--rss") {
      o.rssPath = value;
      continue;
    }
    const double number = std::strtod(value, &end);
    if (end == value || *end != '\0') usage(("option " + name + " takes a number").c_str());
    if (name == "--seconds") {
      o.seconds = number;
    } else if (name == "--rate") {
      o.rate = static_cast<long long>(number);
    } else if (name == "--streams") {
      o.streams = static_cast<int>(number);
    } else if (name == "--copies") {
      o.copies = static_cast<long long>(number);
    } else if (name == "--memsets") {
      o.memsets = static_cast<long long>(number);
    } else if (name == "--slice-ms") {
      o.sliceMs = static_cast<int>(number);
    } else if (name == "--nvtx-steps") {
      o.nvtxSteps = number != 0;
    } else if (name == "--reset-at") {
      o.resetAt = number;
    } else {
      usage(("unknown option " + name).c_str());
    }
  }
  if (!(o.seconds > 0) || o.rate <= 0 || o.streams < 1 || o.streams > 16 || o.copies < 0 ||
      o.memsets < 0 || o.sliceMs < 1 || o.sliceMs > 1000) {
    usage("a value is out of range");
  }
  return o;
}

// Counts of what was launched successfully.
struct Counts {
  long long kernels = 0;
  long long memcpys = 0;
  long long memsets = 0;
};

void fail(const char* what, cudaError_t status) {
  std::fprintf(stderr, "kernel_storm: %s failed: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail(what, status);
}

// Resident set size in bytes, from /proc/self/statm (second field, in pages).
long long residentBytes() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  long long pages = 0, resident = -1;
  if (std::fscanf(statm, "%lld %lld", &pages, &resident) != 2) resident = -1;
  std::fclose(statm);
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

// Writes "seconds,rss_bytes" once a second until stopped; flushed line by line so that a run
// that dies still leaves its samples.
class RssSampler {
 public:
  RssSampler(const std::string& path, std::chrono::steady_clock::time_point start)
      : file_(std::fopen(path.c_str(), "w")), start_(start) {
    if (file_ == nullptr) {
      std::fprintf(stderr, "kernel_storm: cannot write %s\n", path.c_str());
      std::exit(2);
    }
    std::fprintf(file_, "seconds,rss_bytes\n");
    sample();
    thread_ = std::thread([this] { run(); });
  }
  ~RssSampler() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    sample();  // the last word, after the storm
    std::fclose(file_);
  }

 private:
  void sample() {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(file_, "%.3f,%lld\n", seconds, residentBytes());
    std::fflush(file_);
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    auto next = std::chrono::steady_clock::now();
    while (true) {
      next += std::chrono::seconds(1);
      if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
      sample();
    }
  }

  FILE* file_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

void addNanoseconds(timespec& t, long long ns) {
  t.tv_nsec += ns % 1000000000LL;
  t.tv_sec += ns / 1000000000LL;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_nsec -= 1000000000L;
    t.tv_sec += 1;
  }
}

// What the storm launches into: made at the start and again after a device reset.
struct Resources {
  std::vector<cudaStream_t> streams;
  unsigned long long* counters = nullptr;  // one per kernel function, counted on the device
  unsigned char* deviceBytes = nullptr;
  unsigned char* hostBytes = nullptr;
};

Resources makeResources(int streamCount, Counts& counts) {
  Resources r;
  r.streams.resize(streamCount);
  for (cudaStream_t& stream : r.streams) {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  check(cudaMalloc(&r.counters, kFunctions * sizeof(unsigned long long)), "cudaMalloc");
  check(cudaMalloc(&r.deviceBytes, kCopyBytes), "cudaMalloc");
  check(cudaMallocHost(&r.hostBytes, kCopyBytes), "cudaMallocHost");
  check(cudaMemsetAsync(r.counters, 0, kFunctions * sizeof(unsigned long long), r.streams[0]),
        "cudaMemsetAsync");
  ++counts.memsets;
  check(cudaStreamSynchronize(r.streams[0]), "cudaStreamSynchronize");
  return r;
}

// The kernels the device counted since the resources were made (one copy back).
unsigned long long deviceCount(Resources& r, Counts& counts) {
  unsigned long long ran[kFunctions] = {};
  check(cudaMemcpy(r.hostBytes, r.counters, sizeof(ran), cudaMemcpyDeviceToHost), "cudaMemcpy");
  ++counts.memcpys;
  std::memcpy(ran, r.hostBytes, sizeof(ran));
  unsigned long long total = 0;
  for (unsigned long long n : ran) total += n;
  return total;
}

void freeResources(Resources& r) {
  for (cudaStream_t stream : r.streams) check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  check(cudaFree(r.counters), "cudaFree");
  check(cudaFree(r.deviceBytes), "cudaFree");
  check(cudaFreeHost(r.hostBytes), "cudaFreeHost");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Counts counts;
  Resources res = makeResources(o.streams, counts);
  unsigned long long ranTotal = 0;  // counted by the device, over every reset

  std::fprintf(stderr,
               "kernel_storm: %g s, %lld kernels/s on %d streams in bursts every %d ms, "
               "%lld copies/s, %lld memsets/s%s\n",
               o.seconds, o.rate, o.streams, o.sliceMs, o.copies, o.memsets,
               o.nvtxSteps ? ", one NVTX step range per burst" : "");

  const auto start = std::chrono::steady_clock::now();
  RssSampler* sampler = o.rssPath.empty() ? nullptr : new RssSampler(o.rssPath, start);

  const long long sliceNs = o.sliceMs * 1000000LL;
  const long long slices = std::max(1LL, static_cast<long long>(o.seconds * 1000.0 / o.sliceMs));
  const long long resetSlice =
      o.resetAt < 0 ? -1 : std::max(1LL, static_cast<long long>(o.resetAt * 1000.0 / o.sliceMs));
  const long long maxBurst = std::max(1LL, 10 * o.rate * o.sliceMs / 1000);
  long long copiesIssued = 0, memsetsIssued = 0, next = 0;
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  char stepName[32];
  for (long long slice = 1; slice <= slices; ++slice) {
    if (slice == resetSlice) {
      // The context goes away under the tracer, with work done in it; then the storm goes on
      // in a new one.
      ranTotal += deviceCount(res, counts);
      check(cudaDeviceReset(), "cudaDeviceReset");
      res = makeResources(o.streams, counts);
      std::fprintf(stderr, "kernel_storm: device reset after %lld kernels\n", counts.kernels);
    }
    if (o.nvtxSteps) {
      std::snprintf(stepName, sizeof stepName, "step %lld", slice - 1);
      nvtxRangePushA(stepName);
    }
    void* arguments[] = {&res.counters};
    // What the schedule owes by the end of this slice, whole numbers, no drift.
    const long long kernelsDue = o.rate * o.sliceMs * slice / 1000;
    const long long burst = std::min(maxBurst, kernelsDue - counts.kernels);
    for (long long k = 0; k < burst; ++k, ++next) {
      cudaError_t status = cudaLaunchKernel(kKernels[next % kFunctions], dim3(1), dim3(32),
                                            arguments, 0, res.streams[next % o.streams]);
      if (status != cudaSuccess) fail("cudaLaunchKernel", status);
      ++counts.kernels;
    }
    for (; copiesIssued < o.copies * o.sliceMs * slice / 1000; ++copiesIssued) {
      const bool toDevice = copiesIssued % 2 == 0;
      cudaStream_t stream = res.streams[copiesIssued % o.streams];
      cudaError_t status =
          toDevice ? cudaMemcpyAsync(res.deviceBytes, res.hostBytes, kCopyBytes,
                                     cudaMemcpyHostToDevice, stream)
                   : cudaMemcpyAsync(res.hostBytes, res.deviceBytes, kCopyBytes,
                                     cudaMemcpyDeviceToHost, stream);
      if (status != cudaSuccess) fail("cudaMemcpyAsync", status);
      ++counts.memcpys;
    }
    for (; memsetsIssued < o.memsets * o.sliceMs * slice / 1000; ++memsetsIssued) {
      cudaError_t status =
          cudaMemsetAsync(res.deviceBytes, static_cast<int>(memsetsIssued & 0xff), kCopyBytes,
                          res.streams[memsetsIssued % o.streams]);
      if (status != cudaSuccess) fail("cudaMemsetAsync", status);
      ++counts.memsets;
    }
    for (cudaStream_t stream : res.streams)
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (o.nvtxSteps) nvtxRangePop();
    addNanoseconds(deadline, sliceNs);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr) == EINTR) {
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The device's own count of the kernels that ran, against the launches counted here.
  ranTotal += deviceCount(res, counts);
  delete sampler;
  freeResources(res);

  if (counts.kernels < 0.95 * static_cast<double>(o.rate) * o.seconds) {
    std::fprintf(stderr, "kernel_storm: fell behind: %lld kernels in %.1f s, %lld/s asked\n",
                 counts.kernels, seconds, o.rate);
  }
  std::printf("STORM kernels=%lld memcpys=%lld memsets=%lld seconds=%.1f\n", counts.kernels,
              counts.memcpys, counts.memsets, seconds);
  std::fflush(stdout);
  if (ranTotal != static_cast<unsigned long long>(counts.kernels)) {
    std::fprintf(stderr, "kernel_storm: the device counted %llu kernels, %lld were launched\n",
                 ranTotal, counts.kernels);
    return 1;
  }
  return 0;
}
