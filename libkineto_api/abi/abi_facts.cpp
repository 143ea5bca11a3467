// Prints, as JSON, every fact of the libkineto ABI that an installed PyTorch relies on:
// sizes, alignments and field offsets of the types it builds or reads inline, the values
// of the enums it passes, the layout of GenericTraceActivity::Flow's bit-fields, and the
// vtable slot of every virtual function it calls.
//
// Compiled twice from this one source: against the kineto headers a PyTorch wheel ships
// (the facts committed next to this file were recorded that way, see README.md), and
// against libkineto_api/include (a test compares the two outputs).
//
// Itanium C++ ABI facts used: a pointer to a virtual member function holds 1 + the byte
// offset of its vtable slot; explicit template instantiation may name private members,
// which is how the offsets of private fields are read without changing the headers.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <new>
#include <string>

#include "libkineto.h"

using namespace libkineto;

// GenericTraceActivity's key function (its first virtual function defined out of line):
// defining it here gives this program the class's vtable, which the library would.
void GenericTraceActivity::log(ActivityLogger& /*logger*/) const {}

namespace {

// ---- private members, through explicit instantiation ---------------------------------

template <typename Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type memberOf(Tag) { return Member; }
};

struct TraceSpanOfActivity {
  using type = const TraceSpan* GenericTraceActivity::*;
  friend type memberOf(TraceSpanOfActivity);
};
template struct Expose<TraceSpanOfActivity, &GenericTraceActivity::traceSpan_>;

struct MetadataOfActivity {
  using type =
      std::unordered_map<std::string, std::pair<std::string, bool>> GenericTraceActivity::*;
  friend type memberOf(MetadataOfActivity);
};
template struct Expose<MetadataOfActivity, &GenericTraceActivity::metadataMap_>;

struct ProfilerOfApi {
  using type = std::unique_ptr<ActivityProfilerInterface> LibkinetoApi::*;
  friend type memberOf(ProfilerOfApi);
};
template struct Expose<ProfilerOfApi, &LibkinetoApi::activityProfiler_>;
struct ClientOfApi {
  using type = ClientInterface* LibkinetoApi::*;
  friend type memberOf(ClientOfApi);
};
template struct Expose<ClientOfApi, &LibkinetoApi::client_>;
struct ClientThreadOfApi {
  using type = int32_t LibkinetoApi::*;
  friend type memberOf(ClientThreadOfApi);
};
template struct Expose<ClientThreadOfApi, &LibkinetoApi::clientRegisterThread_>;
struct FactoriesOfApi {
  using type = std::vector<ChildActivityProfilerFactory> LibkinetoApi::*;
  friend type memberOf(FactoriesOfApi);
};
template struct Expose<FactoriesOfApi, &LibkinetoApi::childProfilerFactories_>;

// ---- measuring -----------------------------------------------------------------------

std::map<std::string, long long> facts;

template <typename Object, typename Field>
void offset(const std::string& name, Object& object, Field& field) {
  facts["offset." + name] =
      reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&object);
}

template <typename T>
void size(const std::string& name) {
  facts["sizeof." + name] = static_cast<long long>(sizeof(T));
  facts["alignof." + name] = static_cast<long long>(alignof(T));
}

// The vtable slot (in pointers) of a virtual member function.
template <typename MemberFunction>
void slot(const std::string& name, MemberFunction function) {
  static_assert(sizeof(function) == 2 * sizeof(std::uintptr_t), "Itanium member pointer");
  std::uintptr_t words[2];
  std::memcpy(words, &function, sizeof words);
  facts["vslot." + name] = (words[0] & 1) != 0
                               ? static_cast<long long>((words[0] - 1) / sizeof(void*))
                               : -1;  // not virtual
}

void measureTypes() {
  size<ITraceActivity>("ITraceActivity");
  size<GenericTraceActivity>("GenericTraceActivity");
  size<GenericTraceActivity::Flow>("GenericTraceActivity::Flow");
  size<TraceSpan>("TraceSpan");
  size<CpuTraceBuffer>("CpuTraceBuffer");
  size<LibkinetoApi>("LibkinetoApi");
  size<ActivityProfilerInterface>("ActivityProfilerInterface");
  size<ActivityTraceInterface>("ActivityTraceInterface");
  size<ClientInterface>("ClientInterface");
  size<IActivityProfiler>("IActivityProfiler");
  size<ActivityType>("ActivityType");

  TraceSpan span(0, 0, "span");
  offset("TraceSpan.startTime", span, span.startTime);
  offset("TraceSpan.endTime", span, span.endTime);
  offset("TraceSpan.opCount", span, span.opCount);
  offset("TraceSpan.iteration", span, span.iteration);
  offset("TraceSpan.name", span, span.name);
  offset("TraceSpan.prefix", span, span.prefix);

  GenericTraceActivity activity(span, ActivityType::CPU_OP, "op");
  offset("GenericTraceActivity.startTime", activity, activity.startTime);
  offset("GenericTraceActivity.endTime", activity, activity.endTime);
  offset("GenericTraceActivity.id", activity, activity.id);
  offset("GenericTraceActivity.device", activity, activity.device);
  offset("GenericTraceActivity.resource", activity, activity.resource);
  offset("GenericTraceActivity.threadId", activity, activity.threadId);
  offset("GenericTraceActivity.activityType", activity, activity.activityType);
  offset("GenericTraceActivity.activityName", activity, activity.activityName);
  offset("GenericTraceActivity.flow", activity, activity.flow);
  offset("GenericTraceActivity.linked", activity, activity.linked);
  offset("GenericTraceActivity.traceSpan_", activity, activity.*memberOf(TraceSpanOfActivity{}));
  offset("GenericTraceActivity.metadataMap_", activity, activity.*memberOf(MetadataOfActivity{}));
  facts["value.GenericTraceActivity().traceSpan_is_argument"] =
      activity.traceSpan() == &span ? 1 : 0;

  // Flow's bit-fields: which bits of the word after `id` hold `type` and `start`. Built in
  // zeroed storage, so that the bits no field covers read as zero.
  auto bitsOf = [](unsigned type, unsigned start) {
    alignas(GenericTraceActivity::Flow) unsigned char raw[sizeof(GenericTraceActivity::Flow)] = {};
    auto* flow = new (raw) GenericTraceActivity::Flow();
    flow->type = type & 0xF;
    flow->start = start & 1;
    uint32_t word = 0;
    std::memcpy(&word, raw + sizeof(uint32_t), sizeof word);
    return static_cast<long long>(word);
  };
  static_assert(sizeof(GenericTraceActivity::Flow) == 2 * sizeof(uint32_t), "Flow is two words");
  facts["bits.Flow.type_mask"] = bitsOf(0xF, 0);
  facts["bits.Flow.start_mask"] = bitsOf(0, 1);

  CpuTraceBuffer buffer;
  offset("CpuTraceBuffer.span", buffer, buffer.span);
  offset("CpuTraceBuffer.gpuOpCount", buffer, buffer.gpuOpCount);
  offset("CpuTraceBuffer.activities", buffer, buffer.activities);

  alignas(LibkinetoApi) unsigned char loaderBytes[64] = {};
  LibkinetoApi api(*reinterpret_cast<ConfigLoader*>(loaderBytes));
  offset("LibkinetoApi.activityProfiler_", api, api.*memberOf(ProfilerOfApi{}));
  offset("LibkinetoApi.client_", api, api.*memberOf(ClientOfApi{}));
  offset("LibkinetoApi.clientRegisterThread_", api, api.*memberOf(ClientThreadOfApi{}));
  offset("LibkinetoApi.childProfilerFactories_", api, api.*memberOf(FactoriesOfApi{}));
  // The reference member comes first: the object's first word points at the loader.
  void* first = nullptr;
  std::memcpy(&first, &api, sizeof first);
  facts["value.LibkinetoApi.configLoader_at_offset_0"] = first == loaderBytes ? 1 : 0;
}

void measureEnums() {
  const std::pair<const char*, ActivityType> types[] = {
      {"CPU_OP", ActivityType::CPU_OP},
      {"USER_ANNOTATION", ActivityType::USER_ANNOTATION},
      {"GPU_USER_ANNOTATION", ActivityType::GPU_USER_ANNOTATION},
      {"GPU_MEMCPY", ActivityType::GPU_MEMCPY},
      {"GPU_MEMSET", ActivityType::GPU_MEMSET},
      {"CONCURRENT_KERNEL", ActivityType::CONCURRENT_KERNEL},
      {"EXTERNAL_CORRELATION", ActivityType::EXTERNAL_CORRELATION},
      {"CUDA_RUNTIME", ActivityType::CUDA_RUNTIME},
      {"CUDA_DRIVER", ActivityType::CUDA_DRIVER},
      {"CPU_INSTANT_EVENT", ActivityType::CPU_INSTANT_EVENT},
      {"PYTHON_FUNCTION", ActivityType::PYTHON_FUNCTION},
      {"OVERHEAD", ActivityType::OVERHEAD},
      {"MTIA_RUNTIME", ActivityType::MTIA_RUNTIME},
      {"MTIA_CCP_EVENTS", ActivityType::MTIA_CCP_EVENTS},
      {"MTIA_INSIGHT", ActivityType::MTIA_INSIGHT},
      {"CUDA_SYNC", ActivityType::CUDA_SYNC},
      {"CUDA_EVENT", ActivityType::CUDA_EVENT},
      {"GLOW_RUNTIME", ActivityType::GLOW_RUNTIME},
      {"CUDA_PROFILER_RANGE", ActivityType::CUDA_PROFILER_RANGE},
      {"HPU_OP", ActivityType::HPU_OP},
      {"XPU_RUNTIME", ActivityType::XPU_RUNTIME},
      {"XPU_DRIVER", ActivityType::XPU_DRIVER},
      {"COLLECTIVE_COMM", ActivityType::COLLECTIVE_COMM},
      {"PRIVATEUSE1_RUNTIME", ActivityType::PRIVATEUSE1_RUNTIME},
      {"PRIVATEUSE1_DRIVER", ActivityType::PRIVATEUSE1_DRIVER},
      {"ENUM_COUNT", ActivityType::ENUM_COUNT},
      {"OPTIONAL_ACTIVITY_TYPE_START", ActivityType::OPTIONAL_ACTIVITY_TYPE_START},
  };
  for (const auto& [name, value] : types) {
    facts[std::string("enum.ActivityType.") + name] = static_cast<long long>(value);
  }
  facts["const.activityTypeCount"] = activityTypeCount;
  facts["const.defaultActivityTypeCount"] = defaultActivityTypeCount;
  facts["const.kLinkFwdBwd"] = kLinkFwdBwd;
  facts["const.kLinkAsyncCpuGpu"] = kLinkAsyncCpuGpu;
}

void measureVirtualFunctions() {
  // Slots 0 and 1 of every class below are its virtual destructor (complete, deleting).
  slot("ITraceActivity::deviceId", &ITraceActivity::deviceId);
  slot("ITraceActivity::resourceId", &ITraceActivity::resourceId);
  slot("ITraceActivity::getThreadId", &ITraceActivity::getThreadId);
  slot("ITraceActivity::timestamp", &ITraceActivity::timestamp);
  slot("ITraceActivity::duration", &ITraceActivity::duration);
  slot("ITraceActivity::correlationId", &ITraceActivity::correlationId);
  slot("ITraceActivity::flowType", &ITraceActivity::flowType);
  slot("ITraceActivity::flowId", &ITraceActivity::flowId);
  slot("ITraceActivity::flowStart", &ITraceActivity::flowStart);
  slot("ITraceActivity::type", &ITraceActivity::type);
  slot("ITraceActivity::name", &ITraceActivity::name);
  slot("ITraceActivity::linkedActivity", &ITraceActivity::linkedActivity);
  slot("ITraceActivity::traceSpan", &ITraceActivity::traceSpan);
  slot("ITraceActivity::log", &ITraceActivity::log);
  slot("ITraceActivity::metadataJson", &ITraceActivity::metadataJson);
  slot("ITraceActivity::getMetadataValue", &ITraceActivity::getMetadataValue);

  slot("ActivityProfilerInterface::init", &ActivityProfilerInterface::init);
  slot("ActivityProfilerInterface::isInitialized", &ActivityProfilerInterface::isInitialized);
  slot("ActivityProfilerInterface::isActive", &ActivityProfilerInterface::isActive);
  slot("ActivityProfilerInterface::scheduleTrace", &ActivityProfilerInterface::scheduleTrace);
  slot("ActivityProfilerInterface::prepareTrace", &ActivityProfilerInterface::prepareTrace);
  slot("ActivityProfilerInterface::toggleCollectionDynamic",
       &ActivityProfilerInterface::toggleCollectionDynamic);
  slot("ActivityProfilerInterface::startTrace", &ActivityProfilerInterface::startTrace);
  slot("ActivityProfilerInterface::stopTrace", &ActivityProfilerInterface::stopTrace);
  slot("ActivityProfilerInterface::step", &ActivityProfilerInterface::step);
  slot("ActivityProfilerInterface::pushCorrelationId",
       &ActivityProfilerInterface::pushCorrelationId);
  slot("ActivityProfilerInterface::popCorrelationId", &ActivityProfilerInterface::popCorrelationId);
  slot("ActivityProfilerInterface::transferCpuTrace", &ActivityProfilerInterface::transferCpuTrace);
  slot("ActivityProfilerInterface::pushUserCorrelationId",
       &ActivityProfilerInterface::pushUserCorrelationId);
  slot("ActivityProfilerInterface::popUserCorrelationId",
       &ActivityProfilerInterface::popUserCorrelationId);
  slot("ActivityProfilerInterface::recordThreadInfo", &ActivityProfilerInterface::recordThreadInfo);
  slot("ActivityProfilerInterface::addMetadata", &ActivityProfilerInterface::addMetadata);
  slot("ActivityProfilerInterface::addChildActivityProfiler",
       &ActivityProfilerInterface::addChildActivityProfiler);
  slot("ActivityProfilerInterface::logInvariantViolation",
       &ActivityProfilerInterface::logInvariantViolation);

  slot("ActivityTraceInterface::activities", &ActivityTraceInterface::activities);
  slot("ActivityTraceInterface::save", &ActivityTraceInterface::save);

  slot("ClientInterface::init", &ClientInterface::init);
  slot("ClientInterface::prepare", &ClientInterface::prepare);
  slot("ClientInterface::start", &ClientInterface::start);
  slot("ClientInterface::stop", &ClientInterface::stop);
  slot("ClientInterface::start_memory_profile", &ClientInterface::start_memory_profile);
  slot("ClientInterface::stop_memory_profile", &ClientInterface::stop_memory_profile);
  slot("ClientInterface::export_memory_profile", &ClientInterface::export_memory_profile);
}

}  // namespace

int main() {
  measureTypes();
  measureEnums();
  measureVirtualFunctions();
  std::cout << "{\n";
  const char* separator = "";
  for (const auto& [name, value] : facts) {
    std::cout << separator << "  \"" << name << "\": " << value;
    separator = ",\n";
  }
  std::cout << "\n}\n";
  return 0;
}
