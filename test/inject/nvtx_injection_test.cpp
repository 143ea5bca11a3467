// The NVTX injection protocol, driven the way an NVTX instance drives it: an export table
// whose GetModuleFunctionTable hands out tables of function-pointer slots, which
// InitializeInjectionNvtx2 fills; the application's NVTX calls then go through the slots.
// They are recorded through the public host API, into whatever Profiler of the process
// records (here one the test starts), with their names copied.

#define NVTX_NO_IMPL
#include "inject/nvtx_injection.h"

#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/trace_data.h"

extern "C" int InitializeInjectionNvtx2(const void* (*getExportTable)(uint32_t));

namespace kinetrace {
namespace {

// One NVTX instance's tables, laid out as nvtxImpl.h lays them out: slot 0 unused, one
// pointer per callback id, a null after the last.
struct FakeNvtxInstance {
  NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* coreTable[NVTX_CBID_CORE_SIZE + 1] = {};
  NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core2Table[NVTX_CBID_CORE2_SIZE + 1] = {};
  NvtxExportTableCallbacks callbacks{};
  NvtxExportTableVersionInfo versionInfo{};
  uint32_t toolVersion = 0;
  bool offerCore2 = true;

  FakeNvtxInstance() {
    for (int i = 1; i < NVTX_CBID_CORE_SIZE; ++i) coreTable[i] = &core[i];
    for (int i = 1; i < NVTX_CBID_CORE2_SIZE; ++i) core2Table[i] = &core2[i];
    callbacks.struct_size = sizeof callbacks;
    callbacks.GetModuleFunctionTable = &getModuleFunctionTable;
    versionInfo.struct_size = sizeof versionInfo;
    versionInfo.version = NVTX_VERSION;
    versionInfo.SetInjectionNvtxVersion = &setInjectionVersion;
  }

  template <typename Function>
  Function coreCall(int cbid) const {
    return reinterpret_cast<Function>(core[cbid]);
  }
  template <typename Function>
  Function core2Call(int cbid) const {
    return reinterpret_cast<Function>(core2[cbid]);
  }

  static inline FakeNvtxInstance* current = nullptr;

  static int getModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* table,
                                    unsigned int* size) {
    if (module == NVTX_CB_MODULE_CORE) {
      *table = current->coreTable;
      *size = NVTX_CBID_CORE_SIZE;
      return 1;
    }
    if (module == NVTX_CB_MODULE_CORE2 && current->offerCore2) {
      *table = current->core2Table;
      *size = NVTX_CBID_CORE2_SIZE;
      return 1;
    }
    return 0;
  }
  static void setInjectionVersion(uint32_t version) { current->toolVersion = version; }
  static const void* getExportTable(uint32_t id) {
    if (id == NVTX_ETID_CALLBACKS) return &current->callbacks;
    if (id == NVTX_ETID_VERSIONINFO) return &current->versionInfo;
    return nullptr;
  }
};

class NvtxInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeNvtxInstance::current = &nvtx_;
    ASSERT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::getExportTable), 1);
  }
  static Config hostOnly() {
    Config config;
    config.activities = ActivitySet::parse("host");
    return config;
  }
  static const detail::RangeRecord* range(const detail::TraceData& trace, const std::string& name) {
    for (const auto& r : trace.records.ranges) {
      if (trace.tables.strings.get(r.name) == name) return &r;
    }
    return nullptr;
  }
  static std::string nameOf(const detail::TraceData& trace, detail::StringId id) {
    return std::string(trace.tables.strings.get(id));
  }
  static int64_t tidOf(const detail::TraceData& trace, uint32_t thread) {
    return trace.tables.threads[thread].tid;
  }

  FakeNvtxInstance nvtx_;
  using PushA = int (*)(const char*);
  using PushW = int (*)(const wchar_t*);
  using PushEx = int (*)(const nvtxEventAttributes_t*);
  using Pop = int (*)();
  using StartA = nvtxRangeId_t (*)(const char*);
  using StartEx = nvtxRangeId_t (*)(const nvtxEventAttributes_t*);
  using End = void (*)(nvtxRangeId_t);
  using MarkA = void (*)(const char*);
  using DomainCreateA = nvtxDomainHandle_t (*)(const char*);
  using DomainPushEx = int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  using DomainPop = int (*)(nvtxDomainHandle_t);
  using DomainStartEx = nvtxRangeId_t (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  using DomainEnd = void (*)(nvtxDomainHandle_t, nvtxRangeId_t);
  using DomainMarkEx = void (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  using RegisterStringA = nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*);
  using NameOsThreadA = void (*)(uint32_t, const char*);
  using NameOsThreadW = void (*)(uint32_t, const wchar_t*);
};

int64_t osThreadId() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

nvtxEventAttributes_t asciiEvent(const char* message) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message;
  return attributes;
}

TEST_F(NvtxInjectionTest, FillsTheCoreAndCore2SlotsAndReportsItsVersion) {
  EXPECT_EQ(nvtx_.toolVersion, static_cast<uint32_t>(NVTX_VERSION));
  for (int cbid : {NVTX_CBID_CORE_MarkA, NVTX_CBID_CORE_RangeStartA, NVTX_CBID_CORE_RangeEnd,
                   NVTX_CBID_CORE_RangePushA, NVTX_CBID_CORE_RangePushW, NVTX_CBID_CORE_RangePushEx,
                   NVTX_CBID_CORE_RangePop, NVTX_CBID_CORE_NameOsThreadA}) {
    EXPECT_NE(nvtx_.core[cbid], nullptr) << "core slot " << cbid;
  }
  for (int cbid : {NVTX_CBID_CORE2_DomainCreateA, NVTX_CBID_CORE2_DomainRangePushEx,
                   NVTX_CBID_CORE2_DomainRangePop, NVTX_CBID_CORE2_DomainRangeStartEx,
                   NVTX_CBID_CORE2_DomainRangeEnd, NVTX_CBID_CORE2_DomainRegisterStringA,
                   NVTX_CBID_CORE2_DomainMarkEx}) {
    EXPECT_NE(nvtx_.core2[cbid], nullptr) << "core2 slot " << cbid;
  }
  EXPECT_EQ(nvtx_.core2[NVTX_CBID_CORE2_DomainResourceCreate], nullptr) << "left to NVTX's no-op";
}

TEST_F(NvtxInjectionTest, AnUnusableExportTableIsRefused) {
  EXPECT_EQ(InitializeInjectionNvtx2(nullptr), 0);
  EXPECT_EQ(InitializeInjectionNvtx2([](uint32_t) -> const void* { return nullptr; }), 0);
}

TEST_F(NvtxInjectionTest, AnInstanceWithoutCore2StillGetsTheCoreCalls) {
  FakeNvtxInstance old;
  old.offerCore2 = false;
  FakeNvtxInstance::current = &old;
  EXPECT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::getExportTable), 1);
  EXPECT_NE(old.core[NVTX_CBID_CORE_RangePushA], nullptr);
  FakeNvtxInstance::current = &nvtx_;
}

TEST_F(NvtxInjectionTest, CountsInstancesAndEventCallsInAndOutsideTheRecording) {
  auto pushA = nvtx_.coreCall<PushA>(NVTX_CBID_CORE_RangePushA);
  auto pop = nvtx_.coreCall<Pop>(NVTX_CBID_CORE_RangePop);
  auto startA = nvtx_.coreCall<StartA>(NVTX_CBID_CORE_RangeStartA);
  auto end = nvtx_.coreCall<End>(NVTX_CBID_CORE_RangeEnd);
  auto markA = nvtx_.coreCall<MarkA>(NVTX_CBID_CORE_MarkA);
  auto domainCreate = nvtx_.core2Call<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA);
  auto domainMark = nvtx_.core2Call<DomainMarkEx>(NVTX_CBID_CORE2_DomainMarkEx);

  const inject::NvtxCounts before = inject::nvtxCounts();
  FakeNvtxInstance another;
  FakeNvtxInstance::current = &another;
  ASSERT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::getExportTable), 1);
  FakeNvtxInstance::current = &nvtx_;
  EXPECT_EQ(inject::nvtxCounts().instances, before.instances + 1);

  pushA("before the recording");  // counted, not recorded
  pop();
  Profiler profiler(hostOnly());
  profiler.start();
  pushA("step");
  pop();
  end(startA("load"));
  markA("checkpoint");
  nvtxEventAttributes_t attributes = asciiEvent("allreduce");
  domainMark(domainCreate("NCCL"), &attributes);
  Trace trace = profiler.stop();
  markA("after the recording");
  std::thread([&] { markA("from a thread that has ended"); }).join();

  const inject::NvtxCounts after = inject::nvtxCounts();
  EXPECT_EQ(after.calls - before.calls, 7u) << "pushes, starts and marks, on every thread; "
                                               "pops, ends and registrations make no event";
  EXPECT_EQ(after.recorded - before.recorded, 4u);
  EXPECT_EQ(after.instances, before.instances + 1) << "only the second instance counts as one";
  const detail::TraceData& data = detail::dataOf(trace);
  EXPECT_EQ(data.records.ranges.size(), 2u) << "step and load";
  EXPECT_EQ(data.records.instants.size(), 2u) << "checkpoint and NCCL: allreduce";
}

TEST_F(NvtxInjectionTest, PushPopBecomeNestedRangesWithCopiedNames) {
  auto pushA = nvtx_.coreCall<PushA>(NVTX_CBID_CORE_RangePushA);
  auto pushEx = nvtx_.coreCall<PushEx>(NVTX_CBID_CORE_RangePushEx);
  auto pushW = nvtx_.coreCall<PushW>(NVTX_CBID_CORE_RangePushW);
  auto pop = nvtx_.coreCall<Pop>(NVTX_CBID_CORE_RangePop);

  Profiler profiler(hostOnly());
  profiler.start();
  char scratch[32];
  std::strcpy(scratch, "aten::linear, seq = 1");
  EXPECT_EQ(pushA(scratch), 0);
  std::strcpy(scratch, "overwritten");  // NVTX names are not literals: they must be copied
  nvtxEventAttributes_t inner = asciiEvent("inner");
  EXPECT_EQ(pushEx(&inner), 1);
  EXPECT_EQ(pushW(L"wide \u00fc"), 2);
  EXPECT_EQ(pop(), 2);
  EXPECT_EQ(pop(), 1);
  EXPECT_EQ(pop(), 0);
  EXPECT_LT(pop(), 0) << "an unmatched pop reports a negative level";
  Trace trace = profiler.stop();

  const detail::TraceData& data = detail::dataOf(trace);
  const auto* outer = range(data, "aten::linear, seq = 1");
  const auto* in = range(data, "inner");
  const auto* wide = range(data, "wide \xc3\xbc");
  ASSERT_TRUE(outer && in && wide) << data.records.ranges.size() << " ranges";
  EXPECT_EQ(range(data, "overwritten"), nullptr);
  EXPECT_EQ(in->parentId, outer->externalId);
  EXPECT_EQ(wide->parentId, in->externalId);
  EXPECT_FALSE(outer->async);
  EXPECT_EQ(tidOf(data, outer->thread), osThreadId()) << "on the calling thread";
}

// One recorder per process: NVTX ranges and the program's own kinetrace::Ranges share the
// thread's range stack, whichever opened first.
TEST_F(NvtxInjectionTest, PushPopNestWithTheProgramsOwnRanges) {
  auto pushA = nvtx_.coreCall<PushA>(NVTX_CBID_CORE_RangePushA);
  auto pop = nvtx_.coreCall<Pop>(NVTX_CBID_CORE_RangePop);

  Profiler profiler(hostOnly());
  profiler.start();
  {
    Range own("program's own");
    pushA("nvtx inside");
    { Range innermost("own again"); }
    pop();
  }
  Trace trace = profiler.stop();

  const detail::TraceData& data = detail::dataOf(trace);
  const auto* own = range(data, "program's own");
  const auto* nvtx = range(data, "nvtx inside");
  const auto* innermost = range(data, "own again");
  ASSERT_TRUE(own && nvtx && innermost) << data.records.ranges.size() << " ranges";
  EXPECT_EQ(nvtx->parentId, own->externalId);
  EXPECT_EQ(innermost->parentId, nvtx->externalId);
  EXPECT_LE(own->startNs, nvtx->startNs);
  EXPECT_LE(nvtx->endNs, own->endNs);
}

TEST_F(NvtxInjectionTest, StartEndBecomeAsyncRangesThatMayEndOnAnotherThread) {
  auto startA = nvtx_.coreCall<StartA>(NVTX_CBID_CORE_RangeStartA);
  auto startEx = nvtx_.coreCall<StartEx>(NVTX_CBID_CORE_RangeStartEx);
  auto end = nvtx_.coreCall<End>(NVTX_CBID_CORE_RangeEnd);

  Profiler profiler(hostOnly());
  profiler.start();
  nvtxRangeId_t load = startA("load batch");
  nvtxEventAttributes_t attributes = asciiEvent("prefetch");
  nvtxRangeId_t prefetch = startEx(&attributes);
  EXPECT_NE(load, 0u);
  EXPECT_NE(load, prefetch);
  end(load);  // ends before prefetch: not nested
  std::thread other([&] { end(prefetch); });
  other.join();
  Trace trace = profiler.stop();
  const detail::TraceData& data = detail::dataOf(trace);
  const auto* l = range(data, "load batch");
  const auto* p = range(data, "prefetch");
  ASSERT_TRUE(l && p);
  EXPECT_TRUE(l->async);
  EXPECT_TRUE(p->async);
  EXPECT_FALSE(l->unfinished);
  EXPECT_FALSE(p->unfinished);
  EXPECT_NE(l->lane, p->lane) << "overlapping: separate lanes";
}

TEST_F(NvtxInjectionTest, DomainsPrefixTheirEventsAndRegisteredStringsResolve) {
  auto create = nvtx_.core2Call<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA);
  auto push = nvtx_.core2Call<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  auto pop = nvtx_.core2Call<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);
  auto start = nvtx_.core2Call<DomainStartEx>(NVTX_CBID_CORE2_DomainRangeStartEx);
  auto end = nvtx_.core2Call<DomainEnd>(NVTX_CBID_CORE2_DomainRangeEnd);
  auto mark = nvtx_.core2Call<DomainMarkEx>(NVTX_CBID_CORE2_DomainMarkEx);
  auto registerString = nvtx_.core2Call<RegisterStringA>(NVTX_CBID_CORE2_DomainRegisterStringA);

  nvtxDomainHandle_t nccl = create("NCCL");
  EXPECT_EQ(create("NCCL"), nccl) << "one handle per domain name";
  nvtxStringHandle_t allReduce = registerString(nccl, "ncclAllReduce");

  Profiler profiler(hostOnly());
  profiler.start();
  nvtxEventAttributes_t registered{};
  registered.version = NVTX_VERSION;
  registered.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  registered.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  registered.message.registered = allReduce;
  EXPECT_EQ(push(nccl, &registered), 0);
  EXPECT_EQ(pop(nccl), 0);
  nvtxEventAttributes_t plain = asciiEvent("in the default domain");
  push(nullptr, &plain);
  pop(nullptr);
  nvtxEventAttributes_t send = asciiEvent("send");
  end(nccl, start(nccl, &send));
  nvtxEventAttributes_t checkpoint = asciiEvent("checkpoint");
  mark(nccl, &checkpoint);
  Trace trace = profiler.stop();

  const detail::TraceData& data = detail::dataOf(trace);
  EXPECT_NE(range(data, "NCCL: ncclAllReduce"), nullptr);
  EXPECT_NE(range(data, "in the default domain"), nullptr);
  EXPECT_NE(range(data, "NCCL: send"), nullptr);
  ASSERT_EQ(data.records.instants.size(), 1u);
  EXPECT_EQ(nameOf(data, data.records.instants[0].name), "NCCL: checkpoint");
}

TEST_F(NvtxInjectionTest, MarksAndThreadNames) {
  auto mark = nvtx_.coreCall<MarkA>(NVTX_CBID_CORE_MarkA);
  auto nameThread = nvtx_.coreCall<NameOsThreadA>(NVTX_CBID_CORE_NameOsThreadA);
  Profiler profiler(hostOnly());
  profiler.start();
  mark("epoch 1 done");
  nameThread(static_cast<uint32_t>(osThreadId()), "trainer");
  Trace trace = profiler.stop();
  const detail::TraceData& data = detail::dataOf(trace);
  ASSERT_EQ(data.records.instants.size(), 1u);
  EXPECT_EQ(nameOf(data, data.records.instants[0].name), "epoch 1 done");
  EXPECT_EQ(nameOf(data, data.tables.threads[data.records.instants[0].thread].name), "trainer");
}

// nvtxNameOsThread names any thread by its OS id, from any thread, before or while it
// records; a wide name arrives as UTF-8.
TEST_F(NvtxInjectionTest, AnotherThreadIsNamedByItsOsThreadId) {
  auto mark = nvtx_.coreCall<MarkA>(NVTX_CBID_CORE_MarkA);
  auto nameThreadA = nvtx_.coreCall<NameOsThreadA>(NVTX_CBID_CORE_NameOsThreadA);
  auto nameThreadW = nvtx_.coreCall<NameOsThreadW>(NVTX_CBID_CORE_NameOsThreadW);

  std::mutex mutex;
  std::condition_variable changed;
  int64_t loaderTid = 0, writerTid = 0;
  bool recording = false;
  auto worker = [&](int64_t* tid, const char* markName) {
    std::unique_lock<std::mutex> lock(mutex);
    *tid = osThreadId();
    changed.notify_all();
    changed.wait(lock, [&] { return recording; });
    mark(markName);
  };
  std::thread loader(worker, &loaderTid, "loaded");
  std::thread writer(worker, &writerTid, "written");
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return loaderTid != 0 && writerTid != 0; });
  }
  nameThreadA(static_cast<uint32_t>(loaderTid), "loader");  // before the recording

  Profiler profiler(hostOnly());
  profiler.start();
  nameThreadW(static_cast<uint32_t>(writerTid), L"\u00e9crivain");  // while it records
  {
    std::lock_guard<std::mutex> lock(mutex);
    recording = true;
  }
  changed.notify_all();
  loader.join();
  writer.join();
  Trace trace = profiler.stop();

  const detail::TraceData& data = detail::dataOf(trace);
  std::map<std::string, std::pair<int64_t, std::string>> byMark;  // mark -> tid, thread name
  for (const auto& instant : data.records.instants) {
    const detail::ThreadInfo& thread = data.tables.threads[instant.thread];
    byMark[nameOf(data, instant.name)] = {thread.tid, nameOf(data, thread.name)};
  }
  EXPECT_EQ(byMark["loaded"], std::make_pair(loaderTid, std::string("loader")));
  EXPECT_EQ(byMark["written"], std::make_pair(writerTid, std::string(u8"\u00e9crivain")));
}

TEST_F(NvtxInjectionTest, OutsideARecordingCallsAreCheapNoOpsThatStillTrackLevels) {
  auto pushA = nvtx_.coreCall<PushA>(NVTX_CBID_CORE_RangePushA);
  auto pop = nvtx_.coreCall<Pop>(NVTX_CBID_CORE_RangePop);
  auto startA = nvtx_.coreCall<StartA>(NVTX_CBID_CORE_RangeStartA);
  EXPECT_EQ(pushA("a"), 0);
  EXPECT_EQ(pushA("b"), 1);
  EXPECT_EQ(pop(), 1);
  EXPECT_EQ(pop(), 0);
  EXPECT_EQ(startA("x"), 0u);
}

// Step marks: the ranges named as steps reach the listener before they are recorded (so a
// recording the listener starts holds its step's range); other ranges never do.
std::atomic<int> gStepMarksHeard{0};
std::atomic<bool> gStartOnStepMark{false};
Profiler* gStepProfiler = nullptr;
void heardStepMark() noexcept {
  gStepMarksHeard.fetch_add(1);
  if (gStartOnStepMark.exchange(false)) gStepProfiler->start();
}

TEST_F(NvtxInjectionTest, RangesNamedAsStepsReachTheListenerBeforeTheyAreRecorded) {
  auto pushA = nvtx_.coreCall<PushA>(NVTX_CBID_CORE_RangePushA);
  auto pushW = nvtx_.coreCall<PushW>(NVTX_CBID_CORE_RangePushW);
  auto pop = nvtx_.coreCall<Pop>(NVTX_CBID_CORE_RangePop);
  auto startEx = nvtx_.coreCall<StartEx>(NVTX_CBID_CORE_RangeStartEx);
  auto end = nvtx_.coreCall<End>(NVTX_CBID_CORE_RangeEnd);
  auto create = nvtx_.core2Call<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA);
  auto domainPush = nvtx_.core2Call<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  auto domainPop = nvtx_.core2Call<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);

  Profiler profiler(hostOnly());
  gStepProfiler = &profiler;
  gStepMarksHeard = 0;
  inject::setStepMarks({"ProfilerStep#", "step"}, &heardStepMark);
  pushA("forward");  // not a step
  pop();
  gStartOnStepMark = true;
  pushA("step 0");  // starts the recording, and is recorded itself
  pop();
  pushW(L"Step_1");
  pop();
  nvtxEventAttributes_t profilerStep = asciiEvent("ProfilerStep#2");
  end(startEx(&profilerStep));
  nvtxEventAttributes_t inDomain = asciiEvent("step 3");
  domainPush(create("trainer"), &inDomain);
  domainPop(nullptr);
  pushA("stepper");  // "step" followed by a letter: another word
  pop();
  inject::setStepMarks({}, nullptr);
  pushA("step 4");  // no listener: not heard
  pop();
  Trace trace = profiler.stop();

  EXPECT_EQ(gStepMarksHeard.load(), 4);
  const detail::TraceData& data = detail::dataOf(trace);
  EXPECT_NE(range(data, "step 0"), nullptr) << "the mark that starts a recording is in it";
  EXPECT_EQ(range(data, "forward"), nullptr);
}

TEST(StepMarkTest, NamesMatchWithoutCaseAndEndBeforeALetter) {
  const std::vector<std::string> names = {"ProfilerStep#", "step"};
  EXPECT_TRUE(inject::isStepMark("ProfilerStep#12", names));
  EXPECT_TRUE(inject::isStepMark("profilerstep#0", names));
  EXPECT_TRUE(inject::isStepMark("step", names));
  EXPECT_TRUE(inject::isStepMark("Step 7", names));
  EXPECT_TRUE(inject::isStepMark("step_7", names));
  EXPECT_TRUE(inject::isStepMark("STEP12", names));
  EXPECT_FALSE(inject::isStepMark("steps", names));
  EXPECT_FALSE(inject::isStepMark("stepper", names));
  EXPECT_FALSE(inject::isStepMark("train step", names));
  EXPECT_FALSE(inject::isStepMark("ste", names));
  EXPECT_FALSE(inject::isStepMark("", names));
  EXPECT_TRUE(inject::isStepMark("iter 3", {"iter", "batch"}));
  EXPECT_FALSE(inject::isStepMark("anything", {}));
}

}  // namespace
}  // namespace kinetrace
