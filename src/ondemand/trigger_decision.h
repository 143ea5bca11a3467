#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kinetrace/value.h"
#include "ondemand/trigger_request.h"
#include "ondemand/trigger_window.h"
#include "support/result.h"

// The one rule by which a process takes or refuses a request to record on demand, whether
// `kinetrace trigger` sent it over the socket or the dynolog daemon handed it over as a
// libkineto config: the injection's controller and libkineto_api's on-demand driver both
// ask these functions, so the two channels and the two front-ends answer alike.

namespace kinetrace::ondemand {

// A path as one word of a request or answer line: percent-encoded ("%20" for a space, "%25"
// for '%', "%0A" for a newline), so that any path fits and none can cut the line short.
std::string encodedPath(const std::string& path);
// The path a word encodes; nothing when it is not a valid encoding.
std::optional<std::string> decodedPath(const std::string& word);
// Why a requested path cannot be used as given (a NUL byte, which would cut it short where
// the system reads it, or another control character); nothing when it can.
std::optional<std::string> whyPathUnusable(const std::string& path);

// Whether a record request is well formed: one way to end it (a duration or steps), and
// starts that go with it. Says what to fix.
detail::Status checkRequest(const TriggerRequest& request);

// What the process is doing when a request arrives, as the front-end sees it under its lock.
struct ProcessState {
  bool ending = false;  // exiting, or its tracing is off
  bool recording = false;
  int window = 0;             // with recording: the window's number
  std::string recordingPath;  // with recording: where it goes
  bool recordsUntilExit = false;
  std::string pendingPath;  // a triggered window waits for its start: its path
  std::string heldBy;       // the capture mode holds the process: why it waits; "" = free
};

// Why a request cannot be taken now; nothing when it can.
std::optional<std::string> refusalNow(const ProcessState& state);

// Where a triggered window goes: the path asked for; or, when that is a directory (one that
// exists, or a path ending in '/'), `fileName` in it; or `fileName` in `defaultDir` when
// nothing was asked.
std::string triggeredPath(const std::string& requested, const std::string& defaultDir,
                          const std::string& fileName);

// Makes a trace at `path` ready to be written under `rule` (support/path_rule.h): its
// directories made where the rule allows, the path resolved with every link followed, and a
// file made and removed beside it. A request is taken only after this says yes, so a
// requester is never told "ok" for a trace that cannot be written (/dev/null, a directory
// of /proc, a link out of the allowed directories). Failure: why, naming the part at fault.
detail::Status prepareOutput(const std::string& path, const detail::PathRule& rule);

// How far ahead a window may start: a window waiting for its start holds off every other
// request, so one that would start in a year (or never: a start time or step near INT64_MAX)
// would leave the process answering "busy" for the rest of its life.
constexpr int64_t kMaxStartLeadNs = int64_t{3600} * 1'000'000'000;  // an hour
constexpr int64_t kMaxStartLeadSteps = 1'000'000;

// Why `window`, taken at `nowBootNs` with `nextStep` the next step to be marked, would start
// further ahead than the limits above; nothing when it starts within them.
std::optional<std::string> whyStartTooFar(const TriggerWindow& window, int64_t nowBootNs,
                                          int64_t nextStep);

// The answer for a request taken: "ok PATH" (the path encoded), and for steps "<TAB>from step S",
// with `noStepsNote` after it when the process has marked no step yet (what marks one).
std::string acceptedAnswer(const TriggerWindow& window, int64_t stepsSeen,
                           const std::string& noStepsNote);

// The trace's record of who asked for it (kinetrace_trigger): the origin, what was asked,
// and the request's id when it has one.
Value triggerMetadata(const TriggerWindow& window);

}  // namespace kinetrace::ondemand
