#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "cupti/cupti_api.h"
#include "cupti/cupti_source.h"
#include "synthetic_buffer.h"

// A CuptiApi that records what the code under test asked of CUPTI and answers as the test
// says, plus the few helpers that drive a CuptiSource with it (no driver, no GPU).

namespace kinetrace::synthetic {

using detail::ApiCallRecord;
using detail::CuptiApi;
using detail::CuptiSource;
using detail::GpuOptions;
using detail::TraceData;
using CallbackKey = std::pair<CUpti_CallbackDomain, uint32_t>;

// Every CUPTI call the source makes, recorded; results chosen by the test. Used from the
// test's thread only (the source's decoder thread never calls CUPTI).
class FakeCuptiApi final : public CuptiApi {
 public:
  // ---- what the test configures -------------------------------------------------
  CUptiResult subscribeResult = CUPTI_SUCCESS;
  CUptiResult registerCallbacksResult = CUPTI_SUCCESS;
  CUptiResult timestampCallbackResult = CUPTI_SUCCESS;
  std::map<CUpti_ActivityKind, CUptiResult> activityEnableResults;
  std::map<CallbackKey, std::string> callbackNames;
  std::size_t droppedOnNextQuery = 0;  // returned once, then 0 (CUPTI resets on read)
  uint64_t cuptiNowNs = 0;

  // ---- what the source did ------------------------------------------------------
  bool subscribed = false;
  CUpti_CallbackFunc callback = nullptr;
  void* callbackUserData = nullptr;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc timestampCallback = nullptr;
  std::set<CUpti_ActivityKind> enabledKinds;
  std::set<CallbackKey> enabledCallbacks;
  int flushes = 0;
  uint32_t flushPeriodMs = 0;  // as last set through activityFlushPeriod

  CUptiResult getVersion(uint32_t* version) override {
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
  }
  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc fn, void* userData) override {
    if (subscribeResult != CUPTI_SUCCESS) return subscribeResult;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(this);
    subscribed = true;
    callback = fn;
    callbackUserData = userData;
    return CUPTI_SUCCESS;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override {
    subscribed = false;
    enabledCallbacks.clear();  // CUPTI drops a subscriber's callbacks with it
    return CUPTI_SUCCESS;
  }
  CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                             CUpti_CallbackId cbid) override {
    if (enable != 0) {
      enabledCallbacks.insert({domain, cbid});
    } else {
      enabledCallbacks.erase({domain, cbid});
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult enableDomain(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult activityEnable(CUpti_ActivityKind kind) override {
    auto configured = activityEnableResults.find(kind);
    if (configured != activityEnableResults.end() && configured->second != CUPTI_SUCCESS) {
      return configured->second;
    }
    enabledKinds.insert(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityDisable(CUpti_ActivityKind kind) override {
    enabledKinds.erase(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requestFn,
                                        CUpti_BuffersCallbackCompleteFunc completeFn) override {
    if (registerCallbacksResult != CUPTI_SUCCESS) return registerCallbacksResult;
    request = requestFn;
    complete = completeFn;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) override {
    if (timestampCallbackResult != CUPTI_SUCCESS) return timestampCallbackResult;
    timestampCallback = fn;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityFlushAll(uint32_t) override {
    ++flushes;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityFlushPeriod(uint32_t milliseconds) override {
    flushPeriodMs = milliseconds;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) override {
    *dropped = droppedOnNextQuery;
    droppedOnNextQuery = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult getCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) override {
    auto found = callbackNames.find({domain, cbid});
    if (found == callbackNames.end()) return CUPTI_ERROR_INVALID_PARAMETER;
    *name = found->second.c_str();
    return CUPTI_SUCCESS;
  }
  CUptiResult getTimestamp(uint64_t* timestamp) override {
    *timestamp = cuptiNowNs;
    return CUPTI_SUCCESS;
  }

  // CUPTI's side of one buffer: ask for it, fill it with `records`, hand it back.
  void deliver(const SyntheticBuffer& records) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t maxRecords = 0;
    request(&buffer, &size, &maxRecords);
    ASSERT_NE(buffer, nullptr);
    size_t valid = records.copyTo(buffer, size);
    ASSERT_EQ(valid, records.size());
    complete(nullptr, 0, buffer, size, valid);
  }
};

// ---- driving a CuptiSource with the fake ----------------------------------------------

// Whether `text` contains `part`, showing both when not.

inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

inline GpuOptions kernelsOnly() {
  GpuOptions options;
  options.kernels = true;
  options.bufferBytes = 64 * 1024;
  options.capBytes = 1024 * 1024;
  return options;
}

inline GpuOptions everything() {
  GpuOptions options = kernelsOnly();
  options.memcpy = options.memset = options.sync = options.memory = options.overhead = true;
  options.launchCalls = true;
  return options;
}

inline CuptiSource::Environment environment(FakeCuptiApi& fake) {
  CuptiSource::Environment env;
  env.cupti = &fake;
  env.initializeDriver = false;
  env.useDriver = false;
  return env;
}

// A trace whose window is [1000, 10000] in the records' (fake CUPTI) time.
inline TraceData window() {
  TraceData trace;
  trace.startNs = 1000;
  trace.stopNs = 10000;
  return trace;
}

inline ApiCallRecord launchCall(uint32_t correlationId, uint32_t cbid = 0) {
  ApiCallRecord call;
  call.correlationId = correlationId;
  call.callbackId = cbid;
  return call;
}

}  // namespace kinetrace::synthetic
