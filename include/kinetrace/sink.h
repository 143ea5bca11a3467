#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kinetrace/event.h"
#include "kinetrace/export.h"

namespace kinetrace {

// What a sink learns before the first event.
struct TraceHeader {
  std::string traceName;   // the URL or path the trace is saved to
  int64_t baseTimeNs = 0;  // the earliest timestamp in the trace, epoch ns
  // Top-level metadata in the order it should appear, each value already valid JSON text
  // ("1", "\"nccl\"", "{...}"). Keys that must precede the events (distributedInfo) come first.
  std::vector<std::pair<std::string, std::string>> metadataJson;
};

// Receives a trace as a stream: begin() once, write() per event, end() once.
// Called from the thread that saves the trace, never concurrently. Errors are thrown as
// kinetrace::Error; after a throw no further call is made.
class KINETRACE_API Sink {
 public:
  virtual ~Sink();
  virtual void begin(const TraceHeader& header) = 0;
  virtual void write(const Event& event) = 0;
  // Completes the output (for files: makes the file appear). Not called after an error.
  virtual void end() = 0;
};

// Makes a sink for a URL with the registered scheme ("myscheme://rest").
using SinkFactory = std::function<std::unique_ptr<Sink>(const std::string& url)>;

// Registers a factory for "scheme://..." URLs, replacing an earlier one of the same scheme.
// Built in: "file" and bare paths (Chrome trace JSON). Thread-safe.
KINETRACE_API void registerSink(const std::string& scheme, SinkFactory factory);
// Opens a sink for a URL or path. Unknown scheme: kinetrace::Error naming it and the known ones.
KINETRACE_API std::unique_ptr<Sink> openSink(const std::string& url);

// An event with its strings owned, as kept by MemorySink.
struct OwnedArg {
  std::string key;
  std::variant<int64_t, uint64_t, double, bool, std::string, Dim3> value;
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
  std::vector<OwnedArg> args;

  // The arg of that key, or nullptr.
  const OwnedArg* arg(const std::string& key) const;
};

// Keeps every event in memory, for programs that analyse a trace without a file.
class KINETRACE_API MemorySink : public Sink {
 public:
  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void end() override;

  const TraceHeader& header() const { return header_; }
  const std::vector<OwnedEvent>& events() const { return events_; }
  bool ended() const { return ended_; }

 private:
  TraceHeader header_;
  std::vector<OwnedEvent> events_;
  bool ended_ = false;
};

}  // namespace kinetrace
