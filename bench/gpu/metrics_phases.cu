// A program whose GPU is bound by one thing at a time, for proving GPU metrics sampling
// (`kinetrace run --gpu-metrics default`; bench/gpu/gpu_metrics.sh, metrics_check.py). It does
// not link kinetrace: trace it from outside.
//
//   metrics_phases [--phase-ms 1000] [--rounds 2] [--soak SECONDS] [--counts C,F,G]
//                  [--copy-mib 2048] [--gemm-n 8192]
//
// Each round runs four phases in this order, each inside an NVTX range named after it, with
// kernels of their own:
//   copy   copyPhaseKernel streams one buffer into another, the two together --copy-mib
//          (default 2 GiB, many times the L2 cache): memory bound, DRAM busy, SMs nearly idle
//   fma    fmaPhaseKernel runs eight independent FMA chains per thread in registers, every SM
//          full, nothing read or written until the end: compute bound, FMA pipe busy
//   gemm   cuBLAS bf16 GEMM (n = --gemm-n, default 8192; fp32 accumulation, tensor ops):
//          tensor bound
//   idle   the host sleeps; nothing runs on the GPU
// A phase keeps the GPU busy for --phase-ms (default 1000, or PHASE_MS): kernels are launched
// one ahead of the one running until the time is up, then the phase waits for the GPU, so its
// NVTX range covers its GPU work. --counts C,F,G instead runs exactly C copy, F fma and G
// gemm kernels a phase (the same work in every run: what overhead comparisons need); idle
// still sleeps --phase-ms. --rounds (default 2, or ROUNDS) rounds; --soak SECONDS cycles the
// phases until that long has passed instead (the long zero-loss check).
//
// Before the first round every kernel runs once outside any range (module loading, cuBLAS's
// choice of kernel), so the phases hold only steady work. Prints one line per phase run and a
// summary, for scripts:
//
//   PHASE round=1 name=copy kernels=2003 ms=1000.3
//   RESULT rounds=2 phase_ms=1000 wall_ms=8012.5 copy=4006 fma=520 gemm=1180
//
// wall_ms is the time from before the first phase to after the last (not the set-up).
// Exit status: 0, 1 after a CUDA or cuBLAS error (the call that failed is printed), 2 for a
// usage mistake.

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

// extern "C": the trace shows these names as they are, so a reader finds each phase's kernels.
extern "C" __global__ void copyPhaseKernel(const float4* __restrict__ in, float4* __restrict__ out,
                                           size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = in[i];
  }
}

// Eight chains, so that one warp has independent FMAs to issue while earlier ones are in
// flight; the multiplier below 1 keeps every value finite and away from denormals.
extern "C" __global__ void fmaPhaseKernel(float* out, int iterations, float multiplier,
                                          float addend) {
  float x[8];
  for (int j = 0; j < 8; ++j) x[j] = threadIdx.x * 1e-3f + j;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], multiplier, addend);
  }
  float sum = 0;
  for (int j = 0; j < 8; ++j) sum += x[j];
  // A store the compiler cannot prove dead, taken by no thread in practice.
  if (sum == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void fillBf16(__nv_bfloat16* data, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    data[i] = __float2bfloat16(static_cast<float>(i % 17) * 0.01f - 0.08f);
  }
}

namespace {

constexpr int kFmaIterations = 1 << 16;  // about 4 ms a kernel on an H200
constexpr int kThreadsPerBlock = 256;

struct Options {
  long long phaseMs = 1000;
  int rounds = 2;
  double soakSeconds = 0;           // > 0: cycle the phases for this long instead of rounds
  long long counts[3] = {0, 0, 0};  // copy, fma, gemm kernels a phase; 0: by time
  long long copyMib = 2048;
  int gemmN = 8192;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "metrics_phases: %s\n"
               "usage: metrics_phases [--phase-ms MS>0] [--rounds N>0] [--soak SECONDS>0]\n"
               "                      [--counts COPY,FMA,GEMM] [--copy-mib MIB>=64] [--gemm-n N]\n",
               why.c_str());
  std::exit(2);
}

long long positiveNumber(const std::string& name, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) usage(name + " takes a positive whole number");
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("PHASE_MS"); env && *env) {
    o.phaseMs = positiveNumber("PHASE_MS", env);
  }
  if (const char* env = std::getenv("ROUNDS"); env && *env) {
    o.rounds = static_cast<int>(positiveNumber("ROUNDS", env));
  }
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (i + 1 >= argc) usage("option " + name + " needs a value");
    const char* value = argv[++i];
    if (name == "--phase-ms") {
      o.phaseMs = positiveNumber(name, value);
    } else if (name == "--rounds") {
      o.rounds = static_cast<int>(positiveNumber(name, value));
    } else if (name == "--soak") {
      o.soakSeconds = static_cast<double>(positiveNumber(name, value));
    } else if (name == "--copy-mib") {
      o.copyMib = positiveNumber(name, value);
    } else if (name == "--gemm-n") {
      o.gemmN = static_cast<int>(positiveNumber(name, value));
    } else if (name == "--counts") {
      long long c[3];
      char tail = 0;
      if (std::sscanf(value, "%lld,%lld,%lld%c", &c[0], &c[1], &c[2], &tail) != 3 || c[0] <= 0 ||
          c[1] <= 0 || c[2] <= 0) {
        usage("--counts takes three positive numbers: COPY,FMA,GEMM");
      }
      std::memcpy(o.counts, c, sizeof c);
    } else {
      usage("unknown option " + name);
    }
  }
  if (o.copyMib < 64) usage("--copy-mib must be at least 64");
  if (o.gemmN % 8 != 0) usage("--gemm-n must be a multiple of 8 (tensor-op alignment)");
  return o;
}

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "metrics_phases: %s failed: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "metrics_phases: %s failed: cuBLAS status %d\n", what,
               static_cast<int>(status));
  std::exit(1);
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

class Phases {
 public:
  explicit Phases(const Options& o) : options_(o) {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    sms_ = prop.multiProcessorCount;
    const size_t bufferBytes = static_cast<size_t>(o.copyMib) << 19;  // half of --copy-mib each
    copyElements_ = bufferBytes / sizeof(float4);
    std::printf(
        "metrics_phases: %s, %d SMs, L2 %d MiB; copy buffers 2 x %lld MiB (%.0fx L2), "
        "GEMM %d^3 bf16, phases of %lld ms\n",
        prop.name, sms_, prop.l2CacheSize >> 20, o.copyMib / 2,
        static_cast<double>(o.copyMib << 20) / prop.l2CacheSize, o.gemmN, o.phaseMs);
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaMalloc(&copyIn_, bufferBytes), "cudaMalloc (copy source)");
    check(cudaMalloc(&copyOut_, bufferBytes), "cudaMalloc (copy destination)");
    check(cudaMemsetAsync(copyIn_, 1, bufferBytes, stream_), "cudaMemsetAsync");
    check(cudaMalloc(&fmaOut_, static_cast<size_t>(fmaBlocks()) * kThreadsPerBlock * sizeof(float)),
          "cudaMalloc (fma output)");
    const size_t matrix = static_cast<size_t>(o.gemmN) * o.gemmN;
    for (__nv_bfloat16** m : {&a_, &b_, &c_}) {
      check(cudaMalloc(m, matrix * sizeof(__nv_bfloat16)), "cudaMalloc (GEMM matrix)");
      fillBf16<<<sms_ * 4, kThreadsPerBlock, 0, stream_>>>(*m, matrix);
      check(cudaGetLastError(), "fillBf16 launch");
    }
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    // Tensor ops are cuBLAS's default for bf16 since CUDA 11; said here so no setting hides it.
    check(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cudaEventCreateWithFlags(&events_[0], cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&events_[1], cudaEventDisableTiming), "cudaEventCreate");
    // Once each, outside any range: module loading and cuBLAS's kernel choice happen here.
    launchCopy();
    launchFma();
    launchGemm();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (warm-up)");
  }

  ~Phases() {
    cublasDestroy(cublas_);
    for (void* p :
         {static_cast<void*>(copyIn_), static_cast<void*>(copyOut_), static_cast<void*>(fmaOut_),
          static_cast<void*>(a_), static_cast<void*>(b_), static_cast<void*>(c_)}) {
      cudaFree(p);
    }
    cudaEventDestroy(events_[0]);
    cudaEventDestroy(events_[1]);
    cudaStreamDestroy(stream_);
  }

  // Runs phase `index` (0 copy, 1 fma, 2 gemm, 3 idle) once; returns its kernels.
  long long run(int index, int round) {
    static const char* const kNames[] = {"copy", "fma", "gemm", "idle"};
    const auto start = std::chrono::steady_clock::now();
    nvtxRangePushA(kNames[index]);
    long long kernels = 0;
    if (index == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.phaseMs));
    } else if (options_.counts[index] > 0) {
      for (; kernels < options_.counts[index]; ++kernels) launch(index);
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    } else {
      kernels = runFor(index, start);
    }
    nvtxRangePop();
    std::printf("PHASE round=%d name=%s kernels=%lld ms=%.1f\n", round, kNames[index], kernels,
                msSince(start));
    return kernels;
  }

 private:
  int fmaBlocks() const { return sms_ * 8; }  // 2048 threads an SM: every SM full

  void launchCopy() {
    copyPhaseKernel<<<sms_ * 8, kThreadsPerBlock, 0, stream_>>>(copyIn_, copyOut_, copyElements_);
    check(cudaGetLastError(), "copyPhaseKernel launch");
  }

  void launchFma() {
    fmaPhaseKernel<<<fmaBlocks(), kThreadsPerBlock, 0, stream_>>>(fmaOut_, kFmaIterations, 0.999f,
                                                                  1e-3f);
    check(cudaGetLastError(), "fmaPhaseKernel launch");
  }

  void launchGemm() {
    const float alpha = 1.0f, beta = 0.0f;
    const int n = options_.gemmN;
    check(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a_, CUDA_R_16BF, n, b_,
                       CUDA_R_16BF, n, &beta, c_, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }

  void launch(int index) {
    if (index == 0) launchCopy();
    if (index == 1) launchFma();
    if (index == 2) launchGemm();
  }

  // Keeps one kernel queued behind the running one until the phase's time is up, so the GPU
  // never waits on the host; then waits for the GPU, so the range ends with the work.
  long long runFor(int index, std::chrono::steady_clock::time_point start) {
    long long kernels = 0;
    do {
      launch(index);
      check(cudaEventRecord(events_[kernels % 2], stream_), "cudaEventRecord");
      if (kernels > 0) {
        check(cudaEventSynchronize(events_[(kernels - 1) % 2]), "cudaEventSynchronize");
      }
      ++kernels;
    } while (msSince(start) < static_cast<double>(options_.phaseMs));
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return kernels;
  }

  const Options& options_;
  int sms_ = 0;
  size_t copyElements_ = 0;
  cudaStream_t stream_ = nullptr;
  float4* copyIn_ = nullptr;
  float4* copyOut_ = nullptr;
  float* fmaOut_ = nullptr;
  __nv_bfloat16* a_ = nullptr;
  __nv_bfloat16* b_ = nullptr;
  __nv_bfloat16* c_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t events_[2] = {nullptr, nullptr};
};

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach a pipe as they are printed
  Phases phases(options);
  long long kernels[4] = {0, 0, 0, 0};
  int rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (options.soakSeconds > 0 ? msSince(start) >= options.soakSeconds * 1000
                                : rounds >= options.rounds) {
      break;
    }
    ++rounds;
    for (int phase = 0; phase < 4; ++phase) kernels[phase] += phases.run(phase, rounds);
  }
  std::printf("RESULT rounds=%d phase_ms=%lld wall_ms=%.1f copy=%lld fma=%lld gemm=%lld\n", rounds,
              options.phaseMs, msSince(start), kernels[0], kernels[1], kernels[2]);
  return 0;
}
