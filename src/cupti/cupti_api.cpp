#include "cupti/cupti_api.h"

#include "support/log.h"

namespace kinetrace::detail {
namespace {

class RealCuptiApi final : public CuptiApi {
 public:
  CUptiResult getVersion(uint32_t* version) override { return cuptiGetVersion(version); }
  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                        void* userData) override {
    return cuptiSubscribe(subscriber, callback, userData);
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle subscriber) override {
    return cuptiUnsubscribe(subscriber);
  }
  CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) override {
    return cuptiEnableCallback(enable, subscriber, domain, cbid);
  }
  CUptiResult enableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                           CUpti_CallbackDomain domain) override {
    return cuptiEnableDomain(enable, subscriber, domain);
  }
  CUptiResult activityEnable(CUpti_ActivityKind kind) override { return cuptiActivityEnable(kind); }
  CUptiResult activityDisable(CUpti_ActivityKind kind) override { return cuptiActivityDisable(kind); }
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete) override {
    return cuptiActivityRegisterCallbacks(request, complete);
  }
  CUptiResult activityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) override {
    return cuptiActivityRegisterTimestampCallback(callback);
  }
  CUptiResult activityFlushAll(uint32_t flag) override { return cuptiActivityFlushAll(flag); }
  CUptiResult activityFlushPeriod(uint32_t milliseconds) override {
    return cuptiActivityFlushPeriod(milliseconds);
  }
  CUptiResult activityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                           size_t* dropped) override {
    return cuptiActivityGetNumDroppedRecords(context, streamId, dropped);
  }
  CUptiResult getCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) override {
    return cuptiGetCallbackName(domain, cbid, name);
  }
  CUptiResult getTimestamp(uint64_t* timestamp) override { return cuptiGetTimestamp(timestamp); }
  CUptiResult getGraphExecId(CUgraphExec graphExec, uint32_t* id) override {
    return cuptiGetGraphExecId(graphExec, id);
  }
  CUptiResult getStreamId(CUstream stream, bool perThread, uint32_t* id) override {
    return cuptiGetStreamIdEx(nullptr, stream, perThread ? 1 : 0, id);
  }
  CUptiResult getContextId(CUcontext context, uint32_t* id) override {
    return cuptiGetContextId(context, id);
  }
  CUptiResult getGraphNodeId(CUgraphNode node, uint64_t* id) override {
    return cuptiGetGraphNodeId(node, id);
  }
};

}  // namespace

CuptiApi& realCuptiApi() {
  // Never destroyed: a session may stop and flush from an atexit handler (CUDA injection),
  // which can run after the static destructors of objects constructed before it.
  static RealCuptiApi* api = new RealCuptiApi();
  return *api;
}

std::string describeCuptiResult(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

Status cuptiStatus(CUptiResult result, std::string_view call) {
  if (result == CUPTI_SUCCESS) return {};
  return Failure{std::string(call) + ": " + describeCuptiResult(result)};
}

bool cuptiSucceeded(CUptiResult result, std::string_view call) noexcept {
  if (result == CUPTI_SUCCESS) return true;
  try {
    log(LogLevel::Warning, "{}", cuptiStatus(result, call).why());
  } catch (...) {
    // Logging itself failed (out of memory): the result still says what happened.
  }
  return false;
}

}  // namespace kinetrace::detail
