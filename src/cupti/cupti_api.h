#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "support/result.h"

// The narrow seam between kinetrace and libcupti: every CUPTI call the session makes goes
// through this interface, so tests can run the session logic against a fake that refuses,
// drops or succeeds on demand. Record decoding (cuptiActivityGetNextRecord) is not behind
// it: that is pure parsing and works the same on synthetic buffers without a GPU.

namespace kinetrace::detail {

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;
  virtual CUptiResult getVersion(uint32_t* version) = 0;
  virtual CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                void* userData) = 0;
  virtual CUptiResult unsubscribe(CUpti_SubscriberHandle subscriber) = 0;
  virtual CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                     CUpti_CallbackDomain domain, CUpti_CallbackId cbid) = 0;
  virtual CUptiResult enableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                   CUpti_CallbackDomain domain) = 0;
  virtual CUptiResult activityEnable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult activityDisable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                CUpti_BuffersCallbackCompleteFunc complete) = 0;
  virtual CUptiResult activityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) = 0;
  virtual CUptiResult activityFlushAll(uint32_t flag) = 0;
  virtual CUptiResult activityFlushPeriod(uint32_t milliseconds) = 0;
  virtual CUptiResult activityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                   size_t* dropped) = 0;
  virtual CUptiResult getCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                      const char** name) = 0;
  virtual CUptiResult getTimestamp(uint64_t* timestamp) = 0;
  // The id that kernel, copy and memset records give the node in `graphNodeId`.
  virtual CUptiResult getGraphNodeId(CUgraphNode node, uint64_t* id) = 0;
  // The ids activity records give an executable graph (`graphId`), a stream and a context.
  virtual CUptiResult getGraphExecId(CUgraphExec graphExec, uint32_t* id) = 0;
  virtual CUptiResult getStreamId(CUstream stream, bool perThread, uint32_t* id) = 0;
  virtual CUptiResult getContextId(CUcontext context, uint32_t* id) = 0;
};

// The process's libcupti.
CuptiApi& realCuptiApi();

// CUPTI's name and text for a result: "CUPTI_ERROR_NOT_INITIALIZED (...)".
std::string describeCuptiResult(CUptiResult result);

// The one check every CUPTI call goes through: succeeded, or which call failed and why
// ("cuptiActivityEnable(MEMCPY): CUPTI_ERROR_NOT_INITIALIZED").
Status cuptiStatus(CUptiResult result, std::string_view call);
// For calls whose failure does not stop tracing (disabling, flushing, counting drops):
// logs a warning naming the call and CUPTI's reason; returns whether the call succeeded.
bool cuptiSucceeded(CUptiResult result, std::string_view call) noexcept;

}  // namespace kinetrace::detail
