#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cupti/cupti_api.h"
#include "cupti/cupti_source.h"
#include "synthetic_buffer.h"

// A CuptiApi that records what the code under test asked of CUPTI and answers as the test
// says, plus the few helpers that drive a CuptiSource with it (no driver, no GPU).

namespace kinetrace::synthetic {

using detail::CuptiApi;
using detail::CuptiSource;
using detail::GpuBatch;
using detail::GpuOptions;
using detail::GpuSource;
using detail::StringTable;
using CallbackKey = std::pair<CUpti_CallbackDomain, uint32_t>;

// The CuptiApi calls, for making one of them fail.
enum class Call {
  GetVersion,
  Subscribe,
  Unsubscribe,
  EnableCallback,
  ActivityEnable,
  ActivityDisable,
  RegisterCallbacks,
  RegisterTimestampCallback,
  FlushAll,
  FlushPeriod,
  GetNumDroppedRecords,
  GetTimestamp,
};

// Every CUPTI call the source makes, recorded; results chosen by the test.
//
// Threads: configure it before enabling the source. The calls CUPTI's own threads make
// (the buffer callbacks and the drop count they ask for) may then come from any thread;
// everything else from the test's thread.
class FakeCuptiApi final : public CuptiApi {
 public:
  // ---- what the test configures -------------------------------------------------
  std::map<Call, CUptiResult> failing;  // each call listed returns its result, doing nothing
  std::map<CUpti_ActivityKind, CUptiResult> activityEnableResults;
  std::map<CallbackKey, CUptiResult> enableCallbackResults;
  std::map<CallbackKey, std::string> callbackNames;
  std::atomic<std::size_t> droppedOnNextQuery{0};  // returned once, then 0 (CUPTI resets on read)
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
  uint32_t flushPeriodMs = 0;  // as last set through activityFlushPeriod

  // The flag of every cuptiActivityFlushAll call, in order.
  std::vector<uint32_t> flushes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return flushes_;
  }

  CUptiResult getVersion(uint32_t* version) override {
    if (CUptiResult result = failure(Call::GetVersion)) return result;
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
  }
  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc fn,
                        void* userData) override {
    if (CUptiResult result = failure(Call::Subscribe)) return result;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(this);
    subscribed = true;
    callback = fn;
    callbackUserData = userData;
    return CUPTI_SUCCESS;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override {
    if (CUptiResult result = failure(Call::Unsubscribe)) return result;
    subscribed = false;
    enabledCallbacks.clear();  // CUPTI drops a subscriber's callbacks with it
    return CUPTI_SUCCESS;
  }
  CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                             CUpti_CallbackId cbid) override {
    if (CUptiResult result = failure(Call::EnableCallback)) return result;
    auto configured = enableCallbackResults.find({domain, cbid});
    if (enable != 0 && configured != enableCallbackResults.end()) return configured->second;
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
    if (CUptiResult result = failure(Call::ActivityEnable)) return result;
    auto configured = activityEnableResults.find(kind);
    if (configured != activityEnableResults.end() && configured->second != CUPTI_SUCCESS) {
      return configured->second;
    }
    enabledKinds.insert(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityDisable(CUpti_ActivityKind kind) override {
    if (CUptiResult result = failure(Call::ActivityDisable)) return result;
    enabledKinds.erase(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requestFn,
                                        CUpti_BuffersCallbackCompleteFunc completeFn) override {
    if (CUptiResult result = failure(Call::RegisterCallbacks)) return result;
    request = requestFn;
    complete = completeFn;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) override {
    if (CUptiResult result = failure(Call::RegisterTimestampCallback)) return result;
    timestampCallback = fn;
    return CUPTI_SUCCESS;
  }
  // As CUPTI does, hands over the buffers it holds (hold()) through the completion callback
  // before returning.
  CUptiResult activityFlushAll(uint32_t flag) override {
    std::vector<Held> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flushes_.push_back(flag);
      if (CUptiResult result = failure(Call::FlushAll)) return result;
      held.swap(held_);
    }
    for (const Held& h : held) complete(nullptr, 0, h.buffer, h.size, h.validSize);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityFlushPeriod(uint32_t milliseconds) override {
    if (CUptiResult result = failure(Call::FlushPeriod)) return result;
    flushPeriodMs = milliseconds;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) override {
    if (CUptiResult result = failure(Call::GetNumDroppedRecords)) return result;
    *dropped = droppedOnNextQuery.exchange(0);
    return CUPTI_SUCCESS;
  }
  CUptiResult getCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override {
    auto found = callbackNames.find({domain, cbid});
    if (found == callbackNames.end()) return CUPTI_ERROR_INVALID_PARAMETER;
    *name = found->second.c_str();
    return CUPTI_SUCCESS;
  }
  CUptiResult getTimestamp(uint64_t* timestamp) override {
    if (CUptiResult result = failure(Call::GetTimestamp)) return result;
    *timestamp = cuptiNowNs;
    return CUPTI_SUCCESS;
  }
  // A node's id is its handle's value, so a test knows it without a table.
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
  CUptiResult getGraphNodeId(CUgraphNode node, uint64_t* id) override {
    *id = reinterpret_cast<uintptr_t>(node);
    return CUPTI_SUCCESS;
  }

  // ---- CUPTI's side of the activity buffers ---------------------------------------

  // Asks the source for a buffer and fills it with `records`; nullptr when refused.
  uint8_t* fill(const SyntheticBuffer& records, size_t& size, size_t& validSize) {
    uint8_t* buffer = nullptr;
    size_t maxRecords = 0;
    size = 0;
    request(&buffer, &size, &maxRecords);
    if (buffer == nullptr) return nullptr;
    validSize = records.copyTo(buffer, size);
    EXPECT_EQ(validSize, records.size()) << "the records fit in one buffer";
    return buffer;
  }
  // One buffer filled with `records` and handed back at once, as CUPTI does with a full
  // buffer. Returns the buffer, or nullptr (a test failure) when the source refused one.
  uint8_t* deliver(const SyntheticBuffer& records) {
    uint8_t* buffer = tryDeliver(records);
    EXPECT_NE(buffer, nullptr) << "the source refused a buffer";
    return buffer;
  }
  // deliver(), for tests where a refusal is expected: nullptr then, and nothing failed.
  uint8_t* tryDeliver(const SyntheticBuffer& records) {
    size_t size = 0, validSize = 0;
    uint8_t* buffer = fill(records, size, validSize);
    if (buffer != nullptr) complete(nullptr, 0, buffer, size, validSize);
    return buffer;
  }
  // One buffer filled with `records` and kept, as CUPTI keeps a buffer that is not full,
  // until the next cuptiActivityFlushAll.
  void hold(const SyntheticBuffer& records) {
    Held h{};
    h.buffer = fill(records, h.size, h.validSize);
    ASSERT_NE(h.buffer, nullptr) << "the source refused a buffer";
    std::lock_guard<std::mutex> lock(mutex_);
    held_.push_back(h);
  }

 private:
  struct Held {
    uint8_t* buffer;
    size_t size;
    size_t validSize;
  };

  CUptiResult failure(Call call) const {
    auto found = failing.find(call);
    return found == failing.end() ? CUPTI_SUCCESS : found->second;
  }

  mutable std::mutex mutex_;
  std::vector<uint32_t> flushes_;
  std::vector<Held> held_;
};

// One CUDA API call as CUPTI reports it to a subscriber: the same CUpti_CallbackData at
// entry and at exit, with the per-call slot CUPTI keeps for the subscriber in between.
class SimulatedCall {
 public:
  SimulatedCall(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlationId,
                CUcontext context = nullptr, const void* params = nullptr)
      : domain_(domain), cbid_(cbid) {
    data_.functionParams = params;
    data_.correlationData = &slot_;
    data_.correlationId = correlationId;
    data_.context = context;
    data_.functionReturnValue = &returnValue_;
  }
  void enter(CUpti_CallbackFunc callback, void* userData) {
    data_.callbackSite = CUPTI_API_ENTER;
    callback(userData, domain_, cbid_, &data_);
  }
  // The call returned `result` (cudaError_t or CUresult; 0 is success).
  void exit(CUpti_CallbackFunc callback, void* userData, int result = 0) {
    returnValue_ = result;
    data_.callbackSite = CUPTI_API_EXIT;
    callback(userData, domain_, cbid_, &data_);
  }
  void run(CUpti_CallbackFunc callback, void* userData, int result = 0) {
    enter(callback, userData);
    exit(callback, userData, result);
  }

 private:
  CUpti_CallbackDomain domain_;
  uint32_t cbid_;
  uint64_t slot_ = 0;
  int returnValue_ = 0;
  CUpti_CallbackData data_{};
};

// ---- driving a CuptiSource with the fake ----------------------------------------------

// Whether `text` contains `part`, showing both when not.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

constexpr std::size_t kBufferBytes = 64 * 1024;

inline GpuOptions kernelsOnly() {
  GpuOptions options;
  options.activities.add(Activity::Kernel);
  options.bufferBytes = kBufferBytes;
  options.maxBufferBytes = 16 * kBufferBytes;
  return options;
}

inline GpuOptions everything() {
  GpuOptions options = kernelsOnly();
  for (Activity a : {Activity::Memcpy, Activity::Memset, Activity::Sync, Activity::Memory,
                     Activity::Overhead, Activity::Launch}) {
    options.activities.add(a);
  }
  return options;
}

inline CuptiSource::Environment environment(FakeCuptiApi& fake) {
  CuptiSource::Environment env;
  env.cupti = &fake;
  env.useDriver = false;
  return env;
}

// Polls until every buffer handed over is decoded, into a batch of its own.
inline GpuBatch pollOnce(GpuSource& source, StringTable& strings) {
  GpuBatch batch;
  while (source.poll(batch, strings)) {
  }
  return batch;
}

}  // namespace kinetrace::synthetic
