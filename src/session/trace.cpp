#include "kinetrace/trace.h"

#include "kinetrace/error.h"
#include "model/trace_data.h"
#include "output/trace_events.h"
#include "output/value_json.h"
#include "session/metadata.h"

namespace kinetrace {

namespace detail {
const TraceData& dataOf(const Trace& trace) { return *trace.data_; }
}  // namespace detail


Trace::Trace() : data_(std::make_shared<detail::TraceData>()) {}
Trace::Trace(std::shared_ptr<const detail::TraceData> data) : data_(std::move(data)) {}

void Trace::save(const std::string& url) const {
  if (!data_->hasEvents) {
    throw Error("cannot save this trace to " + url + ": its events were written to " +
                data_->outputPath +
                " while recording and are not held in memory (copy that file instead)");
  }
  std::unique_ptr<Sink> sink = openSink(url);
  detail::writeTrace(*data_, url, extra_, *sink);
}

void Trace::writeTo(Sink& sink) const {
  if (!data_->hasEvents) {
    throw Error("cannot write this trace: its events were written to " + data_->outputPath +
                " while recording and are not held in memory");
  }
  detail::writeTrace(*data_, "", extra_, sink);
}

// Added metadata lives beside the shared data: a copy of the trace handed out earlier never
// changes under its holder.
void Trace::addMetadata(const std::string& key, Value value) {
  detail::setMetadata(extra_, key, std::move(value));
}

void Trace::addMetadataJson(const std::string& key, const std::string& json) {
  std::optional<Value> parsed = detail::parseJsonValue(json);
  if (!parsed) throw Error("metadata \"" + key + "\" is not valid JSON: " + json);
  addMetadata(key, std::move(*parsed));
}

TraceStats Trace::stats() const {
  const detail::TraceData& d = *data_;
  TraceStats s;
  for (const detail::RecordKindInfo& kind : detail::kRecordKinds) {
    if (kind.stat != nullptr) s.*kind.stat = d.counts[kind.kind];
  }
  s.droppedHostEvents = d.losses.droppedHostEvents;
  s.droppedGpuRecords = d.losses.cuptiDroppedRecords;
  s.gpuBufferRequestsRefused = d.losses.cuptiBuffersRefused;
  s.droppedAssembledRecords = d.losses.droppedAssembledRecords;
  s.outOfWindowEvents = d.losses.outOfWindowEvents;
  s.unfinishedRanges = d.losses.unfinishedRanges;
  s.namesCut = d.losses.namesCut;
  s.droppedMetadata = d.losses.droppedMetadata;
  s.peakMemoryBytes = d.peakMemoryBytes;
  s.memoryCapBytes = d.memoryCapBytes;
  return s;
}

int64_t Trace::startNs() const { return data_->startNs; }
int64_t Trace::stopNs() const { return data_->stopNs; }
const std::string& Trace::outputPath() const { return data_->outputPath; }
const std::string& Trace::saveError() const { return data_->saveError; }
bool Trace::hasEvents() const { return data_->hasEvents; }

Metadata Trace::metadata() const {
  Metadata all = data_->header;
  for (const Value::Member& member : data_->footer) detail::setMetadata(all, member.key, member.value);
  for (const Value::Member& member : extra_) detail::setMetadata(all, member.key, member.value);
  return all;
}

}  // namespace kinetrace
