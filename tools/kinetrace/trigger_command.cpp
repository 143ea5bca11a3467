#include "trigger_command.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "files.h"
#include "kinetrace/error.h"
#include "ondemand/kineto_config.h"
#include "ondemand/trigger_decision.h"
#include "runfiles/trigger_channel.h"

namespace kinetrace::cli {
namespace {

constexpr int64_t kJobStartDelayNs = 1'000'000'000;

int64_t realTimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// `path` (relative) from the working directory; trailing slashes dropped.
std::string absolutePath(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::string cwd(4096, '\0');
  if (::getcwd(cwd.data(), cwd.size()) == nullptr) {
    throw UsageError("kinetrace trigger: --output " + path +
                     ": the working directory cannot be read: " + std::strerror(errno));
  }
  cwd.resize(std::strlen(cwd.c_str()));
  if (path == ".") return cwd;
  if (path.rfind("./", 0) == 0) path.erase(0, 2);
  return cwd == "/" ? "/" + path : cwd + "/" + path;
}

// "RUN.PID.sock: recording to PATH from step 120" from the socket's name and answer.
std::string describe(const std::string& socket, const std::string& answer) {
  const std::string name = socket.substr(socket.rfind('/') + 1);
  if (answer.rfind("ok ", 0) == 0) {
    // "ok PATH<TAB>from step S", the path percent-encoded so that it is one word.
    const std::string text = answer.substr(3);
    const std::size_t tab = text.find('\t');
    const std::string word = text.substr(0, tab);
    const std::string path = ondemand::decodedPath(word).value_or(word);
    return name + ": recording to " + path +
           (tab == std::string::npos ? "" : " " + text.substr(tab + 1));
  }
  if (answer.rfind("refused ", 0) == 0) return name + ": refused: " + answer.substr(8);
  return name + ": unexpected answer: " + answer;
}

// The step count a process reports to `status` ("ok step=K state=S"); -1 when it does not.
int64_t stepOf(const std::string& socket) {
  runfiles::TriggerRequest status;
  status.verb = runfiles::TriggerRequest::Verb::Status;
  const std::string answer = runfiles::sendRequest(socket, status);
  const std::size_t at = answer.find("step=");
  if (answer.rfind("ok ", 0) != 0 || at == std::string::npos) return -1;
  try {
    return std::stoll(answer.substr(at + 5));
  } catch (const std::exception&) {
    return -1;
  }
}

// A step every process of a job still has ahead: the furthest one's step, plus about a
// second at the fastest pace seen (sampled over kPaceSampleMs), and at least 2 steps, so the
// requests reach every process before any of them gets there.
constexpr int kPaceSampleMs = 250;
int64_t commonStartStep(const std::vector<std::string>& sockets) {
  std::vector<int64_t> before;
  for (const std::string& socket : sockets) before.push_back(stepOf(socket));
  timespec pause{0, kPaceSampleMs * 1000000L};
  nanosleep(&pause, nullptr);
  int64_t furthest = 0;
  int64_t fastest = 0;  // steps in the sample
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    const int64_t now = stepOf(sockets[i]);
    furthest = std::max(furthest, now);
    if (before[i] >= 0 && now >= before[i]) fastest = std::max(fastest, now - before[i]);
  }
  return furthest + std::max<int64_t>(2, fastest * 1000 / kPaceSampleMs + 1);
}

}  // namespace

void applyLibkinetoConfig(const std::string& text, TriggerOptions* options, int64_t* startAtNs,
                          std::string* ignored) {
  // The keys are read as the dynolog daemon's configs are (ondemand/kineto_config.h); the
  // command line wins over them.
  const detail::Result<ondemand::KinetoConfig> parsed = ondemand::parseKinetoConfig(text);
  if (!parsed.ok()) throw UsageError("kinetrace trigger: --config: " + parsed.why());
  const ondemand::KinetoConfig& config = parsed.value();
  const bool lengthGiven = options->durationNs > 0 || options->steps > 0;
  if (!lengthGiven && config.iterations && (config.startIteration || !config.durationNs)) {
    options->steps = *config.iterations;
  } else if (!lengthGiven && config.durationNs) {
    options->durationNs = *config.durationNs;
  }
  if (config.startIteration && options->startStep < 0) options->startStep = *config.startIteration;
  if (config.roundUp && options->roundUp <= 1) options->roundUp = *config.roundUp;
  if (config.logFile && options->output.empty()) options->output = *config.logFile;
  if (config.startTimeMs && *config.startTimeMs > 0 && options->startInNs < 0) {
    if (*config.startTimeMs > INT64_MAX / 1000000) {
      throw UsageError("kinetrace trigger: --config: PROFILE_START_TIME=" +
                       std::to_string(*config.startTimeMs) + " is past the year 2262");
    }
    *startAtNs = *config.startTimeMs * 1000000;
  }
  for (const std::string& key : config.ignored) *ignored += (ignored->empty() ? "" : ", ") + key;
}

int triggerCommand(const TriggerOptions& given, std::FILE* out, std::FILE* /*err*/) {
  TriggerOptions options = given;
  int64_t startAtNs = 0;
  if (!options.configFile.empty()) {
    // A libkineto configuration is a few lines; a megabyte is plenty.
    constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
    std::string text;
    try {
      text = readSmallFile(options.configFile, kMaxConfigBytes);
    } catch (const Error& error) {
      throw UsageError(std::string("kinetrace trigger: --config: ") + error.what());
    }
    if (text.empty()) {
      throw UsageError("kinetrace trigger: --config: cannot read " + options.configFile);
    }
    std::string ignored;
    applyLibkinetoConfig(text, &options, &startAtNs, &ignored);
    if (!ignored.empty()) {
      std::fprintf(out, "kinetrace trigger: %s: not used here: %s\n", options.configFile.c_str(),
                   ignored.c_str());
    }
  }
  if (options.durationNs <= 0 && options.steps <= 0) {
    throw UsageError(
        "kinetrace trigger: no duration or steps (--duration, --steps, or "
        "ACTIVITIES_DURATION_SECS, ACTIVITIES_ITERATIONS)");
  }
  // A relative path means the caller's directory, not the traced process's.
  if (!options.output.empty() && options.output[0] != '/') {
    const bool directory = options.output.back() == '/';
    options.output = absolutePath(options.output) + (directory ? "/" : "");
  }
  std::vector<std::string> sockets;
  try {
    // Killed processes could not remove their sockets: a stale one would only say "no
    // answer" (or be taken for a live process of the job).
    runfiles::removeStaleSockets();
    sockets = options.job.empty() ? runfiles::socketsOfPid(options.pid)
                                  : runfiles::socketsOfJob(options.job);
  } catch (const std::exception& error) {
    std::fprintf(out, "kinetrace trigger: %s\n", error.what());
    return 1;
  }
  if (sockets.empty()) {
    std::fprintf(out,
                 "kinetrace trigger: no traced process %s (run it under `kinetrace run`; "
                 "sockets are in %s)\n",
                 options.job.empty() ? ("with pid " + std::to_string(options.pid)).c_str()
                                     : ("of run " + options.job).c_str(),
                 runfiles::controlDirectory().c_str());
    return 1;
  }
  if (sockets.size() > 1 && !options.output.empty() && !isDirectory(options.output) &&
      options.output.back() != '/') {
    throw UsageError("kinetrace trigger: " + std::to_string(sockets.size()) +
                     " processes: --output must be a directory (each writes its own trace)");
  }
  runfiles::TriggerRequest request;
  request.output = options.output;
  if (options.steps > 0) {
    request.steps = options.steps;
    request.startStep = options.startStep;
    request.roundUpSteps = std::max<int64_t>(1, options.roundUp);
    if (request.startStep < 0 && sockets.size() > 1) {
      try {
        request.startStep = commonStartStep(sockets);
      } catch (const std::exception& error) {
        std::fprintf(out, "kinetrace trigger: %s\n", error.what());
        return 1;
      }
      std::fprintf(out, "kinetrace trigger: %zu processes start at step %lld\n", sockets.size(),
                   static_cast<long long>(request.startStep));
    }
  } else {
    request.durationNs = options.durationNs;
    const int64_t startIn = options.startInNs >= 0 ? options.startInNs
                            : options.job.empty()  ? 0
                                                   : kJobStartDelayNs;
    request.startAtNs = startAtNs != 0 ? startAtNs : (startIn > 0 ? realTimeNs() + startIn : 0);
  }
  int status = 0;
  for (const std::string& socket : sockets) {
    try {
      const std::string answer = runfiles::sendRequest(socket, request);
      std::fprintf(out, "%s\n", describe(socket, answer).c_str());
      if (answer.rfind("ok ", 0) != 0) status = 1;
    } catch (const std::exception& error) {
      std::fprintf(out, "kinetrace trigger: %s\n", error.what());
      status = 1;
    }
  }
  return status;
}

}  // namespace kinetrace::cli
