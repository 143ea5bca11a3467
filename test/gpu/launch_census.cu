// GPU census: launches a known set of GPU operations inside a kinetrace session and writes
// a manifest of exactly what it launched, so check_trace.py can hold the trace to it.
//
//   launch_census TRACE.json MANIFEST.json
//       kernels of distinct names on two non-blocking streams and the legacy default stream,
//       cudaLaunchKernelEx, a cooperative launch, a two-node CUDA graph, copies in every
//       direction from pageable and pinned memory, memsets, malloc/free and every kind of
//       synchronisation, each in its own named range.
//
//   launch_census TRACE.json MANIFEST.json --memory-mb 3 --gpu-buffer-kb 1024 --flood 200000
//       floods the GPU with tiny kernels and no sync in between while CUPTI has almost no
//       buffer memory, so records must be dropped; the trace must still be written and the
//       drops reported.
//
//   launch_census TRACE.json MANIFEST.json --save-rounds N
//       the census recorded in memory and saved to TRACE.json, then saved N more times to
//       TRACE.json.round.{json,json.gz,pftrace}, the formats in turn: each save's wall and CPU
//       time and its file's size go to TRACE.json.save_rounds.json (what writing the same
//       trace costs in each format, in the program that recorded it).
//
// Exit status: 0 when the trace and manifest were written (also when there is no GPU: then
// it says so and writes nothing), 1 on a CUDA or kinetrace error, 2 on bad arguments.
// The manifest records what the program did, not what the trace holds: it is built by the
// same calls that launch the work, so the two cannot drift apart.

#include <cuda_runtime.h>
#include <kinetrace/kinetrace.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    const cudaError_t cudaCheckStatus = (call);                                           \
    if (cudaCheckStatus != cudaSuccess) {                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                   cudaGetErrorString(cudaCheckStatus));                                  \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// ---- kernels -----------------------------------------------------------------------
// extern "C" so the name CUPTI reports is exactly the name below: no mangling, nothing for
// a demangler to change, one name per kernel.

__device__ void touch(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.5f + 1.0f;
}

#define CENSUS_KERNEL(name) \
  extern "C" __global__ void name(float* data, int n) { touch(data, n); }

CENSUS_KERNEL(censusStreamZeroA)
CENSUS_KERNEL(censusStreamZeroB)
CENSUS_KERNEL(censusStreamOneA)
CENSUS_KERNEL(censusLegacyDefault)
CENSUS_KERNEL(censusLaunchEx)
CENSUS_KERNEL(censusCooperative)
CENSUS_KERNEL(censusGraphNodeA)
CENSUS_KERNEL(censusGraphNodeB)
CENSUS_KERNEL(censusFlood)

namespace {

using KernelFn = void (*)(float*, int);

// Which stream an operation went to. The runtime cannot tell us CUPTI's stream id, so the
// manifest names streams by slot and the checker verifies that each slot maps to one id.
enum class Slot { Legacy, Zero, One };

const char* slotName(Slot slot) {
  switch (slot) {
    case Slot::Legacy: return "legacy";
    case Slot::Zero: return "0";
    case Slot::One: return "1";
  }
  return "?";
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string jsonDim(const dim3& d) {
  return "[" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + "]";
}

// What was launched, keyed so that equal operations aggregate into one manifest entry.
class Census {
 public:
  void enter(const std::string& range) {
    stack_.push_back(range);
    ranges_.push_back(range);
  }
  void leave() { stack_.pop_back(); }

  void kernel(const std::string& name, const std::string& api, Slot slot, dim3 grid, dim3 block,
              bool graph = false) {
    KernelEntry& e = kernels_[name];
    if (e.count > 0 && (e.range != range() || e.slot != slot)) {
      // One name, one place: the checker identifies kernels by name.
      std::fprintf(stderr, "census bug: kernel %s launched from two places\n", name.c_str());
      std::exit(1);
    }
    e = KernelEntry{e.count + 1, range(), api, slot, grid, block, graph};
    // Graph kernels are left out of the stream order: their stream has a check of its own.
    if (!graph) order_[slot].push_back("kernel " + name);
  }

  void copy(const char* direction, const char* traceName, const std::string& api, Slot slot,
            std::size_t bytes) {
    OpEntry& e = copies_[{direction, bytes}];
    e = OpEntry{e.count + 1, range(), api, slot, traceName};
    order_[slot].push_back("memcpy " + std::string(direction) + " " + std::to_string(bytes));
  }

  void fill(const std::string& api, Slot slot, std::size_t bytes) {
    OpEntry& e = memsets_[bytes];
    e = OpEntry{e.count + 1, range(), api, slot, "Memset (Device)"};
    order_[slot].push_back("memset " + std::to_string(bytes));
  }

  void sync(const std::string& traceName) { ++syncs_[traceName]; }
  void malloced() { ++mallocs_; }
  void freed() { ++frees_; }
  void pool(const std::string& operation) { ++pools_[operation]; }

  std::string manifestJson() const {
    std::ostringstream out;
    out << "{\n  \"mode\": \"census\",\n  \"device\": 0,\n  \"ranges\": [";
    for (std::size_t i = 0; i < ranges_.size(); ++i) out << (i ? ", " : "") << jsonString(ranges_[i]);
    out << "],\n  \"kernels\": [";
    const char* sep = "\n";
    for (const auto& [name, e] : kernels_) {
      out << sep << "    {\"name\": " << jsonString(name) << ", \"count\": " << e.count
          << ", \"range\": " << jsonString(e.range) << ", \"api\": " << jsonString(e.api)
          << ", \"stream\": \"" << slotName(e.slot) << "\", \"grid\": " << jsonDim(e.grid)
          << ", \"block\": " << jsonDim(e.block) << ", \"graph\": " << (e.graph ? "true" : "false")
          << "}";
      sep = ",\n";
    }
    out << "\n  ],\n  \"memcpys\": [";
    sep = "\n";
    for (const auto& [key, e] : copies_) {
      out << sep << "    {\"direction\": \"" << std::get<0>(key) << "\", \"bytes\": "
          << std::get<1>(key) << ", \"name\": " << jsonString(e.traceName) << ", \"count\": "
          << e.count << ", \"range\": " << jsonString(e.range) << ", \"api\": " << jsonString(e.api)
          << ", \"stream\": \"" << slotName(e.slot) << "\"}";
      sep = ",\n";
    }
    out << "\n  ],\n  \"memsets\": [";
    sep = "\n";
    for (const auto& [bytes, e] : memsets_) {
      out << sep << "    {\"bytes\": " << bytes << ", \"name\": " << jsonString(e.traceName)
          << ", \"count\": " << e.count << ", \"range\": " << jsonString(e.range)
          << ", \"api\": " << jsonString(e.api) << ", \"stream\": \"" << slotName(e.slot) << "\"}";
      sep = ",\n";
    }
    out << "\n  ],\n  \"syncsAtLeast\": {";
    sep = "";
    for (const auto& [name, count] : syncs_) {
      out << sep << jsonString(name) << ": " << count;
      sep = ", ";
    }
    // A stream runs its work in launch order, so each stream's operations must appear in
    // the trace in this order.
    out << "},\n  \"streamOrder\": {";
    sep = "";
    for (const auto& [slot, ops] : order_) {
      out << sep << "\n    \"" << slotName(slot) << "\": [";
      for (std::size_t i = 0; i < ops.size(); ++i) out << (i ? ", " : "") << jsonString(ops[i]);
      out << "]";
      sep = ",";
    }
    out << "\n  },\n  \"allocations\": {\"mallocs\": " << mallocs_ << ", \"frees\": " << frees_
        << "},\n  \"memoryPools\": {";
    sep = "";
    for (const auto& [operation, n] : pools_) {
      out << sep << "\n    " << jsonString(operation) << ": " << n;
      sep = ",";
    }
    out << "\n  }\n}\n";
    return out.str();
  }

 private:
  struct KernelEntry {
    int count = 0;
    std::string range;
    std::string api;
    Slot slot = Slot::Legacy;
    dim3 grid;
    dim3 block;
    bool graph = false;
  };
  struct OpEntry {
    int count = 0;
    std::string range;
    std::string api;
    Slot slot = Slot::Legacy;
    std::string traceName;
  };

  const std::string& range() const {
    static const std::string kNone;
    return stack_.empty() ? kNone : stack_.back();
  }

  std::vector<std::string> stack_;
  std::vector<std::string> ranges_;
  std::map<std::string, KernelEntry> kernels_;
  std::map<std::tuple<std::string, std::size_t>, OpEntry> copies_;
  std::map<std::size_t, OpEntry> memsets_;
  std::map<std::string, int> syncs_;
  std::map<Slot, std::vector<std::string>> order_;
  int mallocs_ = 0;
  int frees_ = 0;
  std::map<std::string, int> pools_;  // by operation: created, trimmed, destroyed
};

// A kinetrace range that the census knows about: GPU work launched inside it must carry
// this range's External id.
class CensusRange {
 public:
  CensusRange(Census& census, const std::string& name) : range_(name), census_(census) {
    census_.enter(name);
  }
  ~CensusRange() { census_.leave(); }
  CensusRange(const CensusRange&) = delete;
  CensusRange& operator=(const CensusRange&) = delete;

 private:
  kinetrace::Range range_;
  Census& census_;
};

constexpr int kThreads = 128;
constexpr std::size_t kWorkFloats = 1 << 16;  // enough for every grid launched below

struct Options {
  std::string tracePath;
  std::string manifestPath;
  std::optional<std::string> memoryMb;
  std::optional<std::string> gpuBufferKb;
  long flood = 0;
  long saveRounds = 0;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr,
               "%s\nusage: launch_census TRACE.json MANIFEST.json [--memory-mb N] "
               "[--gpu-buffer-kb N] [--flood N] [--save-rounds N]\n",
               problem);
  std::exit(2);
}

Options parseOptions(int argc, char** argv) {
  Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--memory-mb" && hasValue) {
      options.memoryMb = argv[++i];
    } else if (arg == "--gpu-buffer-kb" && hasValue) {
      options.gpuBufferKb = argv[++i];
    } else if (arg == "--flood" && hasValue) {
      char* end = nullptr;
      options.flood = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || options.flood <= 0) usage("--flood needs a positive count");
    } else if (arg == "--save-rounds" && hasValue) {
      char* end = nullptr;
      options.saveRounds = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || options.saveRounds <= 0) usage("--save-rounds needs a positive count");
    } else if (arg.rfind("--", 0) == 0) {
      usage(("unknown or incomplete option: " + arg).c_str());
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) usage("need a trace path and a manifest path");
  options.tracePath = positional[0];
  options.manifestPath = positional[1];
  return options;
}

// Everything the census launches into, created before the session so that none of the
// set-up (streams, buffers, graph instantiation, module loading) is in the trace.
struct Resources {
  cudaStream_t zero = nullptr;
  cudaStream_t one = nullptr;
  cudaEvent_t event = nullptr;
  float* work[3] = {};  // one buffer per slot, so streams never share memory
  float* copySource = nullptr;
  float* copyTarget = nullptr;
  float* pinnedIn = nullptr;
  float* pinnedOut = nullptr;
  std::vector<float> pageableIn;
  std::vector<float> pageableOut;
  cudaGraphExec_t graph = nullptr;
  int smCount = 0;

  cudaStream_t stream(Slot slot) const {
    // cudaStreamLegacy names the legacy default stream even if this file were compiled
    // with per-thread default streams.
    return slot == Slot::Zero ? zero : slot == Slot::One ? one : cudaStreamLegacy;
  }
  float* buffer(Slot slot) const { return work[static_cast<int>(slot)]; }
};

constexpr std::size_t kCopyBytes = 64 * 1024;

Resources createResources() {
  Resources r;
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.zero, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.one, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&r.event, cudaEventDisableTiming));
  for (float*& w : r.work) {
    CUDA_CHECK(cudaMalloc(&w, kWorkFloats * sizeof(float)));
    CUDA_CHECK(cudaMemset(w, 0, kWorkFloats * sizeof(float)));
  }
  CUDA_CHECK(cudaMalloc(&r.copySource, kCopyBytes));
  CUDA_CHECK(cudaMalloc(&r.copyTarget, kCopyBytes));
  CUDA_CHECK(cudaMemset(r.copySource, 0, kCopyBytes));
  CUDA_CHECK(cudaMallocHost(&r.pinnedIn, kCopyBytes));
  CUDA_CHECK(cudaMallocHost(&r.pinnedOut, kCopyBytes));
  std::memset(r.pinnedIn, 0, kCopyBytes);
  r.pageableIn.assign(kCopyBytes / sizeof(float), 1.0f);
  r.pageableOut.assign(kCopyBytes / sizeof(float), 0.0f);
  CUDA_CHECK(cudaDeviceGetAttribute(&r.smCount, cudaDevAttrMultiProcessorCount, 0));

  // A two-node graph built node by node (not captured), so building it launches nothing.
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaGraphCreate(&graph, 0));
  float* data = r.buffer(Slot::Zero);
  int n = kThreads * 4;
  void* args[] = {&data, &n};
  cudaKernelNodeParams params = {};
  params.gridDim = dim3(4);
  params.blockDim = dim3(kThreads);
  params.kernelParams = args;
  cudaGraphNode_t first = nullptr;
  cudaGraphNode_t second = nullptr;
  params.func = reinterpret_cast<void*>(censusGraphNodeA);
  CUDA_CHECK(cudaGraphAddKernelNode(&first, graph, nullptr, 0, &params));
  params.func = reinterpret_cast<void*>(censusGraphNodeB);
  CUDA_CHECK(cudaGraphAddKernelNode(&second, graph, &first, 1, &params));
  CUDA_CHECK(cudaGraphInstantiate(&r.graph, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));
  return r;
}

void launch(Census& census, const Resources& r, KernelFn fn, const char* name, Slot slot,
            dim3 grid, dim3 block = dim3(kThreads)) {
  float* data = r.buffer(slot);
  int n = static_cast<int>(grid.x * block.x);
  void* args[] = {&data, &n};
  CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(fn), grid, block, args, 0,
                              r.stream(slot)));
  census.kernel(name, "cudaLaunchKernel", slot, grid, block);
}

// Stringifies the kernel so the manifest name is the function's own name.
#define LAUNCH(census, resources, kernel, ...) \
  launch(census, resources, kernel, #kernel, __VA_ARGS__)

// Runs every kernel once before the session: module loading and the graph's first upload
// happen here, not inside the census.
void warmUp(const Resources& r) {
  for (KernelFn fn : {censusStreamZeroA, censusStreamZeroB, censusStreamOneA, censusLegacyDefault,
                      censusLaunchEx, censusCooperative, censusFlood}) {
    float* data = r.buffer(Slot::Zero);
    int n = kThreads;
    void* args[] = {&data, &n};
    CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(1), dim3(kThreads), args,
                                0, r.zero));
  }
  CUDA_CHECK(cudaGraphLaunch(r.graph, r.zero));
  CUDA_CHECK(cudaDeviceSynchronize());
}

void runCensus(Census& census, Resources& r) {
  CensusRange all(census, "census");
  {
    CensusRange range(census, "census/stream0_kernels");
    for (int i = 0; i < 3; ++i) LAUNCH(census, r, censusStreamZeroA, Slot::Zero, dim3(2));
    for (int i = 0; i < 2; ++i) LAUNCH(census, r, censusStreamZeroB, Slot::Zero, dim3(3));
  }
  {
    CensusRange range(census, "census/stream1_kernels");
    for (int i = 0; i < 4; ++i) LAUNCH(census, r, censusStreamOneA, Slot::One, dim3(5));
  }
  {
    // Tells the checker which stream id is the legacy default one, so it can verify that
    // the two created streams are reported as neither each other nor that.
    CensusRange range(census, "census/legacy_stream");
    LAUNCH(census, r, censusLegacyDefault, Slot::Legacy, dim3(1));
  }
  {
    CensusRange range(census, "census/launch_ex");
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(6);
    config.blockDim = dim3(kThreads);
    config.stream = r.one;
    float* data = r.buffer(Slot::One);
    int n = 6 * kThreads;
    CUDA_CHECK(cudaLaunchKernelEx(&config, censusLaunchEx, data, n));
    census.kernel("censusLaunchEx", "cudaLaunchKernelExC", Slot::One, config.gridDim,
                  config.blockDim);
  }
  {
    CensusRange range(census, "census/cooperative");
    // One block per SM is always co-resident, which a cooperative launch requires.
    const dim3 grid(r.smCount);
    const dim3 block(kThreads);
    float* data = r.buffer(Slot::Zero);
    int n = static_cast<int>(grid.x * block.x);
    void* args[] = {&data, &n};
    CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(censusCooperative), grid,
                                           block, args, 0, r.zero));
    census.kernel("censusCooperative", "cudaLaunchCooperativeKernel", Slot::Zero, grid, block);
  }
  {
    CensusRange range(census, "census/graph");
    CUDA_CHECK(cudaGraphLaunch(r.graph, r.zero));
    census.kernel("censusGraphNodeA", "cudaGraphLaunch", Slot::Zero, dim3(4), dim3(kThreads), true);
    census.kernel("censusGraphNodeB", "cudaGraphLaunch", Slot::Zero, dim3(4), dim3(kThreads), true);
  }
  {
    // Each kind of copy has its own size, so the checker tells them apart by bytes as well
    // as by name.
    CensusRange range(census, "census/copies");
    constexpr std::size_t kPageableIn = 16 * 1024, kPinnedIn = 32 * 1024, kPinnedOut = 8 * 1024,
                          kDeviceToDevice = 64 * 1024, kPageableOut = 4 * 1024;
    for (int i = 0; i < 2; ++i) {
      CUDA_CHECK(cudaMemcpyAsync(r.copySource, r.pageableIn.data(), kPageableIn,
                                 cudaMemcpyHostToDevice, r.zero));
      census.copy("HtoD", "Memcpy HtoD (Pageable -> Device)", "cudaMemcpyAsync", Slot::Zero,
                  kPageableIn);
    }
    for (int i = 0; i < 3; ++i) {
      CUDA_CHECK(cudaMemcpyAsync(r.copyTarget, r.pinnedIn, kPinnedIn, cudaMemcpyHostToDevice, r.one));
      census.copy("HtoD", "Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", Slot::One, kPinnedIn);
    }
    for (int i = 0; i < 2; ++i) {
      CUDA_CHECK(cudaMemcpyAsync(r.pinnedOut, r.copyTarget, kPinnedOut, cudaMemcpyDeviceToHost, r.one));
      census.copy("DtoH", "Memcpy DtoH (Device -> Pinned)", "cudaMemcpyAsync", Slot::One, kPinnedOut);
    }
    for (int i = 0; i < 2; ++i) {
      CUDA_CHECK(cudaMemcpyAsync(r.copyTarget, r.copySource, kDeviceToDevice,
                                 cudaMemcpyDeviceToDevice, r.zero));
      census.copy("DtoD", "Memcpy DtoD (Device -> Device)", "cudaMemcpyAsync", Slot::Zero,
                  kDeviceToDevice);
    }
    // The legacy stream does not order against non-blocking streams: wait for them first.
    CUDA_CHECK(cudaStreamSynchronize(r.zero));
    census.sync("Stream Sync");
    CUDA_CHECK(cudaMemcpy(r.pageableOut.data(), r.copySource, kPageableOut, cudaMemcpyDeviceToHost));
    census.copy("DtoH", "Memcpy DtoH (Device -> Pageable)", "cudaMemcpy", Slot::Legacy,
                kPageableOut);
  }
  {
    CensusRange range(census, "census/memsets");
    for (int i = 0; i < 2; ++i) {
      CUDA_CHECK(cudaMemsetAsync(r.buffer(Slot::One), 0, 32 * 1024, r.one));
      census.fill("cudaMemsetAsync", Slot::One, 32 * 1024);
    }
    CUDA_CHECK(cudaMemsetAsync(r.buffer(Slot::Zero), 0, 12 * 1024, r.zero));
    census.fill("cudaMemsetAsync", Slot::Zero, 12 * 1024);
  }
  {
    CensusRange range(census, "census/alloc");
    void* scratch = nullptr;
    CUDA_CHECK(cudaMalloc(&scratch, 1 << 20));
    census.malloced();
    CUDA_CHECK(cudaFree(scratch));
    census.freed();
    // A pool of its own: created, an allocation from it given back, trimmed, destroyed.
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    census.pool("created");
    void* fromPool = nullptr;
    CUDA_CHECK(cudaMallocFromPoolAsync(&fromPool, 1 << 20, pool, r.zero));
    CUDA_CHECK(cudaFreeAsync(fromPool, r.zero));
    CUDA_CHECK(cudaStreamSynchronize(r.zero));
    CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
    census.pool("trimmed");
    CUDA_CHECK(cudaMemPoolDestroy(pool));
    census.pool("destroyed");
  }
  {
    CensusRange range(census, "census/syncs");
    CUDA_CHECK(cudaEventRecord(r.event, r.zero));
    CUDA_CHECK(cudaStreamWaitEvent(r.one, r.event, 0));
    census.sync("Stream Wait Event");
    CUDA_CHECK(cudaEventSynchronize(r.event));
    census.sync("Event Sync");
    CUDA_CHECK(cudaStreamSynchronize(r.one));
    census.sync("Stream Sync");
    CUDA_CHECK(cudaDeviceSynchronize());
    census.sync("Context Sync");
  }
}

std::string floodManifest(long launched, const Options& options) {
  std::ostringstream out;
  out << "{\n  \"mode\": \"flood\",\n  \"device\": 0,\n  \"ranges\": [\"flood\"],\n"
      << "  \"floodKernel\": \"censusFlood\",\n  \"launched\": " << launched << ",\n"
      << "  \"memoryMb\": " << jsonString(options.memoryMb.value_or("default")) << ",\n"
      << "  \"gpuBufferKb\": " << jsonString(options.gpuBufferKb.value_or("default")) << "\n}\n";
  return out.str();
}

// No sync between launches: records pile up faster than a tiny buffer pool can take them.
void runFlood(long count, const Resources& r) {
  kinetrace::Range range("flood");
  float* data = r.buffer(Slot::Zero);
  for (long i = 0; i < count; ++i) {
    censusFlood<<<1, 32, 0, r.zero>>>(data, 32);
    // cudaGetLastError is host-only and cheap; checking in batches keeps the flood dense.
    if (i % 4096 == 0) CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void printStats(const kinetrace::TraceStats& s) {
  std::printf("stats: kernels=%llu memcpys=%llu memsets=%llu syncs=%llu memory=%llu api_calls=%llu "
              "ranges=%llu dropped_gpu_records=%llu dropped_host_events=%llu "
              "out_of_window=%llu unfinished_ranges=%llu peak_memory=%llu memory_cap=%llu\n",
              static_cast<unsigned long long>(s.gpuKernels),
              static_cast<unsigned long long>(s.gpuMemcpys),
              static_cast<unsigned long long>(s.gpuMemsets),
              static_cast<unsigned long long>(s.gpuSyncs),
              static_cast<unsigned long long>(s.gpuMemoryEvents),
              static_cast<unsigned long long>(s.apiCalls),
              static_cast<unsigned long long>(s.hostRanges),
              static_cast<unsigned long long>(s.droppedGpuRecords),
              static_cast<unsigned long long>(s.droppedHostEvents),
              static_cast<unsigned long long>(s.outOfWindowEvents),
              static_cast<unsigned long long>(s.unfinishedRanges),
              static_cast<unsigned long long>(s.peakMemoryBytes),
              static_cast<unsigned long long>(s.memoryCapBytes));
}

double cpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Saves the trace `rounds` times in each format, the formats in turn, and writes each save's
// wall and CPU time (milliseconds) and size to PATH.save_rounds.json
// (bench/gpu/save_formats.py --table makes a table of it).
void saveRounds(const kinetrace::Trace& trace, const std::string& path, long rounds) {
  const char* formats[] = {"json", "json.gz", "pftrace"};
  std::ostringstream json;
  json << "{\"rounds\": " << rounds << ", \"saves\": [";
  bool first = true;
  for (long round = 0; round < rounds; ++round) {
    for (const char* format : formats) {
      const std::string target = path + ".round." + format;
      const double cpuStart = cpuSeconds();
      const auto start = std::chrono::steady_clock::now();
      trace.save(target);
      const auto stop = std::chrono::steady_clock::now();
      const double cpu = cpuSeconds() - cpuStart;
      struct stat info {};
      if (stat(target.c_str(), &info) != 0) {
        std::fprintf(stderr, "%s was not written\n", target.c_str());
        std::exit(1);
      }
      json << (first ? "" : ", ") << "{\"format\": \"" << format << "\", \"round\": " << round
           << ", \"wall_ms\": " << std::chrono::duration<double, std::milli>(stop - start).count()
           << ", \"cpu_ms\": " << cpu * 1e3 << ", \"bytes\": " << info.st_size << "}";
      first = false;
    }
  }
  json << "]}\n";
  writeFile(path + ".save_rounds.json", json.str());
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);

  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s; nothing to trace on the GPU\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "no device found");
    return 0;
  }
  CUDA_CHECK(cudaSetDevice(0));
  int cooperative = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0));
  if (!cooperative) {
    std::fprintf(stderr, "device 0 does not support cooperative launches\n");
    return 1;
  }

  try {
    kinetrace::Config config = kinetrace::Config::fromEnvironment();
    // Through Config::set so a bad value is rejected with the library's own message.
    if (options.memoryMb) config.set("memory_mb", *options.memoryMb);
    if (options.gpuBufferKb) config.set("gpu_buffer_kb", *options.gpuBufferKb);
    kinetrace::Profiler profiler(config);
    profiler.prepare();

    Resources resources = createResources();
    warmUp(resources);

    Census census;
    profiler.addMetadata("census_mode", options.flood > 0 ? "flood" : "census");
    // Written while recording, as `kinetrace run` writes: the memory cap bounds what the
    // tracer holds, not what the trace may contain.
    if (options.saveRounds > 0) {
      profiler.start();  // in memory, to be saved again and again below
    } else {
      profiler.start(options.tracePath);
    }
    if (options.flood > 0) {
      runFlood(options.flood, resources);
    } else {
      runCensus(census, resources);
    }
    kinetrace::Trace trace = profiler.stop();

    std::printf("GPU: %s\n", profiler.gpuStatus().c_str());
    if (options.saveRounds > 0) trace.save(options.tracePath);
    if (!trace.saveError().empty()) {
      std::fprintf(stderr, "kinetrace: the trace could not be written: %s\n", trace.saveError().c_str());
      return 1;
    }
    if (options.saveRounds > 0) saveRounds(trace, options.tracePath, options.saveRounds);
    writeFile(options.manifestPath, options.flood > 0 ? floodManifest(options.flood, options)
                                                      : census.manifestJson());
    printStats(trace.stats());
    std::printf("trace written to %s, manifest to %s\n", options.tracePath.c_str(),
                options.manifestPath.c_str());
  } catch (const kinetrace::Error& error) {
    std::fprintf(stderr, "kinetrace: %s\n", error.what());
    return 1;
  }
  return 0;
}
