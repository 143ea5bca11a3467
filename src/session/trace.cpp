#include "kinetrace/trace.h"

#include <nlohmann/json.hpp>

#include "kinetrace/error.h"
#include "model/trace_data.h"
#include "output/trace_events.h"

namespace kinetrace {

Trace::Trace() : data_(std::make_shared<detail::TraceData>()) {}
Trace::Trace(std::shared_ptr<detail::TraceData> data) : data_(std::move(data)) {}

void Trace::save(const std::string& url) const {
  std::unique_ptr<Sink> sink = openSink(url);
  detail::emitTrace(*data_, url, *sink);
}

void Trace::writeTo(Sink& sink) const { detail::emitTrace(*data_, "", sink); }

// Metadata edits copy the data when the trace is shared, so a copy handed out earlier
// never changes under its holder.
static detail::TraceData& ownData(std::shared_ptr<detail::TraceData>& data) {
  if (data.use_count() > 1) data = std::make_shared<detail::TraceData>(*data);
  return *data;
}

void Trace::addMetadata(const std::string& key, std::string_view value) {
  ownData(data_).setMetadataJson(key, nlohmann::json(std::string(value)).dump(
                                          -1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void Trace::addMetadata(const std::string& key, int64_t value) {
  ownData(data_).setMetadataJson(key, nlohmann::json(value).dump());
}

void Trace::addMetadata(const std::string& key, double value) {
  ownData(data_).setMetadataJson(key, nlohmann::json(value).dump());
}

void Trace::addMetadataJson(const std::string& key, const std::string& json) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& error) {
    throw Error("kinetrace: metadata \"" + key + "\" is not valid JSON: " + error.what());
  }
  ownData(data_).setMetadataJson(key, parsed.dump());
}

TraceStats Trace::stats() const {
  const detail::TraceData& d = *data_;
  TraceStats s;
  s.hostRanges = d.ranges.size();
  s.hostInstants = d.instants.size();
  s.counterSamples = d.counters.size();
  s.gpuKernels = d.kernels.size();
  s.gpuMemcpys = d.memcpys.size();
  s.gpuMemsets = d.memsets.size();
  s.gpuSyncs = d.syncs.size();
  s.gpuMemoryEvents = d.memory.size();
  s.apiCalls = d.apiCalls.size();
  s.droppedHostEvents = d.losses.droppedHostEvents;
  s.droppedGpuRecords = d.losses.cuptiDroppedRecords;
  s.gpuBufferRequestsRefused = d.losses.cuptiBuffersRefused;
  s.outOfWindowEvents = d.losses.outOfWindowEvents;
  s.unfinishedRanges = d.losses.unfinishedRanges;
  return s;
}

int64_t Trace::startNs() const { return data_->startNs; }
int64_t Trace::stopNs() const { return data_->stopNs; }

}  // namespace kinetrace
