#include "activity_trace.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "kinetrace/error.h"
#include "kinetrace/event.h"
#include "kinetrace/sink.h"
#include "output/trace_vocabulary.h"
#include "session/seam.h"

namespace kinetrace::kineto {

// GenericTraceActivity's metadata (a friend of the class).
struct ActivityMetadata {
  static const auto& of(const libkineto::GenericTraceActivity& activity) {
    return activity.metadataMap_;
  }
};

using libkineto::ActivityType;
using libkineto::GenericTraceActivity;
namespace chrome = detail::chrome;

void SharedMetadata::add(const std::string& key, const std::string& json) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [known, value] : entries_) {
    if (known == key) {
      value = json;
      return;
    }
  }
  entries_.emplace_back(key, json);
}

std::vector<std::pair<std::string, std::string>> SharedMetadata::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_;
}

namespace {

// Range ids (kinetrace's own ranges) start here; a framework's correlation ids stay below.
constexpr uint64_t kFirstRangeId = uint64_t{1} << 40;

// kinetrace files each operation under the category libkineto names its activity type by
// ("kernel", "gpu_memcpy", "cuda_runtime"), so its type is read back from that name. A
// whole graph's run ("cuda_graph", graph-level tracing) has no type of its own in kineto:
// GPU work that frameworks' views count as a kernel.
ActivityType activityTypeOf(const internal::TraceOperation& op) {
  if (op.kind == kinetrace::detail::RecordKind::Graph) return ActivityType::CONCURRENT_KERNEL;
  try {
    return libkineto::toActivityType(std::string(op.category));
  } catch (const std::invalid_argument&) {
    return ActivityType::CONCURRENT_KERNEL;  // a category kineto lacks: GPU work all the same
  }
}

bool isCall(const internal::TraceOperation& op) {
  return op.kind == kinetrace::detail::RecordKind::ApiCall;
}

// The framework's arguments of one activity as trace args: values it marked quoted are
// strings (unescaped as JSON would be), the others JSON text where valid, else strings.
class FrameworkArgs {
 public:
  explicit FrameworkArgs(const GenericTraceActivity& activity) {
    const auto& metadata = ActivityMetadata::of(activity);
    values_.reserve(metadata.size());
    for (const auto& [key, entry] : metadata) {
      const auto& [text, quoted] = entry;
      if (quoted) {
        std::optional<Value> decoded = internal::parseJson("\"" + text + "\"");
        const bool ok = decoded && decoded->kind() == Value::Kind::String;
        values_.push_back({&key, ok ? decoded->asString() : text, true});
      } else {
        values_.push_back({&key, text, !internal::parseJson(text).has_value()});
      }
    }
  }

  // The args, valid while this object lives.
  std::vector<Arg> args(int64_t externalId) const {
    std::vector<Arg> out;
    out.reserve(values_.size() + 1);
    out.push_back(Arg{chrome::kArgExternalId, externalId});
    for (const Entry& entry : values_) {
      if (entry.asString) {
        out.push_back(Arg{*entry.key, std::string_view(entry.text)});
      } else {
        out.push_back(Arg{*entry.key, JsonText{entry.text}});
      }
    }
    return out;
  }

 private:
  struct Entry {
    const std::string* key;
    std::string text;
    bool asString;
  };
  std::vector<Entry> values_;
};

// Passes kinetrace's trace through to the real sink and adds the framework's activities,
// thread names and metadata; shifts kinetrace's times into the framework's time base.
class FrameworkMergingSink final : public Sink {
 public:
  FrameworkMergingSink(Sink& out, const StoppedRecording& recording,
                       const std::vector<const GenericTraceActivity*>& gpuAnnotations)
      : out_(out), recording_(recording), gpuAnnotations_(gpuAnnotations) {}

  void begin(const TraceHeader& header) override {
    TraceHeader shifted = header;
    shifted.baseTimeNs = header.baseTimeNs + recording_.clockOffsetNs;
    // The framework's ops may begin before the window kinetrace recorded.
    for (const auto& buffer : recording_.cpuTraces) {
      for (const auto& activity : buffer->activities) {
        if (activity->startTime > 0) {
          shifted.baseTimeNs = std::min(shifted.baseTimeNs, activity->startTime);
        }
      }
    }
    out_.begin(shifted);
  }

  void write(const Event& event) override {
    Event shifted = event;
    shifted.timestampNs += recording_.clockOffsetNs;
    out_.write(shifted);
  }

  // Passed on as tracks, so a sink with typed tracks gets them so.
  void describe(const Track& track) override {
    Track shifted = track;
    shifted.sinceNs += recording_.clockOffsetNs;
    out_.describe(shifted);
  }

  void end(const Metadata& footer) override {
    writeFrameworkActivities();
    Metadata merged = footer;
    merged.push_back({"kinetrace_backend", Value("libkineto_api")});
    merged.push_back({"kinetrace_framework_clock_offset_ns", Value(recording_.clockOffsetNs)});
    if (!recording_.recorded) {
      merged.push_back(
          {"kinetrace_note", Value("nothing was recorded by kinetrace for this trace (see the "
                                   "program's messages): it holds the framework's CPU activity "
                                   "only")});
    }
    for (const auto& [key, json] : recording_.metadata->entries()) {
      std::optional<Value> value = internal::parseJson(json);
      merged.push_back({key, value ? std::move(*value) : Value(json)});
    }
    out_.end(merged);
  }

 private:
  void writeFrameworkActivities() {
    for (const auto& [tid, name] : recording_.threadNames) {
      const Arg arg{chrome::kNamingName, std::string_view(name)};
      Event e;
      e.phase = Phase::Metadata;
      e.name = chrome::kThreadName;
      e.pid = libkineto::processId();
      e.tid = tid;
      e.args = &arg;
      e.argCount = 1;
      out_.write(e);
    }
    for (const auto& buffer : recording_.cpuTraces) {
      for (const auto& activity : buffer->activities) writeActivity(*activity);
    }
    writeGpuAnnotations();
  }

  // On each stream's annotation track (where kinetrace puts its own ranges' GPU spans),
  // named as kinetrace names it.
  void writeGpuAnnotations() {
    std::set<std::pair<int32_t, int32_t>> tracks;
    for (const GenericTraceActivity* a : gpuAnnotations_) {
      const int64_t tid = internal::gpuAnnotationTrackTid(static_cast<uint32_t>(a->resource));
      if (tracks.insert({a->device, a->resource}).second) {
        const std::string name = "stream " + std::to_string(a->resource) + " annotations";
        const Arg arg{chrome::kNamingName, std::string_view(name)};
        Event m;
        m.phase = Phase::Metadata;
        m.name = chrome::kThreadName;
        m.pid = a->device;
        m.tid = tid;
        m.args = &arg;
        m.argCount = 1;
        out_.write(m);
      }
      const std::string name = a->name();
      const Arg arg{chrome::kArgExternalId, int64_t{a->id}};
      Event e;
      e.category = chrome::kCatGpuAnnotation;
      e.name = name;
      e.pid = a->device;
      e.tid = tid;
      e.timestampNs = a->startTime;
      e.durationNs = a->endTime - a->startTime;
      e.args = &arg;
      e.argCount = 1;
      out_.write(e);
    }
  }

  void writeActivity(const GenericTraceActivity& activity) {
    const std::string name = activity.name();
    FrameworkArgs frameworkArgs(activity);
    const std::vector<Arg> args = frameworkArgs.args(activity.id);
    Event e;
    e.phase = activity.type() == ActivityType::CPU_INSTANT_EVENT ? Phase::Instant : Phase::Complete;
    e.category = libkineto::toString(activity.type());
    e.name = name;
    e.pid = activity.device;
    e.tid = activity.resource;
    e.timestampNs = activity.startTime;
    e.durationNs = std::max<int64_t>(0, activity.endTime - activity.startTime);
    e.args = args.data();
    e.argCount = args.size();
    out_.write(e);
    if (activity.flow.type == libkineto::kLinkFwdBwd && activity.flow.id != 0) {
      // The forward op starts the arrow; its backward op ends it.
      Event flow;
      flow.phase = activity.flow.start ? Phase::FlowStart : Phase::FlowEnd;
      flow.category = chrome::kFlowForwardBackward;
      flow.name = chrome::kFlowForwardBackward;
      flow.pid = activity.device;
      flow.tid = activity.resource;
      flow.timestampNs = activity.startTime;
      flow.flowId = activity.flow.id;
      out_.write(flow);
    }
  }

  Sink& out_;
  const StoppedRecording& recording_;
  const std::vector<const GenericTraceActivity*>& gpuAnnotations_;
};

// The framework's user annotations of each thread, to find the innermost one around a
// launch call. Annotations on one thread nest, so the latest-starting one that contains a
// time is the innermost.
class AnnotationsByThread {
 public:
  void add(const GenericTraceActivity* annotation) {
    byThread_[annotation->resource].push_back(annotation);
  }
  void sort() {
    for (auto& [tid, list] : byThread_) {
      std::sort(list.begin(), list.end(),
                [](const auto* a, const auto* b) { return a->startTime < b->startTime; });
    }
  }
  const GenericTraceActivity* innermost(int64_t tid, int64_t timeNs) const {
    auto thread = byThread_.find(static_cast<int32_t>(tid));
    if (thread == byThread_.end()) return nullptr;
    const auto& list = thread->second;
    auto after =
        std::upper_bound(list.begin(), list.end(), timeNs,
                         [](int64_t t, const GenericTraceActivity* a) { return t < a->startTime; });
    while (after != list.begin()) {
      --after;
      if ((*after)->endTime >= timeNs) return *after;
    }
    return nullptr;
  }
  bool empty() const { return byThread_.empty(); }

 private:
  std::unordered_map<int32_t, std::vector<const GenericTraceActivity*>> byThread_;
};

}  // namespace

ActivityTrace::ActivityTrace(StoppedRecording recording)
    : recording_(std::move(recording)), span_(0, 0, "kinetrace") {
  if (recording_.metadata == nullptr) recording_.metadata = std::make_shared<SharedMetadata>();
  if (recording_.recorded) {
    span_.startTime = recording_.trace.startNs() + recording_.clockOffsetNs;
    span_.endTime = recording_.trace.stopNs() + recording_.clockOffsetNs;
  }
  for (const auto& buffer : recording_.cpuTraces) {
    for (const auto& activity : buffer->activities) all_.push_back(activity.get());
  }
  if (recording_.recorded && recording_.trace.hasEvents()) addGpuActivities();
}

void ActivityTrace::addGpuActivities() {
  // The framework's ops by the correlation id it pushed around them (its ids are 32-bit).
  std::unordered_map<int32_t, const GenericTraceActivity*> opsById;
  AnnotationsByThread annotations;
  for (const auto& buffer : recording_.cpuTraces) {
    for (const auto& activity : buffer->activities) {
      if (activity->activityType == ActivityType::CPU_OP && activity->id != 0) {
        opsById.emplace(activity->id, activity.get());
      } else if (activity->activityType == ActivityType::USER_ANNOTATION) {
        annotations.add(activity.get());
      }
    }
  }
  annotations.sort();

  // The user annotation around each launch call, by correlation id; the GPU span of each
  // annotation on each stream.
  std::unordered_map<uint32_t, const GenericTraceActivity*> annotationOfLaunch;
  if (!annotations.empty()) {
    internal::visitOperations(recording_.trace, [&](const internal::TraceOperation& op) {
      if (!isCall(op) || op.correlationId == 0) return;
      const GenericTraceActivity* annotation =
          annotations.innermost(op.tid, op.startNs + recording_.clockOffsetNs);
      if (annotation != nullptr) annotationOfLaunch.emplace(op.correlationId, annotation);
    });
  }
  struct AnnotationSpan {
    int64_t startNs;
    int64_t endNs;
  };
  std::map<std::tuple<const GenericTraceActivity*, uint32_t, uint32_t>, AnnotationSpan> spans;

  internal::visitOperations(recording_.trace, [&](const internal::TraceOperation& op) {
    const ActivityType type = activityTypeOf(op);
    GenericTraceActivity& activity = gpu_.emplace_back(span_, type, std::string(op.name));
    activity.startTime = op.startNs + recording_.clockOffsetNs;
    activity.endTime = op.endNs + recording_.clockOffsetNs;
    activity.id = static_cast<int32_t>(op.correlationId);
    const bool call = isCall(op);
    if (call) {
      activity.device = static_cast<int32_t>(op.pid);
      activity.resource = static_cast<int32_t>(op.tid);
      activity.threadId = static_cast<int32_t>(op.tid);
    } else {
      activity.device = static_cast<int32_t>(op.deviceId);
      activity.resource = static_cast<int32_t>(op.streamId);
    }
    if (op.externalId != 0 && op.externalId < kFirstRangeId) {
      auto found = opsById.find(static_cast<int32_t>(op.externalId));
      if (found != opsById.end()) activity.linked = found->second;
    }
    // An arrow only where both of its ends are in the trace, as in kinetrace's own.
    if (op.paired && op.correlationId != 0 && type != ActivityType::CUDA_SYNC) {
      activity.flow.id = op.correlationId;
      activity.flow.type = libkineto::kLinkAsyncCpuGpu;
      activity.flow.start = call ? 1 : 0;
    }
    if (op.externalId != 0) activity.addMetadata(chrome::kArgExternalId, op.externalId);
    if (!call) {
      activity.addMetadata(chrome::kArgDevice, op.deviceId);
      activity.addMetadata(chrome::kArgStream, op.streamId);
    }
    activity.addMetadata(chrome::kArgCorrelation, op.correlationId);
    all_.push_back(&activity);
    if (call || type == ActivityType::CUDA_SYNC) return;
    auto annotation = annotationOfLaunch.find(op.correlationId);
    if (annotation == annotationOfLaunch.end()) return;
    auto [span, added] = spans.try_emplace({annotation->second, op.deviceId, op.streamId},
                                           AnnotationSpan{activity.startTime, activity.endTime});
    if (!added) {
      span->second.startNs = std::min(span->second.startNs, activity.startTime);
      span->second.endNs = std::max(span->second.endNs, activity.endTime);
    }
  });

  for (const auto& [key, extent] : spans) {
    const auto& [annotation, device, stream] = key;
    GenericTraceActivity& activity =
        gpu_.emplace_back(span_, ActivityType::GPU_USER_ANNOTATION, annotation->activityName);
    activity.startTime = extent.startNs;
    activity.endTime = extent.endNs;
    activity.id = annotation->id;
    activity.device = static_cast<int32_t>(device);
    activity.resource = static_cast<int32_t>(stream);
    // Not linked, as libkineto leaves it: PyTorch then lists the span as a device event of
    // its own in key_averages() instead of adding it to the annotation's own device time.
    activity.addMetadata(chrome::kArgExternalId, annotation->id);
    all_.push_back(&activity);
    gpuAnnotations_.push_back(&activity);
  }
}

void ActivityTrace::saveUnder(const std::string& path, const detail::PathRule& rule) {
  std::unique_ptr<Sink> sink = internal::openSinkUnder(path, rule);
  FrameworkMergingSink merging(*sink, recording_, gpuAnnotations_);
  if (recording_.recorded && recording_.trace.hasEvents()) {
    recording_.trace.writeTo(merging);
    return;
  }
  TraceHeader header;
  header.traceName = path;
  header.baseTimeNs = std::numeric_limits<int64_t>::max();
  for (const auto& buffer : recording_.cpuTraces) {
    header.baseTimeNs = std::min(header.baseTimeNs, buffer->span.startTime);
  }
  if (header.baseTimeNs == std::numeric_limits<int64_t>::max()) header.baseTimeNs = 0;
  merging.begin(header);
  merging.end({});
}

}  // namespace kinetrace::kineto
