#pragma once

// A .pftrace TrackEvent decoded into a value that owns its strings: interned ids resolved
// through its packet sequence, debug annotations typed, flows, a legacy flow's phase and
// id, a counter's value. Separate from the reader because decoding a message is the same
// whatever the event turns out to be; what each kind of event becomes is the reader's.
// Malformed content throws kinetrace::Error saying what is wrong; the reader adds where.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/perfetto_sequences.h"
#include "kinetrace/event.h"

namespace kinetrace::detail {

// A debug annotation, decoded.
struct Annotation {
  std::string name;
  enum class Kind { None, Int, Uint, Double, Bool, String, Json, Dim3 } kind = Kind::None;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool b = false;
  std::string text;  // String and Json
  Dim3 dim;
};

// A decoded TrackEvent with its strings owned (a BEGIN waits for its END).
struct DecodedEvent {
  uint64_t type = 0;
  uint64_t track = 0;
  int64_t timeNs = 0;
  std::string name;
  std::string category;
  std::vector<Annotation> annotations;
  std::vector<uint64_t> flowIds;
  std::vector<uint64_t> terminatingFlowIds;
  int64_t legacyPhase = 0;  // a flow event's 's' or 'f' (layout 3)
  uint64_t legacyId = 0;
  bool hasCounter = false;
  bool counterIsDouble = false;
  int64_t counterInt = 0;
  double counterDouble = 0;
};

// A DebugAnnotation message. Arrays nest at most kMaxProtoDepth deep; the only array
// kinetrace writes is three integers (a Dim3), any other is an error.
Annotation decodeAnnotation(const SequenceState& sequence, std::string_view bytes,
                            std::size_t depth = 0);

// A TrackEvent message at `timeNs`; its track is the sequence's default unless it names one.
DecodedEvent decodeTrackEvent(const SequenceState& sequence, std::string_view bytes,
                              int64_t timeNs);

// An annotation as a sink's argument, pointing into it (a None is JSON's null).
ArgValue annotationArg(const Annotation& annotation);

}  // namespace kinetrace::detail
