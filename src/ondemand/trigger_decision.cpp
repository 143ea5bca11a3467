#include "ondemand/trigger_decision.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kinetrace::ondemand {

using detail::Failure;
using detail::Status;

Status checkRequest(const TriggerRequest& request) {
  if (request.verb != TriggerRequest::Verb::Record) return {};
  if ((request.durationNs > 0) == (request.steps > 0)) {
    return Failure{
        "say how long to record: a duration (duration_ns > 0) or a number of steps "
        "(steps > 0), one of the two"};
  }
  if (request.steps > 0 && request.startAtNs != 0) {
    return Failure{"start_at_ns goes with a duration; a window of steps starts at start_step"};
  }
  if (request.durationNs > 0 && request.startStep >= 0) {
    return Failure{"start_step goes with steps; a window of a duration starts at start_at_ns"};
  }
  if (request.roundUpSteps < 1) {
    return Failure{"round_up must be 1 or more (the first step is a multiple of it), got " +
                   std::to_string(request.roundUpSteps)};
  }
  if (request.durationNs > 0 && request.roundUpSteps > 1) {
    return Failure{"round_up goes with steps; a window of a duration starts at start_at_ns"};
  }
  return {};
}

std::optional<std::string> refusalNow(const ProcessState& state) {
  if (state.ending) return "the process is ending, or its tracing is off";
  if (state.recording) {
    return "a trace is already recording (window " + std::to_string(state.window) + ", to " +
           state.recordingPath + ")" +
           (state.recordsUntilExit ? ": it records until the process exits" : "");
  }
  if (!state.pendingPath.empty()) {
    return "a triggered recording is already about to start (to " + state.pendingPath + ")";
  }
  if (!state.heldBy.empty()) return state.heldBy;
  return std::nullopt;
}

std::string triggeredPath(const std::string& requested, const std::string& defaultDir,
                          const std::string& fileName) {
  if (requested.empty()) return defaultDir + "/" + fileName;
  struct stat info {};
  const bool directory =
      requested.back() == '/' || (::stat(requested.c_str(), &info) == 0 && S_ISDIR(info.st_mode));
  if (!directory) return requested;
  std::string dir = requested;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + fileName;
}

Status makeDirectories(const std::string& dir) {
  for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string partial = dir.substr(0, slash);
    if (!partial.empty() && ::mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      return Failure{partial + ": " + std::strerror(errno)};
    }
    if (slash == std::string::npos) break;
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Failure{dir + ": not a directory"};
  }
  return {};
}

Status makeParentDirectories(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return {};
  return makeDirectories(path.substr(0, slash));
}

std::string acceptedAnswer(const TriggerWindow& window, int64_t stepsSeen,
                           const std::string& noStepsNote) {
  if (!window.bySteps()) return "ok " + window.path();
  std::string answer = "ok " + window.path() + "\tfrom step " + std::to_string(window.startStep());
  if (stepsSeen == 0 && !noStepsNote.empty()) answer += " (" + noStepsNote + ")";
  return answer;
}

Value triggerMetadata(const TriggerWindow& window) {
  const TriggerRequest& request = window.request();
  Value asked = window.bySteps() ? Value::object({{"steps", request.steps},
                                                  {"first_step", window.startStep()},
                                                  {"round_up", request.roundUpSteps}})
                                 : Value::object({{"duration_ns", request.durationNs},
                                                  {"start_at_ns", request.startAtNs}});
  Value metadata = Value::object({{"origin", request.origin}, {"asked", std::move(asked)}});
  if (!request.requestTraceId.empty()) metadata.set("request_trace_id", request.requestTraceId);
  return metadata;
}

}  // namespace kinetrace::ondemand
