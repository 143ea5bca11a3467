// Uses libkineto's API as PyTorch's profiler does (kineto_shim.cpp and collection.cpp):
// init, prepare, start, correlation ids around ops, the CPU trace handed over, stop, the
// activities read back and changed, save. Exits non-zero, saying why, when any step fails.
//
//   kineto_consumer TRACE.json

#include <libkineto.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace {

int fail(const std::string& why) {
  std::fprintf(stderr, "kineto_consumer: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: kineto_consumer TRACE.json");
  libkineto::api().resetKinetoTLS();
  if (!libkineto::api().isProfilerRegistered()) {
    libkineto_init(/*cpuOnly=*/true, /*logOnError=*/true);
    libkineto::api().suppressLogMessages();
  }
  libkineto::api().initProfilerIfRegistered();
  if (!libkineto::api().isProfilerInitialized()) return fail("the profiler did not initialise");

  auto& profiler = libkineto::api().activityProfiler();
  profiler.prepareTrace({libkineto::ActivityType::CPU_OP}, "");
  profiler.startTrace();
  profiler.recordThreadInfo();
  auto trace = std::make_unique<libkineto::CpuTraceBuffer>();
  trace->span.startTime = 1000;
  trace->span.name = "PyTorch Profiler";
  for (int32_t id = 1; id <= 3; ++id) {
    profiler.pushCorrelationId(static_cast<uint64_t>(id));
    trace->emplace_activity(trace->span, libkineto::ActivityType::CPU_OP,
                            "aten::op" + std::to_string(id));
    auto& op = libkineto::CpuTraceBuffer::toRef(trace->activities.back());
    op.device = libkineto::processId();
    op.resource = libkineto::systemThreadId();
    op.id = id;
    op.startTime = 1000 + id * 100;
    op.endTime = op.startTime + 50;
    profiler.popCorrelationId();
  }
  libkineto::GenericTraceActivity* first = trace->activities.front().get();
  profiler.transferCpuTrace(std::move(trace));
  std::unique_ptr<libkineto::ActivityTraceInterface> stopped = profiler.stopTrace();
  if (stopped == nullptr || stopped->activities() == nullptr)
    return fail("no trace from stopTrace()");
  if (stopped->activities()->size() != 3) return fail("not the 3 activities handed over");
  if (stopped->activities()->front() != first)
    return fail("the activities are not the same objects");
  first->addMetadata("Input Dims", "[[2, 3]]");
  profiler.addMetadata("consumer", "\"source build\"");
  stopped->save(argv[1]);

  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  for (const char* expected :
       {"aten::op1", "aten::op3", "\"Input Dims\":[[2, 3]]", "source build"}) {
    if (text.str().find(expected) == std::string::npos) {
      return fail(std::string("the saved trace lacks ") + expected);
    }
  }
  std::printf("kineto_consumer: %s saved with %zu activities\n", argv[1],
              stopped->activities()->size());
  return 0;
}
