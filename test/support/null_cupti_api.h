#pragma once

#include <cupti.h>

#include "cupti/cupti_api.h"

// A CuptiApi on which every call succeeds and does nothing: the base for test and benchmark
// stand-ins that override only the calls they care about. Out-parameters are zeroed; no
// callback has a name unless an override gives it one.

namespace kinetrace::detail {

class NullCuptiApi : public CuptiApi {
 public:
  CUptiResult getVersion(uint32_t* version) override {
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
  }
  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) override {
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(this);
    return CUPTI_SUCCESS;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override { return CUPTI_SUCCESS; }
  CUptiResult enableCallback(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                             CUpti_CallbackId) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult enableDomain(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult activityEnable(CUpti_ActivityKind) override { return CUPTI_SUCCESS; }
  CUptiResult activityDisable(CUpti_ActivityKind) override { return CUPTI_SUCCESS; }
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
                                        CUpti_BuffersCallbackCompleteFunc) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult activityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult activityFlushAll(uint32_t) override { return CUPTI_SUCCESS; }
  CUptiResult activityFlushPeriod(uint32_t) override { return CUPTI_SUCCESS; }
  CUptiResult activityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) override {
    *dropped = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult getCallbackName(CUpti_CallbackDomain, uint32_t, const char**) override {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  CUptiResult getTimestamp(uint64_t* timestamp) override {
    *timestamp = 0;
    return CUPTI_SUCCESS;
  }
  // Ids are the handles' values, so a test knows them without a table.
  CUptiResult getGraphExecId(CUgraphExec graphExec, uint32_t* id) override {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graphExec));
    return CUPTI_SUCCESS;
  }
  CUptiResult getStreamId(CUstream stream, bool perThread, uint32_t* id) override {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(stream)) + (perThread ? 1000 : 0);
    return CUPTI_SUCCESS;
  }
  CUptiResult getContextId(CUcontext context, uint32_t* id) override {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(context));
    return CUPTI_SUCCESS;
  }
  CUptiResult getGraphNodeId(CUgraphNode, uint64_t* id) override {
    *id = 0;
    return CUPTI_SUCCESS;
  }
};

}  // namespace kinetrace::detail
