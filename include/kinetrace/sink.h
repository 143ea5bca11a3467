#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kinetrace/event.h"
#include "kinetrace/export.h"
#include "kinetrace/value.h"

namespace kinetrace {

// What a sink learns before the first event.
struct TraceHeader {
  std::string traceName;   // the URL or path the trace is written to ("" for an in-memory sink)
  int64_t baseTimeNs = 0;  // epoch ns that event times are measured from (the window start)
  // Top-level metadata known before the events, in the order to write it. Keys that some
  // readers need before the events (schemaVersion, distributedInfo) come first.
  Metadata metadata;
};

// Receives a trace as a stream: begin() once, write() per event, end() once. A trace may be
// streamed while it is recorded, so events arrive in no particular time order and the
// metadata that is only known at the end (losses, peak memory, devices) comes with end().
//
// Called from one thread at a time (the thread that saves the trace, or kinetrace's
// pipeline thread while recording), never concurrently. Errors are thrown as
// kinetrace::Error; after a throw no further call is made except the destructor, which
// discards the output.
class KINETRACE_API Sink {
 public:
  virtual ~Sink();
  virtual void begin(const TraceHeader& header) = 0;
  virtual void write(const Event& event) = 0;
  // Describes a track: after begin(), before the first event that names it (Event::track),
  // and again, with the same id, when its name changes (a host thread named after its
  // first event); the later description is the one that holds. Parents are described
  // before their children.
  // The default writes it as the Chrome trace names tracks, through write(): Metadata
  // events (process_name, process_labels and process_sort_index for a process; thread_name
  // and thread_sort_index for the other tracks; nothing for a counter, which its events
  // name), so a sink that knows only events gets the tracks' names as events.
  virtual void describe(const Track& track);
  // Completes the output (for files: makes the file appear) with the metadata known only at
  // the end. A key may repeat one of the header's: the footer's value is the later word.
  virtual void end(const Metadata& footer) = 0;
};

// Makes a sink for a URL with the registered scheme ("myscheme://rest").
using SinkFactory = std::function<std::unique_ptr<Sink>(const std::string& url)>;

// Registers a factory for "scheme://..." URLs, replacing an earlier one of the same scheme.
// Built in: "file" and bare paths (Chrome trace JSON; ".json.gz" compressed; Perfetto's
// protobuf format for ".pftrace" and ".perfetto-trace"), and "perfetto://PATH" (always
// Perfetto's format). Thread-safe.
KINETRACE_API void registerSink(const std::string& scheme, SinkFactory factory);
// Opens a sink for a URL or path. Unknown scheme: kinetrace::Error naming it and the known
// ones; a path that cannot be written: kinetrace::Error naming the path and the reason.
KINETRACE_API std::unique_ptr<Sink> openSink(const std::string& url);

// An event with its strings owned, as kept by MemorySink.
struct OwnedJsonText {
  std::string text;
  bool operator==(const OwnedJsonText& o) const { return text == o.text; }
};
struct OwnedArg {
  std::string key;
  std::variant<int64_t, uint64_t, double, bool, std::string, Dim3, OwnedJsonText> value;
};
struct OwnedEvent {
  Phase phase = Phase::Complete;
  std::string name;
  std::string category;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t timestampNs = 0;
  int64_t durationNs = 0;
  uint64_t flowId = 0;
  uint64_t track = 0;
  std::vector<OwnedArg> args;

  // The arg of that key, or nullptr.
  const OwnedArg* arg(const std::string& key) const;
};

// A track with its strings owned, as kept by MemorySink.
struct OwnedTrack {
  uint64_t id = 0;
  uint64_t parent = 0;
  TrackKind kind = TrackKind::Thread;
  std::string name;
  std::string label;
  int64_t sortIndex = 0;
  std::string unit;
  std::string category;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t sinceNs = 0;
};

// Keeps every event in memory, for programs that analyse a trace without a file. Tracks are
// kept as described (tracks(): the latest description of each, in the order first
// described), and at end() also as the Chrome trace's naming events, once per track, at
// the end of events() as a Chrome trace file has them.
class KINETRACE_API MemorySink : public Sink {
 public:
  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void describe(const Track& track) override;
  void end(const Metadata& footer) override;

  const TraceHeader& header() const { return header_; }
  const Metadata& footer() const { return footer_; }
  const std::vector<OwnedEvent>& events() const { return events_; }
  const std::vector<OwnedTrack>& tracks() const { return tracks_; }
  // The track of that id, or nullptr.
  const OwnedTrack* track(uint64_t id) const;
  bool ended() const { return ended_; }
  // A top-level metadata value, the footer's when both have the key; nullptr when absent.
  const Value* metadata(const std::string& key) const;

 private:
  TraceHeader header_;
  Metadata footer_;
  std::vector<OwnedEvent> events_;
  std::vector<OwnedTrack> tracks_;
  bool ended_ = false;
};

}  // namespace kinetrace
