// A training-engine-like CUDA program traced by kinetrace.
//
// Each step trains a small MLP (cuBLAS SGEMMs plus custom bias, activation, loss and
// reduction kernels) the way an engine would: inputs copied from pageable memory, labels
// from pinned memory on a side stream, weight gradients on a second stream joined through
// events, the loss accumulator cudaMalloc'd and freed every step, zero_grad as memsets, the
// loss read back through pinned memory.
//
//   ./cuda_training_step --steps 50 --output trace.json      traced, trace saved there
//   ./cuda_training_step --untraced --steps 200               same loop, no Profiler
//
// Prints one machine-readable line, e.g. "median_step_us=412.3 steps=50 traced=1": each step
// is timed with std::chrono from its first call to a cudaDeviceSynchronize after it.
// Warm-up steps (--warmup) run first and are neither timed nor traced.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <kinetrace/kinetrace.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
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

#define CUBLAS_CHECK(call)                                                                \
  do {                                                                                    \
    const cublasStatus_t cublasCheckStatus = (call);                                      \
    if (cublasCheckStatus != CUBLAS_STATUS_SUCCESS) {                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                   cublasGetStatusString(cublasCheckStatus));                             \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// Kernel launches return nothing: check the launch itself right after it.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

namespace {

constexpr int kHidden = 1024;  // features per layer
constexpr int kBatch = 256;    // samples per step
constexpr int kLayers = 4;
constexpr int kInputBatches = 4;  // distinct host batches cycled through
constexpr float kLearningRate = 1e-3f;
constexpr int kThreads = 256;

// ---- kernels -----------------------------------------------------------------------
// Matrices are column-major (cuBLAS' layout): an activation is kHidden x kBatch, one
// column per sample.

__global__ void biasAdd(float* y, const float* bias, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] += bias[i % rows];
}

__global__ void reluForward(const float* pre, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(pre[i], 0.0f);
}

__global__ void reluBackward(const float* gradOut, const float* pre, float* gradPre, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) gradPre[i] = pre[i] > 0.0f ? gradOut[i] : 0.0f;
}

// diff = prediction - target; gradient of the mean squared error per sample.
__global__ void mseGrad(const float* prediction, const float* target, float* diff, float* grad,
                        int n, float scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float d = prediction[i] - target[i];
    diff[i] = d;
    grad[i] = 2.0f * d * scale;
  }
}

// Block-wide sum of squares, accumulated into *sum (zeroed by a memset beforehand).
__global__ void sumSquares(const float* x, int n, float scale, float* sum) {
  __shared__ float partial[kThreads];
  float acc = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    acc += x[i] * x[i];
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0] * scale);
}

// Bias gradient: the sum of each row of gradPre over the batch, one block per row.
__global__ void rowSum(const float* gradPre, int rows, int cols, float* out) {
  __shared__ float partial[kThreads];
  const int row = blockIdx.x;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += gradPre[row + c * rows];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[row] += partial[0];
}

__global__ void sgdUpdate(float* param, const float* grad, int n, float learningRate) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) param[i] -= learningRate * grad[i];
}

int blocksFor(int n) { return (n + kThreads - 1) / kThreads; }

// ---- options -----------------------------------------------------------------------

struct Options {
  int steps = 20;
  int warmup = 5;
  std::string output = "kinetrace_cuda_example.json";
  bool traced = true;
};

[[noreturn]] void usage(const char* program, const char* problem) {
  std::fprintf(stderr,
               "%s\nusage: %s [--steps N] [--warmup N] [--output PATH] [--untraced]\n",
               problem, program);
  std::exit(2);
}

int parseCount(const char* program, const char* flag, const char* text, int minimum) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < minimum || value > 1000000) {
    const std::string problem = std::string(flag) + " needs a whole number >= " +
                                std::to_string(minimum) + ", got \"" + text + "\"";
    usage(program, problem.c_str());
  }
  return static_cast<int>(value);
}

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--steps" && hasValue) {
      options.steps = parseCount(argv[0], "--steps", argv[++i], 1);
    } else if (arg == "--warmup" && hasValue) {
      options.warmup = parseCount(argv[0], "--warmup", argv[++i], 0);
    } else if (arg == "--output" && hasValue) {
      options.output = argv[++i];
    } else if (arg == "--untraced") {
      options.traced = false;
    } else {
      usage(argv[0], ("unknown or incomplete option: " + arg).c_str());
    }
  }
  return options;
}

// ---- the model ---------------------------------------------------------------------

float* deviceAlloc(std::size_t floats) {
  float* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, floats * sizeof(float)));
  return p;
}

class TrainingEngine {
 public:
  TrainingEngine() {
    // Non-blocking: neither stream synchronises with the legacy default stream, as in
    // engines that keep their own streams.
    CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&labelsReady_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&gradsDone_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&lossReady_, cudaEventDisableTiming));
    for (auto& e : layerGradReady_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    // One handle per stream: a cuBLAS handle's workspace must not be shared by two streams
    // running at once.
    CUBLAS_CHECK(cublasCreate(&blasCompute_));
    CUBLAS_CHECK(cublasSetStream(blasCompute_, compute_));
    CUBLAS_CHECK(cublasCreate(&blasSide_));
    CUBLAS_CHECK(cublasSetStream(blasSide_, side_));

    const std::size_t activation = std::size_t(kHidden) * kBatch;
    const std::size_t weights = std::size_t(kHidden) * kHidden;
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> init(-1.0f / std::sqrt(float(kHidden)),
                                               1.0f / std::sqrt(float(kHidden)));
    std::vector<float> hostWeights(weights);
    for (int l = 0; l < kLayers; ++l) {
      for (float& w : hostWeights) w = init(rng);
      weight_[l] = deviceAlloc(weights);
      CUDA_CHECK(cudaMemcpy(weight_[l], hostWeights.data(), weights * sizeof(float),
                            cudaMemcpyHostToDevice));
      bias_[l] = deviceAlloc(kHidden);
      CUDA_CHECK(cudaMemset(bias_[l], 0, kHidden * sizeof(float)));
      weightGrad_[l] = deviceAlloc(weights);
      biasGrad_[l] = deviceAlloc(kHidden);
      pre_[l] = deviceAlloc(activation);
      gradPre_[l] = deviceAlloc(activation);
      gradIn_[l] = deviceAlloc(activation);
    }
    for (auto& a : act_) a = deviceAlloc(activation);
    gradOut_ = deviceAlloc(activation);
    target_ = deviceAlloc(activation);
    diff_ = deviceAlloc(activation);

    // Pageable inputs, as a data loader hands them over; pinned labels and loss.
    std::uniform_real_distribution<float> data(-1.0f, 1.0f);
    inputs_.resize(kInputBatches);
    for (auto& batch : inputs_) {
      batch.resize(activation);
      for (float& x : batch) x = data(rng);
    }
    CUDA_CHECK(cudaMallocHost(&pinnedLabels_, activation * sizeof(float)));
    for (std::size_t i = 0; i < activation; ++i) pinnedLabels_[i] = 0.5f * data(rng);
    CUDA_CHECK(cudaMallocHost(&pinnedLoss_, sizeof(float)));
    outputSample_.resize(kHidden);
  }

  ~TrainingEngine() {
    // Errors here are ignored on purpose: the process is ending and has reported its result.
    cublasDestroy(blasCompute_);
    cublasDestroy(blasSide_);
    for (int l = 0; l < kLayers; ++l) {
      for (float* p : {weight_[l], bias_[l], weightGrad_[l], biasGrad_[l], pre_[l], gradPre_[l],
                       gradIn_[l]}) {
        cudaFree(p);
      }
    }
    for (float* p : act_) cudaFree(p);
    for (float* p : {gradOut_, target_, diff_}) cudaFree(p);
    cudaFreeHost(pinnedLabels_);
    cudaFreeHost(pinnedLoss_);
    for (auto e : layerGradReady_) cudaEventDestroy(e);
    for (auto e : {labelsReady_, gradsDone_, lossReady_}) cudaEventDestroy(e);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(side_);
  }

  TrainingEngine(const TrainingEngine&) = delete;
  TrainingEngine& operator=(const TrainingEngine&) = delete;

  // One training step; returns the loss read back from the device.
  float trainStep(int step) {
    const int n = kHidden * kBatch;
    const std::size_t activationBytes = std::size_t(n) * sizeof(float);

    loadBatch(step, activationBytes);

    // A per-step allocation, as engines without a caching allocator make: it shows up as
    // allocation events and as cudaFree's implicit sync. Kept small on purpose: a 1 MiB
    // buffer allocated and freed every step made step times vary by +-20% from one run to
    // the next on the H200 (memory mapped and unmapped each time), which drowned the
    // tracing overhead this example is used to measure.
    float* lossSum = nullptr;
    CUDA_CHECK(cudaMalloc(&lossSum, sizeof(float)));

    {
      kinetrace::Range forward("forward");
      const float one = 1.0f, zero = 0.0f;
      for (int l = 0; l < kLayers; ++l) {
        // pre = W * act + b; act' = relu(pre)
        CUBLAS_CHECK(cublasSgemm(blasCompute_, CUBLAS_OP_N, CUBLAS_OP_N, kHidden, kBatch, kHidden,
                                 &one, weight_[l], kHidden, act_[l], kHidden, &zero, pre_[l],
                                 kHidden));
        biasAdd<<<blocksFor(n), kThreads, 0, compute_>>>(pre_[l], bias_[l], kHidden, kBatch);
        CUDA_CHECK_LAUNCH();
        reluForward<<<blocksFor(n), kThreads, 0, compute_>>>(pre_[l], act_[l + 1], n);
        CUDA_CHECK_LAUNCH();
      }
      // The loss needs the labels, which travel on the side stream.
      CUDA_CHECK(cudaStreamWaitEvent(compute_, labelsReady_, 0));
      CUDA_CHECK(cudaMemsetAsync(lossSum, 0, sizeof(float), compute_));
      mseGrad<<<blocksFor(n), kThreads, 0, compute_>>>(act_[kLayers], target_, diff_, gradOut_, n,
                                                       1.0f / kBatch);
      CUDA_CHECK_LAUNCH();
      sumSquares<<<128, kThreads, 0, compute_>>>(diff_, n, 1.0f / kBatch, lossSum);
      CUDA_CHECK_LAUNCH();
    }

    {
      kinetrace::Range backward("backward");
      // zero_grad: gradients accumulate (beta = 1 below), as in PyTorch.
      for (int l = 0; l < kLayers; ++l) {
        CUDA_CHECK(cudaMemsetAsync(weightGrad_[l], 0, std::size_t(kHidden) * kHidden * sizeof(float),
                                   side_));
        CUDA_CHECK(cudaMemsetAsync(biasGrad_[l], 0, kHidden * sizeof(float), side_));
      }
      const float one = 1.0f, zero = 0.0f;
      const float* gradAbove = gradOut_;
      for (int l = kLayers - 1; l >= 0; --l) {
        kinetrace::Range layer("linear_" + std::to_string(l) + "_backward");
        reluBackward<<<blocksFor(n), kThreads, 0, compute_>>>(gradAbove, pre_[l], gradPre_[l], n);
        CUDA_CHECK_LAUNCH();
        // Weight and bias gradients run on the side stream, overlapping the input gradient.
        CUDA_CHECK(cudaEventRecord(layerGradReady_[l], compute_));
        CUDA_CHECK(cudaStreamWaitEvent(side_, layerGradReady_[l], 0));
        CUBLAS_CHECK(cublasSgemm(blasSide_, CUBLAS_OP_N, CUBLAS_OP_T, kHidden, kHidden, kBatch,
                                 &one, gradPre_[l], kHidden, act_[l], kHidden, &one,
                                 weightGrad_[l], kHidden));
        rowSum<<<kHidden, kThreads, 0, side_>>>(gradPre_[l], kHidden, kBatch, biasGrad_[l]);
        CUDA_CHECK_LAUNCH();
        if (l > 0) {
          CUBLAS_CHECK(cublasSgemm(blasCompute_, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, kBatch, kHidden,
                                   &one, weight_[l], kHidden, gradPre_[l], kHidden, &zero,
                                   gradIn_[l], kHidden));
          gradAbove = gradIn_[l];
        }
      }
      CUDA_CHECK(cudaEventRecord(gradsDone_, side_));
    }

    {
      kinetrace::Range optimizer("optimizer");
      CUDA_CHECK(cudaStreamWaitEvent(compute_, gradsDone_, 0));
      for (int l = 0; l < kLayers; ++l) {
        const int weights = kHidden * kHidden;
        sgdUpdate<<<blocksFor(weights), kThreads, 0, compute_>>>(weight_[l], weightGrad_[l], weights,
                                                                 kLearningRate);
        CUDA_CHECK_LAUNCH();
        sgdUpdate<<<blocksFor(kHidden), kThreads, 0, compute_>>>(bias_[l], biasGrad_[l], kHidden,
                                                                 kLearningRate);
        CUDA_CHECK_LAUNCH();
      }
    }

    // Loss to pinned memory, waited on through an event; one output column to pageable
    // memory, waited on through the stream (a pageable copy is not asynchronous anyway).
    CUDA_CHECK(cudaMemcpyAsync(pinnedLoss_, lossSum, sizeof(float), cudaMemcpyDeviceToHost,
                               compute_));
    CUDA_CHECK(cudaEventRecord(lossReady_, compute_));
    CUDA_CHECK(cudaMemcpyAsync(outputSample_.data(), act_[kLayers], kHidden * sizeof(float),
                               cudaMemcpyDeviceToHost, compute_));
    CUDA_CHECK(cudaEventSynchronize(lossReady_));
    const float loss = *pinnedLoss_;
    kinetrace::counter("loss", loss);
    CUDA_CHECK(cudaStreamSynchronize(compute_));
    CUDA_CHECK(cudaStreamSynchronize(side_));
    CUDA_CHECK(cudaFree(lossSum));
    return loss;
  }

 private:
  void loadBatch(int step, std::size_t bytes) {
    kinetrace::Range load("load_batch");
    const std::vector<float>& input = inputs_[step % kInputBatches];
    CUDA_CHECK(cudaMemcpyAsync(act_[0], input.data(), bytes, cudaMemcpyHostToDevice, compute_));
    CUDA_CHECK(cudaMemcpyAsync(target_, pinnedLabels_, bytes, cudaMemcpyHostToDevice, side_));
    CUDA_CHECK(cudaEventRecord(labelsReady_, side_));
  }

  cudaStream_t compute_ = nullptr;
  cudaStream_t side_ = nullptr;
  cudaEvent_t labelsReady_ = nullptr;
  cudaEvent_t gradsDone_ = nullptr;
  cudaEvent_t lossReady_ = nullptr;
  cudaEvent_t layerGradReady_[kLayers] = {};
  cublasHandle_t blasCompute_ = nullptr;
  cublasHandle_t blasSide_ = nullptr;

  float* weight_[kLayers] = {};
  float* bias_[kLayers] = {};
  float* weightGrad_[kLayers] = {};
  float* biasGrad_[kLayers] = {};
  float* pre_[kLayers] = {};       // pre-activation of each layer
  float* gradPre_[kLayers] = {};   // gradient at each pre-activation
  float* gradIn_[kLayers] = {};    // gradient at each layer's input
  float* act_[kLayers + 1] = {};   // act_[0] is the input batch
  float* gradOut_ = nullptr;
  float* target_ = nullptr;
  float* diff_ = nullptr;      // prediction - target

  std::vector<std::vector<float>> inputs_;
  std::vector<float> outputSample_;
  float* pinnedLabels_ = nullptr;
  float* pinnedLoss_ = nullptr;
};

// Runs one step inside its ProfilerStep range and returns its wall time in microseconds,
// up to a device-wide sync so work still queued on either stream is counted.
double timedStep(TrainingEngine& engine, int step, float& loss) {
  const auto begin = std::chrono::steady_clock::now();
  {
    kinetrace::Range stepRange("ProfilerStep#" + std::to_string(step));
    loss = engine.trainStep(step);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(end - begin).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
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

  try {
    // Created before the engine so CUPTI is subscribed before cuBLAS and the streams exist;
    // prepare() lets the warm-up steps absorb CUPTI's own set-up cost.
    std::optional<kinetrace::Profiler> profiler;
    if (options.traced) {
      profiler.emplace(kinetrace::Config::fromEnvironment());
      profiler->prepare();
    }
    TrainingEngine engine;

    float loss = 0.0f;
    int step = 0;
    for (int i = 0; i < options.warmup; ++i, ++step) timedStep(engine, step, loss);

    if (profiler) profiler->start();
    std::vector<double> stepUs;
    stepUs.reserve(options.steps);
    for (int i = 0; i < options.steps; ++i, ++step) stepUs.push_back(timedStep(engine, step, loss));

    if (profiler) {
      kinetrace::Trace trace = profiler->stop();
      trace.addMetadata("example", "cuda_training_step");
      const auto saveBegin = std::chrono::steady_clock::now();
      trace.save(options.output);
      const double saveMs = std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - saveBegin)
                                .count();
      const kinetrace::TraceStats stats = trace.stats();
      std::printf("GPU: %s\n", profiler->gpuStatus().c_str());
      std::printf("trace written to %s in %.1f ms: kernels=%llu memcpys=%llu memsets=%llu "
                  "syncs=%llu api_calls=%llu ranges=%llu dropped_gpu_records=%llu "
                  "out_of_window=%llu\n",
                  options.output.c_str(), saveMs,
                  static_cast<unsigned long long>(stats.gpuKernels),
                  static_cast<unsigned long long>(stats.gpuMemcpys),
                  static_cast<unsigned long long>(stats.gpuMemsets),
                  static_cast<unsigned long long>(stats.gpuSyncs),
                  static_cast<unsigned long long>(stats.apiCalls),
                  static_cast<unsigned long long>(stats.hostRanges),
                  static_cast<unsigned long long>(stats.droppedGpuRecords),
                  static_cast<unsigned long long>(stats.outOfWindowEvents));
    }
    std::printf("final_loss=%.6f\n", loss);
    std::printf("median_step_us=%.1f steps=%d traced=%d\n", median(stepUs), options.steps,
                options.traced ? 1 : 0);
  } catch (const kinetrace::Error& error) {
    std::fprintf(stderr, "kinetrace: %s\n", error.what());
    return 1;
  }
  return 0;
}
