#include "ondemand/trigger_decision.h"

#include <sys/stat.h>

#include <cstdio>
#include <string>

namespace kinetrace::ondemand {

using detail::Failure;
using detail::Result;
using detail::Status;

namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string encodedPath(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (c <= ' ' || c == '%' || c >= 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::string> decodedPath(const std::string& word) {
  std::string out;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') {
      out += word[i];
      continue;
    }
    if (i + 2 >= word.size()) return std::nullopt;
    const int high = hexDigit(word[i + 1]);
    const int low = hexDigit(word[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

std::optional<std::string> whyPathUnusable(const std::string& path) {
  for (unsigned char c : path) {
    if (c == 0) return std::string("the path holds a NUL byte, which would cut it short");
    if (c < ' ' || c == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "0x%02X", c);
      return std::string("the path holds a control character (") + code + ")";
    }
  }
  return std::nullopt;
}

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

Status prepareOutput(const std::string& path, const detail::PathRule& rule) {
  detail::PathRule making = rule;
  making.createDirectories = true;
  Result<detail::OutputLocation> location = detail::resolveOutput(path, making);
  if (!location.ok()) return Failure{location.why()};
  return detail::probeWritable(location.value().directory, location.value().name);
}

std::optional<std::string> whyStartTooFar(const TriggerWindow& window, int64_t nowBootNs,
                                          int64_t nextStep) {
  if (window.bySteps()) {
    const int64_t ahead = saturatingAdd(window.startStep(), -nextStep);
    if (ahead <= kMaxStartLeadSteps) return std::nullopt;
    return "the window would start at step " + std::to_string(window.startStep()) + ", " +
           std::to_string(ahead) + " steps ahead of the next one (" + std::to_string(nextStep) +
           "); a window starts at most " + std::to_string(kMaxStartLeadSteps) +
           " steps ahead, since one waiting to start holds off every other request";
  }
  const int64_t ahead = saturatingAdd(window.startAtNs(), -nowBootNs);
  if (ahead <= kMaxStartLeadNs) return std::nullopt;
  return "the window would start " + std::to_string(ahead / 1'000'000'000) +
         " s from now; a window starts at most " + std::to_string(kMaxStartLeadNs / 1'000'000'000) +
         " s ahead, since one waiting to start holds off every other request";
}

std::string acceptedAnswer(const TriggerWindow& window, int64_t stepsSeen,
                           const std::string& noStepsNote) {
  if (!window.bySteps()) return "ok " + encodedPath(window.path());
  std::string answer =
      "ok " + encodedPath(window.path()) + "\tfrom step " + std::to_string(window.startStep());
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
