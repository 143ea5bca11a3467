#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ondemand/trigger_request.h"
#include "support/result.h"

// libkineto's on-demand config, as the dynolog daemon hands it over (`dyno gputrace` writes
// it), turned into a TriggerRequest. One KEY=VALUE a line, whitespace trimmed, '#' starts a
// comment:
//
//   ACTIVITIES_LOG_FILE=/tmp/trace.json          where the trace goes, with "_<pid>" added
//   PROFILE_START_TIME=<ms since the epoch>      by time: when to start (0 = now)
//   ACTIVITIES_DURATION_MSECS=500                ... and for how long (or _SECS)
//   PROFILE_START_ITERATION=0                    by steps: the first step (0 = the next)
//   PROFILE_START_ITERATION_ROUNDUP=R            ... rounded up to a multiple of R
//   ACTIVITIES_ITERATIONS=N                      ... and how many
//   REQUEST_TRACE_ID=<id>                        kept in the trace's metadata
//   PROFILE_REPORT_INPUT_SHAPES, PROFILE_PROFILE_MEMORY, PROFILE_WITH_STACK,
//   PROFILE_WITH_FLOPS, PROFILE_WITH_MODULES     what PyTorch records beside (true/false)
//
// Other keys are libkineto's own tuning (warm-up, buffer sizes, activity types) and are
// listed as ignored. The daemon's RPC has no authentication, so the trace may only be written
// where libkineto would write it: under /tmp/ or $KINETO_ONDEMAND_TRACE_DIR, where the path
// really lands once every link is followed (the request's outputRule, support/path_rule.h).

namespace kinetrace::ondemand {

// The longest window a config may ask for.
constexpr int64_t kMaxWindowNs = int64_t{366} * 24 * 3600 * 1'000'000'000;

// What a config text says, key by key (absent keys stay unset).
struct KinetoConfig {
  std::optional<std::string> logFile;
  std::optional<int64_t> startTimeMs;  // since the epoch; 0 = now
  std::optional<int64_t> durationNs;
  std::optional<int64_t> startIteration;  // set (>= 0): a window of steps
  std::optional<int64_t> roundUp;
  std::optional<int64_t> iterations;
  std::string requestTraceId;
  FrameworkOptions framework;
  std::vector<std::string> ignored;  // keys not honoured, in the order given
};

// The keys of `text`; failure: the line or value that is wrong, naming the key.
detail::Result<KinetoConfig> parseKinetoConfig(std::string_view text);

struct KinetoConfigRequest {
  TriggerRequest request;            // output: the trace's path, "_<pid>" added
  std::vector<std::string> ignored;  // keys not honoured, in the order given
};

// The request `text` asks of process `pid` as the daemon hands it over, by libkineto's rules:
// a duration unless PROFILE_START_ITERATION is set (500 ms by default), one step by default.
// `onDemandDir` is $KINETO_ONDEMAND_TRACE_DIR ("" when unset). Failure: why it cannot be
// honoured, naming the key.
detail::Result<KinetoConfigRequest> requestFromKinetoConfig(std::string_view text, int64_t pid,
                                                            const std::string& onDemandDir);

// What both front-ends do with a config the daemon handed over: the request, or nothing
// when it cannot be honoured (why is logged as a warning; keys without effect at debug level).
std::optional<TriggerRequest> requestFromDaemon(std::string_view text, int64_t pid,
                                                const std::string& onDemandDir);

// libkineto's naming, the one `dyno gputrace` prints: every ".json" of the file's name becomes
// "_<pid>.json" ("/tmp/t.json" -> "/tmp/t_42.json"); the directories on the way keep their
// names. A name without ".json" gets "_<pid>" before a ".pftrace" ending, or at its end.
std::string withPid(const std::string& logFile, int64_t pid);

// The rule a trace the daemon asks for is written under: inside /tmp or `onDemandDir` (when
// absolute), once links are followed; missing directories made there only.
detail::PathRule onDemandOutputRule(const std::string& onDemandDir);

// Whether `variable` is set to 1, true, yes or on (any case), as libkineto reads
// KINETO_USE_DAEMON. libkineto_api polls the daemon when KINETO_USE_DAEMON is; the injection
// when KINETRACE_DYNOLOG is (what `kinetrace run --dynolog` sets) or KINETO_USE_DAEMON is:
// under the injection a PyTorch program must not see KINETO_USE_DAEMON, which would start
// its own libkineto's daemon client beside kinetrace's.
bool daemonRequested(const char* variable = "KINETO_USE_DAEMON");
// $KINETO_ONDEMAND_TRACE_DIR, "" when unset.
std::string onDemandTraceDir();

}  // namespace kinetrace::ondemand
