// kinetrace's libkineto-compatible API: the one concrete activity.
//
// PyTorch builds these inline (CpuTraceBuffer::emplace_activity), sets the public fields
// directly and adds metadata after the trace stopped, so the layout below -- member order,
// types, the Flow bit-fields -- and the order of the virtual functions are ABI, checked
// against the wheel's headers by libkineto_api/abi.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

#include "ITraceActivity.h"
#include "ThreadUtil.h"
#include "TraceSpan.h"

namespace kinetrace::kineto {
struct ActivityMetadata;  // how kinetrace's backend reads the metadata it writes out
}

namespace libkineto {

// GenericTraceActivity::Flow::type values.
constexpr unsigned int kLinkFwdBwd = 1;       // a forward op and its backward op
constexpr unsigned int kLinkAsyncCpuGpu = 2;  // a launch call and the GPU work it started

class GenericTraceActivity : public ITraceActivity {
 public:
  GenericTraceActivity() : activityType(ActivityType::ENUM_COUNT), traceSpan_(nullptr) {}
  GenericTraceActivity(const TraceSpan& trace, ActivityType type, const std::string& name)
      : activityType(type), activityName(name), traceSpan_(&trace) {}

  int64_t deviceId() const override { return device; }
  int64_t resourceId() const override { return resource; }
  void setDevice(int32_t newDevice) { device = newDevice; }
  int32_t getThreadId() const override { return threadId; }
  int64_t timestamp() const override { return startTime; }
  int64_t duration() const override { return endTime - startTime; }
  int64_t correlationId() const override { return id; }
  ActivityType type() const override { return activityType; }
  const ITraceActivity* linkedActivity() const override { return linked; }
  int flowType() const override { return flow.type; }
  int64_t flowId() const override { return flow.id; }
  bool flowStart() const override { return flow.start; }
  const std::string name() const override { return activityName; }
  const TraceSpan* traceSpan() const override { return traceSpan_; }
  // kinetrace writes traces through its own sinks: this logs nothing.
  void log(ActivityLogger& logger) const override;

  // A value written unquoted (a number, or JSON text such as "[[8, 512]]"). The first
  // value of a key stays.
  template <typename ValType>
  void addMetadata(const std::string& key, const ValType& value) {
    metadataMap_.emplace(key, std::make_pair(fmt::format("{}", value), false));
  }
  // A value written as a JSON string (the caller escapes it).
  void addMetadataQuoted(const std::string& key, const std::string& value) {
    metadataMap_.emplace(key, std::make_pair(value, true));
  }

  const std::string getMetadataValue(const std::string& key) const override {
    auto found = metadataMap_.find(key);
    return found != metadataMap_.end() ? found->second.first : "";
  }

  const std::string metadataJson() const override {
    std::stringstream json;
    const char* separator = "";
    for (const auto& [key, value] : metadataMap_) {
      json << separator << '"' << key << "\": ";
      if (value.second) {
        json << '"' << value.first << '"';
      } else {
        json << value.first;
      }
      separator = ", ";
    }
    return json.str();
  }

  ~GenericTraceActivity() override {}

  int64_t startTime{0};  // epoch nanoseconds
  int64_t endTime{0};
  int32_t id{0};  // correlation id
  int32_t device{0};
  int32_t resource{0};
  int32_t threadId{0};
  ActivityType activityType;
  std::string activityName;
  struct Flow {
    Flow() : id(0), type(0), start(0) {}
    uint32_t id;  // unique within its type
    uint32_t type : 4;
    uint32_t start : 1;
  } flow;
  const ITraceActivity* linked{nullptr};

 private:
  friend struct ::kinetrace::kineto::ActivityMetadata;  // a friend adds nothing to the layout

  const TraceSpan* traceSpan_;
  // key -> (value, whether the value is written as a JSON string)
  std::unordered_map<std::string, std::pair<std::string, bool>> metadataMap_;
};

}  // namespace libkineto
