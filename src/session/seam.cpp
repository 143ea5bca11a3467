#include "session/seam.h"

#include <algorithm>
#include <vector>

#include "cupti/make_cupti_source.h"
#include "host/host_recorder.h"
#include "model/clock.h"
#include "model/trace_data.h"
#include "output/atomic_file.h"
#include "output/kind_names.h"
#include "output/open_sink.h"
#include "output/trace_events.h"
#include "output/trace_summary.h"
#include "output/trace_vocabulary.h"
#include "output/value_json.h"
#include "session/session.h"

namespace kinetrace {

class ProfilerAccess {
 public:
  static std::unique_ptr<Profiler> make(std::unique_ptr<detail::Session> session) {
    return std::unique_ptr<Profiler>(new Profiler(std::move(session)));
  }
  static detail::Session& session(Profiler& profiler) { return *profiler.session_; }
};

namespace detail {

std::unique_ptr<Profiler> makeProfiler(Config config, SessionOptions options) {
  return ProfilerAccess::make(std::make_unique<Session>(std::move(config), std::move(options)));
}

}  // namespace detail

namespace internal {

std::unique_ptr<Profiler> makeProfiler(Config config, const ProfilerOptions& options) {
  detail::SessionOptions session;
  session.insideDriverInit = options.insideDriverInit;
  session.profilerControl = options.profilerControl;
  session.processName = options.processName;
  return detail::makeProfiler(std::move(config), std::move(session));
}

void pushCorrelationId(uint64_t id) noexcept {
  detail::HostRecorder::pushCorrelation(id);
}

void popCorrelationId() noexcept {
  detail::HostRecorder::popCorrelation();
}

void beginRangeWithArgs(std::string_view name, const EventArg* args, std::size_t count) noexcept {
  detail::beginRangeWithArgs(name, args, count);
}

uint64_t startAsyncRangeWithArgs(std::string_view name, const EventArg* args,
                                 std::size_t count) noexcept {
  return detail::startAsyncRangeWithArgs(name, args, count);
}

void instantWithArgs(std::string_view name, const EventArg* args, std::size_t count) noexcept {
  detail::instantWithArgs(name, args, count);
}

void endRangeWithArgs(const EventArg* args, std::size_t count) noexcept {
  detail::endRangeWithArgs(args, count);
}

void endAsyncRangeWithArgs(uint64_t id, const EventArg* args, std::size_t count) noexcept {
  detail::endAsyncRangeWithArgs(id, args, count);
}

std::optional<Value> parseJson(const std::string& text) {
  return detail::parseJsonValue(text);
}

void visitOperations(const Trace& trace, const std::function<void(const TraceOperation&)>& visit) {
  const detail::TraceData& data = detail::dataOf(trace);
  const detail::TraceRecords& records = data.records;
  const detail::StringTable& strings = data.tables.strings;
  auto gpu = [&](detail::RecordKind kind, const char* category, std::string_view name,
                 const detail::GpuPlacement& at) {
    TraceOperation op;
    op.kind = kind;
    op.category = category;
    op.name = name;
    static_cast<detail::GpuOp&>(op) = at;
    op.paired = at.hasLaunchCall;
    visit(op);
  };
  using detail::RecordKind;
  namespace chrome = detail::chrome;
  for (const detail::KernelRecord& k : records.kernels) {
    gpu(RecordKind::Kernel, chrome::kCatKernel, strings.get(k.name), k.at);
  }
  for (const detail::MemcpyRecord& m : records.memcpys) {
    gpu(RecordKind::Memcpy, chrome::kCatMemcpy,
        detail::memcpyEventName(m.copyKind, m.srcKind, m.dstKind), m.at);
  }
  for (const detail::MemsetRecord& m : records.memsets) {
    gpu(RecordKind::Memset, chrome::kCatMemset, detail::memsetEventName(m.memoryKind), m.at);
  }
  for (const detail::GraphRecord& g : records.graphs) {
    gpu(RecordKind::Graph, chrome::kCatCudaGraph, strings.get(g.name), g.at);
  }
  for (const detail::SyncRecord& s : records.syncs) {
    gpu(RecordKind::Sync, chrome::kCatCudaSync, detail::syncKindName(s.kind), s.at);
  }
  // A call started GPU work in the trace exactly when an arrow starts at it.
  std::vector<uint32_t> arrows;
  arrows.reserve(records.flows.size());
  for (const detail::FlowRecord& flow : records.flows) arrows.push_back(flow.correlationId);
  std::sort(arrows.begin(), arrows.end());
  for (const detail::ApiCallRecord& call : records.apiCalls) {
    TraceOperation op;
    op.kind = RecordKind::ApiCall;
    op.category =
        call.domain == detail::ApiDomain::Driver ? chrome::kCatCudaDriver : chrome::kCatCudaRuntime;
    op.name = strings.get(call.name);
    op.startNs = call.startNs;
    op.endNs = call.endNs;
    op.pid = data.tables.pid;
    op.tid = call.thread < data.tables.threads.size() ? data.tables.threads[call.thread].tid : 0;
    op.correlationId = call.correlationId;
    op.externalId = call.externalId;
    op.paired = std::binary_search(arrows.begin(), arrows.end(), call.correlationId);
    visit(op);
  }
}

int64_t gpuAnnotationTrackTid(uint32_t streamId) noexcept {
  return detail::gpuTrackTid(streamId, detail::kGpuSpanTrack, 0);
}

int64_t clockNowNs() noexcept {
  const detail::Clock& clock = detail::Clock::instance();
  return clock.toEpochNs(detail::Clock::ticks());
}

void nameOsThread(int64_t tid, std::string_view name) {
  detail::HostRecorder::instance().nameOsThread(tid, name);
}

std::string summaryJson(const Trace& trace, const std::string& traceFile) {
  detail::Summary summary = detail::summaryFromValue(detail::dataOf(trace).summary);
  summary.traceFile = traceFile;
  return detail::summaryToJson(summary);
}

void writeFileAtomically(const std::string& path, std::string_view text,
                         const detail::PathRule& rule) {
  detail::AtomicFile file(path, rule);
  file.write(text.data(), text.size());
  file.commit();
}

void startUnder(Profiler& profiler, const std::string& output, const detail::PathRule& rule) {
  ProfilerAccess::session(profiler).start(output, rule);
}

std::unique_ptr<Sink> openSinkUnder(const std::string& url, const detail::PathRule& rule) {
  return detail::openSinkUnder(url, rule);
}

bool processUsesGpu() noexcept {
  try {
    return detail::processUsesGpu();
  } catch (...) {
    return true;  // a question that fails must not keep a process from being traced
  }
}

}  // namespace internal
}  // namespace kinetrace
