// CUDA graphs of every shape a tracer must follow, replayed a known number of times, with an
// exact count of what ran: for checking that every graph-replayed kernel, copy and memset is
// in a trace and linked to the graph launch that ran it. It does not link kinetrace: trace
// it from outside (`kinetrace run -- graph_replay ...`; bench/gpu/graph_check.py checks).
//
//   graph_replay [--replays 20] [--loop 5] [--manifest FILE]
//
// The graphs, each launched --replays times on one stream:
//
//   captured   stream capture of two kernels, a device-to-device copy, a memset, and a
//              stream-ordered allocation used by a kernel then freed (graph memory nodes)
//   while      a kernel that arms a loop counter, then a conditional WHILE node whose body
//              (one kernel) runs --loop times per launch
//   ifelse     a kernel that picks a side (launches alternate), then a conditional IF node
//              with an else body: one body kernel per launch
//   switch     a conditional SWITCH node alone (no node before it), three bodies; one
//              executable per case (the handle's default value), launch r runs case r % 3
//
// Then, as NVIDIA's graphConditionalNodes sample does, small graphs made only of conditional
// nodes (values from the handles' defaults and from body kernels), each launched 3 times
// with a cudaStreamSynchronize after each launch:
//
//   cond_if      IF { condThen -> condThen2 }
//   cond_ifelse  IF/ELSE, two executables (default 1 and 0): condThen or condElse
//   cond_while   WHILE { countdown } run --loop times (the body resets its own counter)
//   cond_switch  SWITCH (default 2) over four bodies: condCase2
//   cond_nested  IF { condOuter -> WHILE { nestedCountdown } run --loop times }
//
// The manifest's "launch_order" lists, launch by launch in call order, the kernels each
// launch ran: every body kernel can be checked against the launch it went to.
//
// Each graph is built inside an NVTX range named "build GRAPH", so a tracer can say where
// each node was created; the manifest says by which call ("created_by") and in which range
// ("created_in") each kernel's, copy's and memset's node was.
//
// Every kernel adds 1 to a device counter per run (one thread), so the count of kernels the
// GPU ran is known independently of any tracer. At the end it prints, and writes as JSON to
// --manifest, the kernels by name, the copies, the memsets and the graph launches:
//
//   GRAPHS kernels=360 memcpys=20 memsets=20 launches=80 device_counted=360
//
// Exit status: 0; 1 after a CUDA error (what failed is printed) or when the device's count
// differs from the expected one; 2 for a usage mistake.

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t status_ = (call);                                                        \
    if (status_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "graph_replay: %s failed: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__device__ unsigned long long gKernelsRun;

__device__ void countRun() {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&gKernelsRun, 1ull);
}

__global__ void scale(float* data, int n, float factor) {
  countRun();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] *= factor;
}

__global__ void useScratch(float* scratch, const float* data, int n) {
  countRun();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) scratch[i] = data[i] + 1.0f;
}

__global__ void armLoop(int* counter, int iterations) {
  countRun();
  if (threadIdx.x == 0) *counter = iterations;
}

__global__ void loopBody(float* data, int n, int* counter, cudaGraphConditionalHandle handle) {
  countRun();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] += 1.0f;
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    const int left = --*counter;
    cudaGraphSetConditional(handle, left > 0 ? 1u : 0u);
  }
}

__global__ void pickSide(int* launchNumber, cudaGraphConditionalHandle handle) {
  countRun();
  if (threadIdx.x == 0) {
    const int number = (*launchNumber)++;
    cudaGraphSetConditional(handle, number % 2 == 0 ? 1u : 0u);
  }
}

__global__ void ifBody(float* data, int n) {
  countRun();
  if (threadIdx.x == 0 && n > 0) data[0] += 2.0f;
}

__global__ void elseBody(float* data, int n) {
  countRun();
  if (threadIdx.x == 0 && n > 0) data[0] -= 2.0f;
}

__global__ void caseBody0(float* data) {
  countRun();
  if (threadIdx.x == 0) data[0] += 0.5f;
}
__global__ void caseBody1(float* data) {
  countRun();
  if (threadIdx.x == 0) data[0] += 1.5f;
}
__global__ void caseBody2(float* data) {
  countRun();
  if (threadIdx.x == 0) data[0] += 2.5f;
}

__global__ void condThen(float* data) {
  countRun();
  if (threadIdx.x == 0) data[1] += 1.0f;
}
__global__ void condThen2(float* data) {
  countRun();
  if (threadIdx.x == 0) data[1] *= 0.5f;
}
__global__ void condElse(float* data) {
  countRun();
  if (threadIdx.x == 0) data[1] -= 1.0f;
}
__global__ void condCase(float* data) {
  countRun();
  if (threadIdx.x == 0) data[2] += 1.0f;
}
__global__ void condOther(float* data) {
  countRun();
  if (threadIdx.x == 0) data[2] -= 1.0f;
}
__global__ void condOuter(float* data) {
  countRun();
  if (threadIdx.x == 0) data[3] += 1.0f;
}
// One WHILE iteration: counts itself and ends the loop after `loop` runs, resetting the
// counter for the next launch (no node outside the conditional to arm it).
__device__ void countDown(int* counter, int loop, cudaGraphConditionalHandle handle) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    const int done = ++*counter;
    if (done >= loop) *counter = 0;
    cudaGraphSetConditional(handle, done >= loop ? 0u : 1u);
  }
}
__global__ void countdown(int* counter, int loop, cudaGraphConditionalHandle handle) {
  countRun();
  countDown(counter, loop, handle);
}
__global__ void nestedCountdown(int* counter, int loop, cudaGraphConditionalHandle handle) {
  countRun();
  countDown(counter, loop, handle);
}

cudaGraphNode_t addKernel(cudaGraph_t graph, const cudaGraphNode_t* deps, size_t numDeps, void* func,
                          void** args, unsigned blocks = 1, unsigned threads = 32) {
  cudaKernelNodeParams params{};
  params.func = func;
  params.gridDim = dim3(blocks);
  params.blockDim = dim3(threads);
  params.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK(cudaGraphAddKernelNode(&node, graph, deps, numDeps, &params));
  return node;
}

// A conditional node of `type` with `bodies` body graphs, after `deps`.
cudaGraphNode_t addConditional(cudaGraph_t graph, const cudaGraphNode_t* deps, size_t numDeps,
                               cudaGraphConditionalHandle handle, cudaGraphConditionalNodeType type,
                               unsigned bodies, cudaGraph_t* bodyGraphs) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = bodies;
  cudaGraphNode_t node = nullptr;
  CHECK(cudaGraphAddNode(&node, graph, deps, nullptr, numDeps, &params));
  for (unsigned i = 0; i < bodies; ++i) bodyGraphs[i] = params.conditional.phGraph_out[i];
  return node;
}

int usage(const char* why) {
  std::fprintf(stderr, "graph_replay: %s\nusage: graph_replay [--replays N] [--loop N] [--manifest FILE]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int replays = 20;
  int loop = 5;
  const char* manifestPath = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + arg).c_str());
    if (arg == "--replays") {
      replays = std::atoi(argv[++i]);
    } else if (arg == "--loop") {
      loop = std::atoi(argv[++i]);
    } else if (arg == "--manifest") {
      manifestPath = argv[++i];
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  if (replays <= 0 || loop <= 0) return usage("--replays and --loop take positive numbers");

  constexpr int kN = 1 << 16;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* data = nullptr;
  float* copy = nullptr;
  int* control = nullptr;  // [0] loop counter, [1] if/else launch number, [2] [3] countdowns
  CHECK(cudaMalloc(&data, kN * sizeof(float)));
  CHECK(cudaMalloc(&copy, kN * sizeof(float)));
  CHECK(cudaMalloc(&control, 4 * sizeof(int)));
  CHECK(cudaMemset(data, 0, kN * sizeof(float)));
  CHECK(cudaMemset(control, 0, 4 * sizeof(int)));
  const unsigned long long zero = 0;
  CHECK(cudaMemcpyToSymbol(gKernelsRun, &zero, sizeof(zero)));
  CHECK(cudaDeviceSynchronize());

  std::map<std::string, long> kernels;  // expected runs by kernel name
  long memcpys = 0, memsets = 0, launches = 0;
  std::vector<std::map<std::string, long>> launchOrder;  // kernels run, launch by launch
  int n = kN;

  // captured: stream capture, graph memory nodes included.
  cudaGraph_t captured;
  nvtxRangePushA("build captured");
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  scale<<<64, 256, 0, stream>>>(data, n, 1.0001f);
  CHECK(cudaMemcpyAsync(copy, data, kN * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaMemsetAsync(copy, 0, 1024 * sizeof(float), stream));
  float* scratch = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), kN * sizeof(float), stream));
  useScratch<<<64, 256, 0, stream>>>(scratch, data, n);
  CHECK(cudaFreeAsync(scratch, stream));
  CHECK(cudaStreamEndCapture(stream, &captured));
  nvtxRangePop();

  // while: armLoop, then WHILE { loopBody }.
  nvtxRangePushA("build while");
  cudaGraph_t whileGraph;
  CHECK(cudaGraphCreate(&whileGraph, 0));
  cudaGraphConditionalHandle whileHandle;
  CHECK(cudaGraphConditionalHandleCreate(&whileHandle, whileGraph, 1, cudaGraphCondAssignDefault));
  int* counter = control;
  int iterations = loop;
  void* armArgs[] = {&counter, &iterations};
  cudaGraphNode_t arm = addKernel(whileGraph, nullptr, 0, reinterpret_cast<void*>(armLoop), armArgs);
  cudaGraph_t whileBody;
  addConditional(whileGraph, &arm, 1, whileHandle, cudaGraphCondTypeWhile, 1, &whileBody);
  void* bodyArgs[] = {&data, &n, &counter, &whileHandle};
  addKernel(whileBody, nullptr, 0, reinterpret_cast<void*>(loopBody), bodyArgs, 64, 256);
  nvtxRangePop();

  // ifelse: pickSide, then IF { ifBody } ELSE { elseBody }.
  nvtxRangePushA("build ifelse");
  cudaGraph_t ifGraph;
  CHECK(cudaGraphCreate(&ifGraph, 0));
  cudaGraphConditionalHandle ifHandle;
  CHECK(cudaGraphConditionalHandleCreate(&ifHandle, ifGraph, 0, 0));
  int* launchNumber = control + 1;
  void* pickArgs[] = {&launchNumber, &ifHandle};
  cudaGraphNode_t pick = addKernel(ifGraph, nullptr, 0, reinterpret_cast<void*>(pickSide), pickArgs);
  cudaGraph_t ifBodies[2];
  addConditional(ifGraph, &pick, 1, ifHandle, cudaGraphCondTypeIf, 2, ifBodies);
  void* sideArgs[] = {&data, &n};
  addKernel(ifBodies[0], nullptr, 0, reinterpret_cast<void*>(ifBody), sideArgs);
  addKernel(ifBodies[1], nullptr, 0, reinterpret_cast<void*>(elseBody), sideArgs);
  nvtxRangePop();

  // switch: a conditional node alone, no kernel before it to set its value: the value is
  // the handle's default, so each case has an executable of its own.
  cudaGraphExec_t switchExecs[3];
  nvtxRangePushA("build switch");
  for (unsigned value = 0; value < 3; ++value) {
    cudaGraph_t switchGraph;
    CHECK(cudaGraphCreate(&switchGraph, 0));
    cudaGraphConditionalHandle switchHandle;
    CHECK(cudaGraphConditionalHandleCreate(&switchHandle, switchGraph, value, cudaGraphCondAssignDefault));
    cudaGraph_t cases[3];
    addConditional(switchGraph, nullptr, 0, switchHandle, cudaGraphCondTypeSwitch, 3, cases);
    void* caseArgs[] = {&data};
    addKernel(cases[0], nullptr, 0, reinterpret_cast<void*>(caseBody0), caseArgs);
    addKernel(cases[1], nullptr, 0, reinterpret_cast<void*>(caseBody1), caseArgs);
    addKernel(cases[2], nullptr, 0, reinterpret_cast<void*>(caseBody2), caseArgs);
    CHECK(cudaGraphInstantiate(&switchExecs[value], switchGraph, 0));
    CHECK(cudaGraphDestroy(switchGraph));
  }
  nvtxRangePop();

  cudaGraphExec_t capturedExec, whileExec, ifExec;
  CHECK(cudaGraphInstantiate(&capturedExec, captured, 0));
  CHECK(cudaGraphInstantiate(&whileExec, whileGraph, 0));
  CHECK(cudaGraphInstantiate(&ifExec, ifGraph, 0));

  for (int r = 0; r < replays; ++r) {
    CHECK(cudaGraphLaunch(capturedExec, stream));
    launchOrder.push_back({{"scale", 1}, {"useScratch", 1}});
    memcpys += 1;
    memsets += 1;
    CHECK(cudaGraphLaunch(whileExec, stream));
    launchOrder.push_back({{"armLoop", 1}, {"loopBody", loop}});
    CHECK(cudaGraphLaunch(ifExec, stream));
    launchOrder.push_back({{"pickSide", 1}, {r % 2 == 0 ? "ifBody" : "elseBody", 1}});
    CHECK(cudaGraphLaunch(switchExecs[r % 3], stream));
    launchOrder.push_back({{"caseBody" + std::to_string(r % 3), 1}});
  }
  CHECK(cudaStreamSynchronize(stream));

  // Graphs of conditional nodes only (graphConditionalNodes-like).
  nvtxRangePushA("build conditional");
  void* condArgs[] = {&data};
  cudaGraph_t condIf;  // IF { condThen -> condThen2 }
  {
    CHECK(cudaGraphCreate(&condIf, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, condIf, 1, cudaGraphCondAssignDefault));
    cudaGraph_t body;
    addConditional(condIf, nullptr, 0, h, cudaGraphCondTypeIf, 1, &body);
    cudaGraphNode_t first = addKernel(body, nullptr, 0, reinterpret_cast<void*>(condThen), condArgs);
    addKernel(body, &first, 1, reinterpret_cast<void*>(condThen2), condArgs);
  }
  cudaGraph_t condIfElse[2];  // IF/ELSE with default 1, then 0
  for (unsigned value = 0; value < 2; ++value) {
    CHECK(cudaGraphCreate(&condIfElse[value], 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, condIfElse[value], 1 - value, cudaGraphCondAssignDefault));
    cudaGraph_t bodies[2];
    addConditional(condIfElse[value], nullptr, 0, h, cudaGraphCondTypeIf, 2, bodies);
    addKernel(bodies[0], nullptr, 0, reinterpret_cast<void*>(condThen), condArgs);
    addKernel(bodies[1], nullptr, 0, reinterpret_cast<void*>(condElse), condArgs);
  }
  int* countdownCounter = control + 2;
  int* nestedCounter = control + 3;
  cudaGraph_t condWhile;  // WHILE { countdown }
  {
    CHECK(cudaGraphCreate(&condWhile, 0));
    static cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, condWhile, 1, cudaGraphCondAssignDefault));
    cudaGraph_t body;
    addConditional(condWhile, nullptr, 0, h, cudaGraphCondTypeWhile, 1, &body);
    void* args[] = {&countdownCounter, &loop, &h};
    addKernel(body, nullptr, 0, reinterpret_cast<void*>(countdown), args);
  }
  cudaGraph_t condSwitch;  // SWITCH (default 2) { condOther, condOther, condCase, condOther }
  {
    CHECK(cudaGraphCreate(&condSwitch, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, condSwitch, 2, cudaGraphCondAssignDefault));
    cudaGraph_t bodies[4];
    addConditional(condSwitch, nullptr, 0, h, cudaGraphCondTypeSwitch, 4, bodies);
    for (unsigned i = 0; i < 4; ++i) {
      addKernel(bodies[i], nullptr, 0, reinterpret_cast<void*>(i == 2 ? condCase : condOther), condArgs);
    }
  }
  cudaGraph_t condNested;  // IF { condOuter -> WHILE { nestedCountdown } }
  {
    CHECK(cudaGraphCreate(&condNested, 0));
    cudaGraphConditionalHandle outer;
    CHECK(cudaGraphConditionalHandleCreate(&outer, condNested, 1, cudaGraphCondAssignDefault));
    cudaGraph_t body;
    addConditional(condNested, nullptr, 0, outer, cudaGraphCondTypeIf, 1, &body);
    cudaGraphNode_t first = addKernel(body, nullptr, 0, reinterpret_cast<void*>(condOuter), condArgs);
    static cudaGraphConditionalHandle inner;
    CHECK(cudaGraphConditionalHandleCreate(&inner, body, 1, cudaGraphCondAssignDefault));
    cudaGraph_t loopGraph;
    addConditional(body, &first, 1, inner, cudaGraphCondTypeWhile, 1, &loopGraph);
    void* args[] = {&nestedCounter, &loop, &inner};
    addKernel(loopGraph, nullptr, 0, reinterpret_cast<void*>(nestedCountdown), args);
  }
  nvtxRangePop();
  struct Conditional {
    cudaGraph_t graph;
    std::map<std::string, long> perLaunch;
  };
  const Conditional conditionals[] = {
      {condIf, {{"condThen", 1}, {"condThen2", 1}}},
      {condIfElse[0], {{"condThen", 1}}},
      {condIfElse[1], {{"condElse", 1}}},
      {condWhile, {{"countdown", loop}}},
      {condSwitch, {{"condCase", 1}}},
      {condNested, {{"condOuter", 1}, {"nestedCountdown", loop}}},
  };
  for (const Conditional& c : conditionals) {
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, c.graph, 0));
    for (int i = 0; i < 3; ++i) {
      CHECK(cudaGraphLaunch(exec, stream));
      CHECK(cudaStreamSynchronize(stream));
      launchOrder.push_back(c.perLaunch);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(c.graph));
  }
  for (const auto& launch : launchOrder) {
    for (const auto& [name, count] : launch) kernels[name] += count;
  }
  launches = static_cast<long>(launchOrder.size());

  unsigned long long counted = 0;
  CHECK(cudaMemcpyFromSymbol(&counted, gKernelsRun, sizeof(counted)));
  long total = 0;
  for (const auto& [name, count] : kernels) total += count;

  std::printf("GRAPHS kernels=%ld memcpys=%ld memsets=%ld launches=%ld device_counted=%llu\n", total,
              memcpys, memsets, launches, counted);
  if (manifestPath != nullptr) {
    FILE* out = std::fopen(manifestPath, "w");
    if (out == nullptr) {
      std::fprintf(stderr, "graph_replay: cannot write %s: %s\n", manifestPath, std::strerror(errno));
      return 1;
    }
    std::fprintf(out, "{\"replays\": %d, \"loop\": %d, \"graph_launches\": %ld, \"memcpys\": %ld, "
                 "\"memsets\": %ld, \"device_counted_kernels\": %llu, \"kernels\": {",
                 replays, loop, launches, memcpys, memsets, counted);
    const char* sep = "";
    for (const auto& [name, count] : kernels) {
      std::fprintf(out, "%s\"%s\": %ld", sep, name.c_str(), count);
      sep = ", ";
    }
    // Launch by launch, in call order, the kernels each ran. The switch and conditional graphs
    // have no node outside their conditionals: none of their kernels carries its launch's
    // correlation id, and a tracer must place them by the launches' order (kinetrace:
    // correlate/graph_launches.h).
    std::fprintf(out, "}, \"launch_order\": [");
    const char* launchSep = "";
    for (const auto& launch : launchOrder) {
      std::fprintf(out, "%s{", launchSep);
      const char* kernelSep = "";
      for (const auto& [name, count] : launch) {
        std::fprintf(out, "%s\"%s\": %ld", kernelSep, name.c_str(), count);
        kernelSep = ", ";
      }
      std::fprintf(out, "}");
      launchSep = ", ";
    }
    std::fprintf(out, "]");
    // What one launch runs besides the kernel before its conditional: a checker can tell
    // that each body kernel went to the launch that ran it, not merely to some launch.
    std::fprintf(out, ", \"per_launch\": {\"armLoop\": {\"loopBody\": %d}, \"pickSide\": "
                 "{\"ifBody|elseBody\": 1}}", loop);
    // Where each node was created: the call, and the NVTX range open then. Stream capture
    // turns a launch into a node; the other graphs' nodes are added one by one. Not for the
    // nodes of conditional bodies: CUPTI's records name those by an id of the executable
    // graph that none of its node callbacks announces (measured on the H200, CUDA 13), so
    // no tracer can tell from CUPTI where they were created.
    std::fprintf(out, ", \"created_by\": {\"scale\": \"cudaLaunchKernel\", "
                 "\"useScratch\": \"cudaLaunchKernel\", \"memcpy\": \"cudaMemcpyAsync\", "
                 "\"memset\": \"cudaMemsetAsync\", \"*\": \"cudaGraphAddKernelNode\"}");
    std::fprintf(out, ", \"created_in\": {\"scale\": \"build captured\", "
                 "\"useScratch\": \"build captured\", \"memcpy\": \"build captured\", "
                 "\"memset\": \"build captured\", \"armLoop\": \"build while\", "
                 "\"pickSide\": \"build ifelse\"}}\n");
    std::fclose(out);
  }

  CHECK(cudaGraphExecDestroy(capturedExec));
  CHECK(cudaGraphExecDestroy(whileExec));
  CHECK(cudaGraphExecDestroy(ifExec));
  for (cudaGraphExec_t exec : switchExecs) CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(captured));
  CHECK(cudaGraphDestroy(whileGraph));
  CHECK(cudaGraphDestroy(ifGraph));
  CHECK(cudaFree(data));
  CHECK(cudaFree(copy));
  CHECK(cudaFree(control));
  CHECK(cudaStreamDestroy(stream));
  if (counted != static_cast<unsigned long long>(total)) {
    std::fprintf(stderr, "graph_replay: the device ran %llu kernels, %ld expected\n", counted, total);
    return 1;
  }
  return 0;
}
