#include "inject/nvtx_injection.h"

// Types only: kinetrace is the tool, not an NVTX client.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "inject/nvtx_payload.h"
#include "kinetrace/host.h"
#include "session/seam.h"

// nvtxDomainRegistration_st and nvtxStringRegistration_st are opaque to applications: the
// tool defines them. Handles point at these, which are never freed (NVTX has no way to
// tell a tool that every user of a handle is gone).
struct nvtxDomainRegistration_st {
  std::string name;
};
struct nvtxStringRegistration_st {
  std::string text;
};

namespace kinetrace::inject {
namespace {

// The level NVTX asks push/pop to return, per thread; kept whether or not recording.
thread_local int tNvtxDepth = 0;

inline bool recording() noexcept {
  return kinetrace::recording();
}

std::atomic<uint64_t> gInstances{0};

// Event calls are counted per thread, so threads making NVTX calls never write a shared
// cache line. Each thread's counters are linked in on its first call and never freed: they
// outlive the thread, whose counts still belong in the trace.
struct ThreadCounts {
  std::atomic<uint64_t> calls{0};  // written by the owning thread only, read by nvtxCounts()
  std::atomic<uint64_t> recorded{0};
  ThreadCounts* next = nullptr;
};
std::atomic<ThreadCounts*> gThreadCounts{nullptr};
thread_local ThreadCounts* tCounts = nullptr;

[[gnu::noinline]] ThreadCounts* registerThreadCounts() noexcept {
  auto* counts = new (std::nothrow) ThreadCounts();
  if (counts == nullptr) return nullptr;  // this thread's calls go uncounted
  counts->next = gThreadCounts.load(std::memory_order_relaxed);
  while (!gThreadCounts.compare_exchange_weak(counts->next, counts, std::memory_order_release,
                                              std::memory_order_relaxed)) {
  }
  return tCounts = counts;
}

inline void increment(std::atomic<uint64_t>& counter) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// For each call that makes an event: counts it, and says whether to record it.
inline bool countEvent() noexcept {
  ThreadCounts* counts = tCounts != nullptr ? tCounts : registerThreadCounts();
  const bool on = recording();
  if (counts != nullptr) {
    increment(counts->calls);
    if (on) increment(counts->recorded);
  }
  return on;
}

// Names that must be composed (a domain prefix, a wide string) are built in a per-thread
// buffer, so recording allocates nothing; the host recorder copies them straight away.
// Longer names are cut (the recorder keeps at most 4 KiB of a name anyway).
constexpr std::size_t kNameBytes = 1024;
thread_local char tName[kNameBytes];

class NameWriter {
 public:
  void put(std::string_view text) {
    std::size_t room = static_cast<std::size_t>(end_ - cursor_);
    std::size_t n = text.size() < room ? text.size() : room;
    std::memcpy(cursor_, text.data(), n);
    cursor_ += n;
  }
  // wchar_t is UTF-32 on Linux.
  void putWide(const wchar_t* text) {
    if (text == nullptr) return;
    for (; *text != 0 && cursor_ != end_; ++text) {
      auto c = static_cast<uint32_t>(*text);
      if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
      char bytes[4];
      std::size_t n = 0;
      if (c < 0x80) {
        bytes[n++] = static_cast<char>(c);
      } else if (c < 0x800) {
        bytes[n++] = static_cast<char>(0xC0 | (c >> 6));
        bytes[n++] = static_cast<char>(0x80 | (c & 0x3F));
      } else if (c < 0x10000) {
        bytes[n++] = static_cast<char>(0xE0 | (c >> 12));
        bytes[n++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        bytes[n++] = static_cast<char>(0x80 | (c & 0x3F));
      } else {
        bytes[n++] = static_cast<char>(0xF0 | (c >> 18));
        bytes[n++] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        bytes[n++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        bytes[n++] = static_cast<char>(0x80 | (c & 0x3F));
      }
      if (static_cast<std::size_t>(end_ - cursor_) < n) break;  // never half a character
      put(std::string_view(bytes, n));
    }
  }
  std::string_view view() const {
    return std::string_view(tName, static_cast<std::size_t>(cursor_ - tName));
  }

 private:
  char* cursor_ = tName;
  char* end_ = tName + kNameBytes;
};

std::string_view wideName(const wchar_t* text) {
  NameWriter writer;
  writer.putWide(text);
  return writer.view();
}

std::string wideToUtf8(const wchar_t* text) {
  return std::string(wideName(text));
}

bool hasMessage(const nvtxEventAttributes_t* attributes) {
  return attributes != nullptr &&
         attributes->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(attributes->message);
}

// Handles live as long as the process: NVTX callers keep them in globals.
class Registry {
 public:
  nvtxDomainHandle_t domain(std::string name) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& domain : domains_) {
      if (domain.name == name) return &domain;
    }
    domains_.push_back(nvtxDomainRegistration_st{std::move(name)});
    return &domains_.back();
  }
  nvtxStringHandle_t string(std::string text) {
    std::lock_guard<std::mutex> lock(mutex_);
    strings_.push_back(nvtxStringRegistration_st{std::move(text)});
    return &strings_.back();
  }

 private:
  std::mutex mutex_;
  std::deque<nvtxDomainRegistration_st> domains_;  // a deque never moves its elements
  std::deque<nvtxStringRegistration_st> strings_;
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed, by design
  return *instance;
}

// An event's name: "<domain>: <message>", or the message alone in the default domain. The
// view points into the caller's string, a registered string or the thread's name buffer.
std::string_view eventName(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  const bool prefixed = domain != nullptr && !domain->name.empty();
  NameWriter writer;
  if (prefixed) {
    writer.put(domain->name);
    writer.put(": ");
  }
  if (!hasMessage(attributes)) return writer.view();
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: {
      const char* text = attributes->message.ascii != nullptr ? attributes->message.ascii : "";
      if (!prefixed) return text;
      writer.put(text);
      break;
    }
    case NVTX_MESSAGE_TYPE_UNICODE:
      writer.putWide(attributes->message.unicode);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (attributes->message.registered == nullptr) break;
      if (!prefixed) return attributes->message.registered->text;
      writer.put(attributes->message.registered->text);
      break;
    default:
      break;
  }
  return writer.view();
}

// NVTX_PAYLOAD_TYPE_EXT: the payload is an array of nvtxPayloadData_t (reserved0 long)
// described by registered schemas (inject/nvtx_payload.h).
constexpr int32_t kPayloadTypeExtension = static_cast<int32_t>(0xDFBD0009);

// Whether an event carries an extended payload.
bool hasExtendedPayload(const nvtxEventAttributes_t* attributes) {
  return attributes != nullptr &&
         attributes->size >= offsetof(nvtxEventAttributes_t, payload) + sizeof(attributes->payload) &&
         attributes->payloadType == kPayloadTypeExtension;
}

// The event's arguments, from its extended payload.
std::size_t payloadArgs(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes,
                        detail::EventArg (&args)[detail::kMaxEventArgs]) {
  return decodeNvtxPayload(
      domain, reinterpret_cast<const void*>(static_cast<uintptr_t>(attributes->payload.ullValue)),
      attributes->reserved0, args, detail::kMaxEventArgs);
}

// The recording calls for an event that may carry a payload. The decoding, and its array of
// arguments, stay out of line: events without a payload (nearly all) never pay for them.
[[gnu::noinline]] void beginRangeWithPayload(nvtxDomainHandle_t domain,
                                             const nvtxEventAttributes_t* attributes) {
  detail::EventArg args[detail::kMaxEventArgs];
  internal::beginRangeWithArgs(eventName(domain, attributes), args,
                               payloadArgs(domain, attributes, args));
}

void beginRangeOf(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  if (hasExtendedPayload(attributes)) {
    beginRangeWithPayload(domain, attributes);
  } else {
    kinetrace::beginRange(std::string_view(eventName(domain, attributes)));
  }
}

[[gnu::noinline]] nvtxRangeId_t startRangeWithPayload(nvtxDomainHandle_t domain,
                                                      const nvtxEventAttributes_t* attributes) {
  detail::EventArg args[detail::kMaxEventArgs];
  return internal::startAsyncRangeWithArgs(eventName(domain, attributes), args,
                                           payloadArgs(domain, attributes, args));
}

nvtxRangeId_t startRangeOf(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  if (hasExtendedPayload(attributes)) return startRangeWithPayload(domain, attributes);
  return kinetrace::startAsyncRange(eventName(domain, attributes));
}

[[gnu::noinline]] void markWithPayload(nvtxDomainHandle_t domain,
                                       const nvtxEventAttributes_t* attributes) {
  detail::EventArg args[detail::kMaxEventArgs];
  internal::instantWithArgs(eventName(domain, attributes), args,
                            payloadArgs(domain, attributes, args));
}

void markOf(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  if (hasExtendedPayload(attributes)) {
    markWithPayload(domain, attributes);
  } else {
    kinetrace::instant(std::string_view(eventName(domain, attributes)));
  }
}

// ---- step marks ------------------------------------------------------------------------

struct StepMarks {
  std::vector<std::string> names;  // Config::stepMarks
  StepMarkListener listener = nullptr;
  const StepMarks* older = nullptr;  // the set installed before this one
};
// The set in force; nullptr: none.
std::atomic<const StepMarks*> gStepMarks{nullptr};
// Every set ever installed, newest first. Replaced sets are never freed (a thread may still
// be reading one); this chain keeps them all reachable.
std::atomic<const StepMarks*> gInstalledStepMarks{nullptr};

// `message` makes the range's message: only asked for when a listener is set.
template <typename Message>
inline void noteStepMark(Message message) noexcept {
  const StepMarks* marks = gStepMarks.load(std::memory_order_acquire);
  if (marks != nullptr && isStepMark(message(), marks->names)) marks->listener();
}

// The message alone, without a domain's prefix (step marks are named by their message).
std::string_view messageOf(const nvtxEventAttributes_t* attributes) {
  if (!hasMessage(attributes)) return {};
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return attributes->message.ascii != nullptr ? attributes->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return wideName(attributes->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return attributes->message.registered != nullptr
                 ? std::string_view(attributes->message.registered->text)
                 : std::string_view();
    default:
      return {};
  }
}

// ---- push / pop --------------------------------------------------------------------

int pushA(const char* message) {
  noteStepMark([message] { return std::string_view(message != nullptr ? message : ""); });
  if (countEvent()) kinetrace::beginRange(std::string_view(message != nullptr ? message : ""));
  return tNvtxDepth++;
}

int pushW(const wchar_t* message) {
  noteStepMark([message] { return wideName(message); });
  if (countEvent()) kinetrace::beginRange(std::string_view(wideName(message)));
  return tNvtxDepth++;
}

int pushEx(const nvtxEventAttributes_t* attributes) {
  noteStepMark([attributes] { return messageOf(attributes); });
  if (countEvent()) beginRangeOf(nullptr, attributes);
  return tNvtxDepth++;
}

int domainPushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  noteStepMark([attributes] { return messageOf(attributes); });
  if (countEvent()) beginRangeOf(domain, attributes);
  return tNvtxDepth++;
}

int pop() {
  kinetrace::endRange();
  if (tNvtxDepth == 0) return -1;  // NVTX: a negative level reports an unmatched pop
  return --tNvtxDepth;
}

int domainPop(nvtxDomainHandle_t) {
  return pop();
}

// ---- start / end ---------------------------------------------------------------------

nvtxRangeId_t startA(const char* message) {
  noteStepMark([message] { return std::string_view(message != nullptr ? message : ""); });
  if (!countEvent()) return 0;
  return kinetrace::startAsyncRange(message != nullptr ? message : "");
}

nvtxRangeId_t startW(const wchar_t* message) {
  noteStepMark([message] { return wideName(message); });
  return countEvent() ? kinetrace::startAsyncRange(wideName(message)) : 0;
}

nvtxRangeId_t startEx(const nvtxEventAttributes_t* attributes) {
  noteStepMark([attributes] { return messageOf(attributes); });
  return countEvent() ? startRangeOf(nullptr, attributes) : 0;
}

nvtxRangeId_t domainStartEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  noteStepMark([attributes] { return messageOf(attributes); });
  return countEvent() ? startRangeOf(domain, attributes) : 0;
}

void end(nvtxRangeId_t id) {
  kinetrace::endAsyncRange(id);
}
void domainEnd(nvtxDomainHandle_t, nvtxRangeId_t id) {
  kinetrace::endAsyncRange(id);
}

// ---- marks ---------------------------------------------------------------------------

void markA(const char* message) {
  if (countEvent()) kinetrace::instant(std::string_view(message != nullptr ? message : ""));
}

void markW(const wchar_t* message) {
  if (countEvent()) kinetrace::instant(std::string_view(wideName(message)));
}

void markEx(const nvtxEventAttributes_t* attributes) {
  if (countEvent()) markOf(nullptr, attributes);
}

void domainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  if (countEvent()) markOf(domain, attributes);
}

// ---- names and registrations -------------------------------------------------------

void nameOsThreadA(uint32_t threadId, const char* name) {
  if (name == nullptr) return;
  try {
    internal::nameOsThread(threadId, name);
  } catch (...) {
  }
}

void nameOsThreadW(uint32_t threadId, const wchar_t* name) {
  if (name == nullptr) return;
  try {
    internal::nameOsThread(threadId, wideToUtf8(name));
  } catch (...) {
  }
}

nvtxDomainHandle_t domainCreateA(const char* name) {
  try {
    return registry().domain(name != nullptr ? name : "");
  } catch (...) {
    return nullptr;  // the default domain: events are still recorded, without the prefix
  }
}

nvtxDomainHandle_t domainCreateW(const wchar_t* name) {
  try {
    return registry().domain(wideToUtf8(name));
  } catch (...) {
    return nullptr;
  }
}

void domainDestroy(nvtxDomainHandle_t) {}  // kept: names were copied, handles stay valid

nvtxStringHandle_t registerStringA(nvtxDomainHandle_t, const char* text) {
  try {
    return registry().string(text != nullptr ? text : "");
  } catch (...) {
    return nullptr;
  }
}

nvtxStringHandle_t registerStringW(nvtxDomainHandle_t, const wchar_t* text) {
  try {
    return registry().string(wideToUtf8(text));
  } catch (...) {
    return nullptr;
  }
}

// ---- the tables ----------------------------------------------------------------------

template <typename Function>
void install(NvtxFunctionTable table, unsigned int size, unsigned int slot, Function function) {
  // Entry 0 is never a function; a slot past the table's size is a newer NVTX's.
  if (table == nullptr || slot == 0 || slot >= size || table[slot] == nullptr) return;
  *table[slot] = reinterpret_cast<NvtxFunctionPointer>(function);
}

// ---- the payload extension's event calls ------------------------------------------
// Events made of a payload alone (nvtxRangePushPayload, ...), and ends that add one
// (nvtxRangePopPayload: how NCCL closes ncclCommInitRank* with the new communicator's id).

// Such an event has no message: it is named after its domain.
std::string_view payloadEventName(nvtxDomainHandle_t domain) {
  return domain != nullptr && !domain->name.empty() ? std::string_view(domain->name)
                                                    : std::string_view("NVTX payload");
}

std::size_t argsOf(nvtxDomainHandle_t domain, const nvtxPayloadData_t* payloads, std::size_t count,
                   detail::EventArg (&args)[detail::kMaxEventArgs]) {
  return decodeNvtxPayload(domain, payloads, count, args, detail::kMaxEventArgs);
}

int NVTX_API pushPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t* payloads,
                         std::size_t count) {
  if (countEvent()) {
    detail::EventArg args[detail::kMaxEventArgs];
    internal::beginRangeWithArgs(payloadEventName(domain), args,
                                 argsOf(domain, payloads, count, args));
  }
  return tNvtxDepth++;
}

int NVTX_API popPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t* payloads,
                        std::size_t count) {
  detail::EventArg args[detail::kMaxEventArgs];
  const std::size_t decoded = recording() ? argsOf(domain, payloads, count, args) : 0;
  internal::endRangeWithArgs(args, decoded);
  if (tNvtxDepth == 0) return -1;
  return --tNvtxDepth;
}

void NVTX_API markPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t* payloads,
                          std::size_t count) {
  if (!countEvent()) return;
  detail::EventArg args[detail::kMaxEventArgs];
  internal::instantWithArgs(payloadEventName(domain), args, argsOf(domain, payloads, count, args));
}

nvtxRangeId_t NVTX_API startPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t* payloads,
                                    std::size_t count) {
  if (!countEvent()) return 0;
  detail::EventArg args[detail::kMaxEventArgs];
  return internal::startAsyncRangeWithArgs(payloadEventName(domain), args,
                                           argsOf(domain, payloads, count, args));
}

void NVTX_API endPayload(nvtxDomainHandle_t domain, nvtxRangeId_t id,
                         const nvtxPayloadData_t* payloads, std::size_t count) {
  detail::EventArg args[detail::kMaxEventArgs];
  const std::size_t decoded = recording() ? argsOf(domain, payloads, count, args) : 0;
  internal::endAsyncRangeWithArgs(id, args, decoded);
}

}  // namespace

void installNvtxPayloadEventCalls(intptr_t* slots, std::size_t slotCount) noexcept {
  auto install = [&](std::size_t slot, auto function) {
    if (slot < slotCount) slots[slot] = reinterpret_cast<intptr_t>(function);
  };
  install(NVTX3EXT_CBID_nvtxMarkPayload, &markPayload);
  install(NVTX3EXT_CBID_nvtxRangePushPayload, &pushPayload);
  install(NVTX3EXT_CBID_nvtxRangePopPayload, &popPayload);
  install(NVTX3EXT_CBID_nvtxRangeStartPayload, &startPayload);
  install(NVTX3EXT_CBID_nvtxRangeEndPayload, &endPayload);
}

std::string_view registeredStringText(const void* handle) noexcept {
  if (handle == nullptr) return {};
  return static_cast<const nvtxStringRegistration_st*>(handle)->text;
}

int initializeNvtxInjection(NvtxGetExportTable getExportTable) noexcept {
  if (getExportTable == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  const auto* version =
      static_cast<const NvtxExportTableVersionInfo*>(getExportTable(NVTX_ETID_VERSIONINFO));
  if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }

  NvtxFunctionTable core = nullptr;
  unsigned int coreSize = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &coreSize) == 0 ||
      core == nullptr) {
    return 0;
  }
  install(core, coreSize, NVTX_CBID_CORE_MarkEx, &markEx);
  install(core, coreSize, NVTX_CBID_CORE_MarkA, &markA);
  install(core, coreSize, NVTX_CBID_CORE_MarkW, &markW);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartEx, &startEx);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartA, &startA);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartW, &startW);
  install(core, coreSize, NVTX_CBID_CORE_RangeEnd, &end);
  install(core, coreSize, NVTX_CBID_CORE_RangePushEx, &pushEx);
  install(core, coreSize, NVTX_CBID_CORE_RangePushA, &pushA);
  install(core, coreSize, NVTX_CBID_CORE_RangePushW, &pushW);
  install(core, coreSize, NVTX_CBID_CORE_RangePop, &pop);
  install(core, coreSize, NVTX_CBID_CORE_NameOsThreadA, &nameOsThreadA);
  install(core, coreSize, NVTX_CBID_CORE_NameOsThreadW, &nameOsThreadW);

  // CORE2 (domains) arrived with NVTX 2; an instance without it still gets the core calls.
  NvtxFunctionTable core2 = nullptr;
  unsigned int core2Size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2Size) != 0 &&
      core2 != nullptr) {
    install(core2, core2Size, NVTX_CBID_CORE2_DomainMarkEx, &domainMarkEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangeStartEx, &domainStartEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangeEnd, &domainEnd);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangePushEx, &domainPushEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangePop, &domainPop);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRegisterStringA, &registerStringA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRegisterStringW, &registerStringW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainCreateA, &domainCreateA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainCreateW, &domainCreateW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainDestroy, &domainDestroy);
  }
  gInstances.fetch_add(1, std::memory_order_relaxed);
  return 1;
}

void setStepMarks(const std::vector<std::string>& names, StepMarkListener listener) {
  if (listener == nullptr) {
    gStepMarks.store(nullptr, std::memory_order_release);
    return;
  }
  const StepMarks* marks =
      new StepMarks{names, listener, gInstalledStepMarks.load(std::memory_order_acquire)};
  gInstalledStepMarks.store(marks, std::memory_order_release);
  gStepMarks.store(marks, std::memory_order_release);
}

bool isStepMark(std::string_view message, const std::vector<std::string>& names) noexcept {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  for (const std::string& name : names) {
    if (name.empty() || message.size() < name.size()) continue;
    std::size_t i = 0;
    while (i < name.size() && lower(message[i]) == lower(name[i])) ++i;
    if (i < name.size()) continue;
    if (i == message.size() || !letter(message[i]) || !letter(name.back())) return true;
  }
  return false;
}

NvtxCounts nvtxCounts() noexcept {
  NvtxCounts counts;
  counts.instances = gInstances.load(std::memory_order_relaxed);
  for (const ThreadCounts* thread = gThreadCounts.load(std::memory_order_acquire);
       thread != nullptr; thread = thread->next) {
    counts.calls += thread->calls.load(std::memory_order_relaxed);
    counts.recorded += thread->recorded.load(std::memory_order_relaxed);
  }
  return counts;
}

}  // namespace kinetrace::inject
