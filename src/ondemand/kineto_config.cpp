#include "ondemand/kineto_config.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "ondemand/trigger_decision.h"
#include "support/log.h"
#include "support/text.h"

namespace kinetrace::ondemand {

using detail::Failure;
using detail::Result;
using detail::Status;
using detail::endsWith;
using detail::trim;

namespace {

constexpr int64_t kNsPerMs = 1000000;
constexpr int64_t kDefaultDurationMs = 500;  // libkineto's default window

// A whole decimal number, or why not.
Result<int64_t> integer(const std::string& key, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long number = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE) {
    return Failure{key + " needs a whole number, got \"" + value + "\""};
  }
  return static_cast<int64_t>(number);
}

Result<int64_t> count(const std::string& key, const std::string& value) {
  Result<int64_t> number = integer(key, value);
  if (number.ok() && number.value() < 0) {
    return Failure{key + " needs a whole number, got \"" + value + "\""};
  }
  return number;
}

Result<bool> boolean(const std::string& key, const std::string& value) {
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "0" || lower == "no") return false;
  return Failure{key + " needs true or false, got \"" + value + "\""};
}

// `value` counts of `unitNs` in nanoseconds: more than 0, and no longer than the longest window.
Result<int64_t> window(const std::string& key, const std::string& value, int64_t unitNs) {
  Result<int64_t> number = count(key, value);
  if (!number.ok()) return number;
  if (number.value() == 0) return Failure{key + " must be more than 0"};
  if (number.value() > kMaxWindowNs / unitNs) {
    return Failure{key + "=" + value + " is longer than the longest window (366 days)"};
  }
  return number.value() * unitNs;
}

}  // namespace

std::string withPid(const std::string& logFile, int64_t pid) {
  const std::string suffix = "_" + std::to_string(pid);
  const std::size_t slash = logFile.rfind('/');
  const std::size_t nameAt = slash == std::string::npos ? 0 : slash + 1;
  const std::string name = logFile.substr(nameAt);
  std::string named = logFile.substr(0, nameAt);
  if (name.find(".json") != std::string::npos) {
    std::size_t from = 0;
    for (std::size_t at; (at = name.find(".json", from)) != std::string::npos; from = at + 5) {
      named += name.substr(from, at - from) + suffix + ".json";
    }
    return named + name.substr(from);
  }
  if (endsWith(name, ".pftrace"))
    return named + name.substr(0, name.size() - 8) + suffix + ".pftrace";
  return named + name + suffix;
}

detail::PathRule onDemandOutputRule(const std::string& onDemandDir) {
  detail::PathRule rule;
  rule.allowedDirectories.push_back("/tmp");
  if (!onDemandDir.empty() && onDemandDir[0] == '/') rule.allowedDirectories.push_back(onDemandDir);
  rule.createDirectories = true;
  rule.confinedBecause =
      "the dynolog daemon's requests are not authenticated; set KINETO_ONDEMAND_TRACE_DIR to "
      "allow another directory";
  return rule;
}

bool daemonRequested(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr) return false;
  std::string lower(trim(value));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "1" || lower == "true" || lower == "yes" || lower == "on";
}

std::string onDemandTraceDir() {
  const char* value = std::getenv("KINETO_ONDEMAND_TRACE_DIR");
  return value != nullptr ? std::string(value) : std::string();
}

Result<KinetoConfig> parseKinetoConfig(std::string_view text) {
  KinetoConfig config;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = trim(line);
    if (line.empty()) continue;
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      return Failure{"\"" + std::string(line) + "\" is not KEY=VALUE"};
    }
    const std::string key(trim(line.substr(0, equals)));
    const std::string value(trim(line.substr(equals + 1)));

    // Each key's value, or the failure to pass on.
    std::optional<Failure> failed;
    const auto keep = [&failed](auto result, auto* into) {
      if (result.ok()) {
        *into = result.value();
      } else {
        failed = Failure{result.why()};
      }
    };
    if (key == "ACTIVITIES_LOG_FILE") {
      config.logFile = value;
    } else if (key == "PROFILE_START_TIME") {
      keep(count(key, value), &config.startTimeMs);
    } else if (key == "ACTIVITIES_DURATION_MSECS") {
      keep(window(key, value, kNsPerMs), &config.durationNs);
    } else if (key == "ACTIVITIES_DURATION_SECS") {
      keep(window(key, value, 1000 * kNsPerMs), &config.durationNs);
    } else if (key == "PROFILE_START_ITERATION") {
      keep(integer(key, value), &config.startIteration);
      // libkineto: a negative one is unset.
      if (config.startIteration && *config.startIteration < 0) config.startIteration.reset();
    } else if (key == "PROFILE_START_ITERATION_ROUNDUP") {
      keep(count(key, value), &config.roundUp);
    } else if (key == "ACTIVITIES_ITERATIONS") {
      keep(count(key, value), &config.iterations);
    } else if (key == "REQUEST_TRACE_ID") {
      config.requestTraceId = value;
    } else if (key == "PROFILE_REPORT_INPUT_SHAPES") {
      keep(boolean(key, value), &config.framework.inputShapes);
    } else if (key == "PROFILE_PROFILE_MEMORY") {
      keep(boolean(key, value), &config.framework.profileMemory);
    } else if (key == "PROFILE_WITH_STACK") {
      keep(boolean(key, value), &config.framework.withStack);
    } else if (key == "PROFILE_WITH_FLOPS") {
      keep(boolean(key, value), &config.framework.withFlops);
    } else if (key == "PROFILE_WITH_MODULES") {
      keep(boolean(key, value), &config.framework.withModules);
    } else {
      config.ignored.push_back(key);
    }
    if (failed) return *failed;
  }
  return config;
}

Result<KinetoConfigRequest> requestFromKinetoConfig(std::string_view text, int64_t pid,
                                                    const std::string& onDemandDir) {
  Result<KinetoConfig> parsed = parseKinetoConfig(text);
  if (!parsed.ok()) return Failure{parsed.why()};
  const KinetoConfig& config = parsed.value();
  KinetoConfigRequest result;
  result.ignored = config.ignored;
  TriggerRequest& request = result.request;
  request.origin = "dynolog";
  request.requestTraceId = config.requestTraceId;
  request.framework = config.framework;

  // libkineto's own default name already holds the pid.
  request.output = config.logFile && !config.logFile->empty()
                       ? withPid(*config.logFile, pid)
                       : "/tmp/libkineto_activities_" + std::to_string(pid) + ".json";
  if (std::optional<std::string> why = whyPathUnusable(request.output)) {
    return Failure{"ACTIVITIES_LOG_FILE: " + *why};
  }
  if (request.output[0] != '/') {
    return Failure{"ACTIVITIES_LOG_FILE must be an absolute path, got \"" + request.output + "\""};
  }
  // Where it really lands is checked when the request is taken and when the files are written.
  request.outputRule = onDemandOutputRule(onDemandDir);
  if (config.startIteration) {
    request.steps = config.iterations.value_or(1);
    if (request.steps == 0) return Failure{"ACTIVITIES_ITERATIONS must be more than 0"};
    request.startStep = *config.startIteration;
    // libkineto treats 0 as no round-up.
    request.roundUpSteps = std::max<int64_t>(1, config.roundUp.value_or(1));
  } else {
    request.durationNs = config.durationNs.value_or(kDefaultDurationMs * kNsPerMs);
    const int64_t startMs = config.startTimeMs.value_or(0);
    if (startMs > std::numeric_limits<int64_t>::max() / kNsPerMs) {
      return Failure{"PROFILE_START_TIME=" + std::to_string(startMs) + " is past the year 2262"};
    }
    request.startAtNs = startMs * kNsPerMs;
  }
  if (Status usable = checkRequest(request); !usable.ok()) return Failure{usable.why()};
  return result;
}

std::optional<TriggerRequest> requestFromDaemon(std::string_view text, int64_t pid,
                                                const std::string& onDemandDir) {
  Result<KinetoConfigRequest> parsed = requestFromKinetoConfig(text, pid, onDemandDir);
  if (!parsed.ok()) {
    detail::log(LogLevel::Warning, "dynolog's request is not carried out: {}", parsed.why());
    return std::nullopt;
  }
  if (!parsed.value().ignored.empty()) {
    detail::log(LogLevel::Debug, "dynolog's request: libkineto settings without effect here: {}",
                fmt::join(parsed.value().ignored, ", "));
  }
  return std::move(parsed.value().request);
}

}  // namespace kinetrace::ondemand
