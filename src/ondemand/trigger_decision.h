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

// mkdir -p of `dir`, and of the directory a trace at `path` goes into; says which part failed.
detail::Status makeDirectories(const std::string& dir);
detail::Status makeParentDirectories(const std::string& path);

// The answer for a request taken: "ok PATH", and for steps "<TAB>from step S", with
// `noStepsNote` after it when the process has marked no step yet (what marks one).
std::string acceptedAnswer(const TriggerWindow& window, int64_t stepsSeen,
                           const std::string& noStepsNote);

// The trace's record of who asked for it (kinetrace_trigger): the origin, what was asked,
// and the request's id when it has one.
Value triggerMetadata(const TriggerWindow& window);

}  // namespace kinetrace::ondemand
