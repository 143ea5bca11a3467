#include "session/seam.h"

#include "analysis/summary.h"
#include "host/host_recorder.h"
#include "model/clock.h"
#include "model/trace_data.h"
#include "output/atomic_file.h"
#include "output/trace_events.h"
#include "output/value_json.h"
#include "session/session.h"

namespace kinetrace {

class ProfilerAccess {
 public:
  static std::unique_ptr<Profiler> make(std::unique_ptr<detail::Session> session) {
    return std::unique_ptr<Profiler>(new Profiler(std::move(session)));
  }
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

std::optional<Value> parseJson(const std::string& text) {
  return detail::parseJsonValue(text);
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

void writeFileAtomically(const std::string& path, std::string_view text) {
  detail::AtomicFile file(path);
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace internal
}  // namespace kinetrace
