// NVTX's payload extension, driven the way an NVTX instance drives it: a module of function
// slots handed to InitializeInjectionNvtxExtension, schemas and enums registered through
// those slots with NVTX's own structs, and events whose extended payload points at a C
// struct -- as NCCL describes its calls. The decoded fields become the event's arguments.

#define NVTX_NO_IMPL
#include "inject/nvtx_payload.h"

#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inject/nvtx_injection.h"
#include "kinetrace/profiler.h"
#include "model/trace_data.h"

extern "C" int InitializeInjectionNvtx2(const void* (*getExportTable)(uint32_t));
extern "C" int InitializeInjectionNvtxExtension(void* moduleInfo);

namespace kinetrace {
namespace {

using detail::ArgType;
using detail::StoredArg;
using detail::TraceData;

constexpr int32_t kPayloadTypeExtension = static_cast<int32_t>(0xDFBD0009);
constexpr uint64_t kStatic = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START;

// The slots of one NVTX instance's core modules, as nvtxImpl.h lays them out.
struct FakeNvtxCore {
  NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* coreTable[NVTX_CBID_CORE_SIZE + 1] = {};
  NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core2Table[NVTX_CBID_CORE2_SIZE + 1] = {};
  NvtxExportTableCallbacks callbacks{};

  FakeNvtxCore() {
    for (int i = 1; i < NVTX_CBID_CORE_SIZE; ++i) coreTable[i] = &core[i];
    for (int i = 1; i < NVTX_CBID_CORE2_SIZE; ++i) core2Table[i] = &core2[i];
    callbacks.struct_size = sizeof callbacks;
    callbacks.GetModuleFunctionTable = &getModuleFunctionTable;
  }
  static inline FakeNvtxCore* current = nullptr;
  static int getModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* table,
                                    unsigned int* size) {
    if (module == NVTX_CB_MODULE_CORE) {
      *table = current->coreTable;
      *size = NVTX_CBID_CORE_SIZE;
      return 1;
    }
    if (module == NVTX_CB_MODULE_CORE2) {
      *table = current->core2Table;
      *size = NVTX_CBID_CORE2_SIZE;
      return 1;
    }
    return 0;
  }
  static const void* getExportTable(uint32_t id) {
    return id == NVTX_ETID_CALLBACKS ? &current->callbacks : nullptr;
  }
};

// The payload module of one NVTX instance: its slots, as nvtxExtImplPayload_v1.h hands them.
struct FakePayloadModule {
  intptr_t slots[63] = {};
  nvtxExtModuleSegment_t segment{0, 63, slots};
  nvtxExtModuleInfo_t info{NVTX_VERSION,
                           sizeof(nvtxExtModuleInfo_t),
                           NVTX_EXT_PAYLOAD_MODULEID,
                           NVTX_EXT_PAYLOAD_COMPATID,
                           1,
                           &segment,
                           nullptr,
                           nullptr};

  template <typename Function>
  Function slot(int cbid) const {
    return reinterpret_cast<Function>(slots[cbid]);
  }
};

using SchemaRegister = uint64_t (*)(nvtxDomainHandle_t, const nvtxPayloadSchemaAttr_t*);
using EnumRegister = uint64_t (*)(nvtxDomainHandle_t, const nvtxPayloadEnumAttr_t*);
using IsEnabled = uint8_t (*)(nvtxDomainHandle_t);
using DomainCreateA = nvtxDomainHandle_t (*)(const char*);
using RegisterStringA = nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*);
using DomainPushEx = int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
using DomainPop = int (*)(nvtxDomainHandle_t);
using DomainMarkEx = void (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
using DomainStartEx = nvtxRangeId_t (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
using DomainEnd = void (*)(nvtxDomainHandle_t, nvtxRangeId_t);
using PayloadEvent = int (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t);
using MarkPayload = void (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t);
using StartPayload = nvtxRangeId_t (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t);
using EndPayload = void (*)(nvtxDomainHandle_t, nvtxRangeId_t, const nvtxPayloadData_t*, size_t);

// NCCL's ncclAllReduce payload (nvtx_payload_schemas.h in NCCL 2.24 and later).
struct AllReduceParams {
  uint64_t comm;
  size_t bytes;
  int op;  // ncclRedOp_t
};

class NvtxPayloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeNvtxCore::current = &core_;
    ASSERT_EQ(InitializeInjectionNvtx2(&FakeNvtxCore::getExportTable), 1);
    ASSERT_EQ(InitializeInjectionNvtxExtension(&module_.info), 1);
    registerSchema_ = module_.slot<SchemaRegister>(NVTX3EXT_CBID_nvtxPayloadSchemaRegister);
    registerEnum_ = module_.slot<EnumRegister>(NVTX3EXT_CBID_nvtxPayloadEnumRegister);
    ASSERT_NE(registerSchema_, nullptr);
    ASSERT_NE(registerEnum_, nullptr);
    // Each test gets domains of its own: registrations are process-wide, keyed by domain.
    nccl_ = core2<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA)(domainName().c_str());
  }

  template <typename Function>
  Function core2(int cbid) const {
    return reinterpret_cast<Function>(core_.core2[cbid]);
  }
  static std::string domainName() {
    return std::string("NCCL") + (::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  // Registers NCCL's reduction enum and its ncclAllReduce schema in `domain`, as NCCL does.
  void registerAllReduce(nvtxDomainHandle_t domain) {
    static const nvtxPayloadEnum_t reductions[] = {
        {"Sum", 0, 0}, {"Product", 1, 0}, {"Max", 2, 0}, {"Min", 3, 0}, {"Avg", 4, 0}};
    nvtxPayloadEnumAttr_t enumAttr{};
    enumAttr.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES |
                         NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                         NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
    enumAttr.entries = reductions;
    enumAttr.numEntries = 5;
    enumAttr.sizeOfEnum = sizeof(int);
    enumAttr.schemaId = kStatic + 14;
    EXPECT_EQ(registerEnum_(domain, &enumAttr), kStatic + 14);

    static const nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0,
         offsetof(AllReduceParams, comm), nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0,
         offsetof(AllReduceParams, bytes), nullptr, nullptr},
        {0, kStatic + 14, "Reduction operation", nullptr, 0, offsetof(AllReduceParams, op), nullptr,
         nullptr}};
    nvtxPayloadSchemaAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    attr.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    attr.entries = entries;
    attr.numEntries = 3;
    attr.payloadStaticSize = sizeof(AllReduceParams);
    attr.schemaId = kStatic + 5;
    EXPECT_EQ(registerSchema_(domain, &attr), kStatic + 5);
  }

  // Registers the schema of a C struct whose entries give their offsets, under static `id`.
  uint64_t registerStruct(nvtxDomainHandle_t domain, const nvtxPayloadSchemaEntry_t* entries,
                          std::size_t count, uint64_t id) {
    nvtxPayloadSchemaAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    attr.entries = entries;
    attr.numEntries = count;
    attr.schemaId = id;
    return registerSchema_(domain, &attr);
  }

  // An event as NCCL's nvtx3 wrapper builds it: a registered message and one payload.
  static nvtxEventAttributes_t withPayload(nvtxStringHandle_t message,
                                           const nvtxPayloadData_t* payload, uint32_t count = 1) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attributes.message.registered = message;
    attributes.payloadType = kPayloadTypeExtension;
    attributes.reserved0 = count;
    attributes.payload.ullValue = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(payload));
    return attributes;
  }

  static Config hostOnly() {
    Config config;
    config.activities = ActivitySet::parse("host");
    return config;
  }

  // The arguments a trace kept for an event, by key, as text.
  static std::map<std::string, std::string> argsOf(const TraceData& trace, uint32_t index) {
    std::map<std::string, std::string> out;
    if (index == 0 || index > trace.tables.eventArgs.size()) return out;
    for (const StoredArg& arg : trace.tables.eventArgs[index - 1].values) {
      std::string value;
      switch (arg.type) {
        case ArgType::Unsigned:
          value = std::to_string(arg.number) + "u";
          break;
        case ArgType::Signed:
          value = std::to_string(static_cast<int64_t>(arg.number)) + "i";
          break;
        case ArgType::Double:
          value = std::to_string(detail::EventArg{{}, ArgType::Double, arg.number, {}}.asDouble());
          break;
        case ArgType::Text:
          value = std::string(trace.tables.strings.get(arg.text));
          break;
      }
      out[std::string(trace.tables.strings.get(arg.key))] = value;
    }
    return out;
  }
  static const detail::RangeRecord* range(const TraceData& trace, const std::string& name) {
    for (const auto& r : trace.records.ranges) {
      if (trace.tables.strings.get(r.name) == name) return &r;
    }
    return nullptr;
  }
  static uint32_t argsOfRange(const TraceData& trace, const detail::RangeRecord& r) {
    const auto found = trace.tables.argsOfRange.find(r.externalId);
    return found == trace.tables.argsOfRange.end() ? 0 : found->second;
  }

  FakeNvtxCore core_;
  FakePayloadModule module_;
  SchemaRegister registerSchema_ = nullptr;
  EnumRegister registerEnum_ = nullptr;
  nvtxDomainHandle_t nccl_ = nullptr;
};

TEST_F(NvtxPayloadTest, FillsThePayloadModulesSlotsAndLeavesOtherModulesAlone) {
  EXPECT_NE(module_.slots[NVTX3EXT_CBID_nvtxDomainIsEnabled], 0);
  EXPECT_EQ(module_.slot<IsEnabled>(NVTX3EXT_CBID_nvtxDomainIsEnabled)(nccl_), 1);
  for (int cbid : {NVTX3EXT_CBID_nvtxMarkPayload, NVTX3EXT_CBID_nvtxRangePushPayload,
                   NVTX3EXT_CBID_nvtxRangePopPayload, NVTX3EXT_CBID_nvtxRangeStartPayload,
                   NVTX3EXT_CBID_nvtxRangeEndPayload}) {
    EXPECT_NE(module_.slots[cbid], 0) << "payload slot " << cbid;
  }
  EXPECT_EQ(module_.slots[NVTX3EXT_CBID_nvtxTimestampGet], 0) << "left to NVTX's no-op";

  FakePayloadModule counters;
  counters.info.moduleId = 3;
  EXPECT_EQ(InitializeInjectionNvtxExtension(&counters.info), 1);
  for (intptr_t slot : counters.slots) EXPECT_EQ(slot, 0);

  // A module of an older NVTX (compatibility 0x0103) has two slots: only those are written.
  FakePayloadModule older;
  older.segment.slotCount = 2;
  older.info.compatId = 0x0103;
  EXPECT_EQ(InitializeInjectionNvtxExtension(&older.info), 1);
  EXPECT_NE(older.slots[0], 0);
  EXPECT_NE(older.slots[1], 0);
  EXPECT_EQ(older.slots[2], 0);
  EXPECT_EQ(InitializeInjectionNvtxExtension(nullptr), 0);
}

TEST_F(NvtxPayloadTest, AnNcclCallsRangeCarriesItsCommunicatorSizeAndReduction) {
  registerAllReduce(nccl_);
  auto registerString = core2<RegisterStringA>(NVTX_CBID_CORE2_DomainRegisterStringA);
  auto push = core2<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  auto pop = core2<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);
  const nvtxStringHandle_t allReduce = registerString(nccl_, "ncclAllReduce");

  Profiler profiler(hostOnly());
  profiler.start();
  AllReduceParams params{0xb07a5c1e00000001ull, 4u << 20, 2};
  const nvtxPayloadData_t payload{kStatic + 5, sizeof params, &params};
  const nvtxEventAttributes_t event = withPayload(allReduce, &payload);
  push(nccl_, &event);
  params.bytes = 1;  // NVTX payloads live for the call only: they must be decoded at once
  pop(nccl_);
  Trace trace = profiler.stop();

  const TraceData& data = detail::dataOf(trace);
  const auto* call = range(data, domainName() + ": ncclAllReduce");
  ASSERT_NE(call, nullptr);
  const auto args = argsOf(data, argsOfRange(data, *call));
  EXPECT_EQ(args.size(), 3u);
  EXPECT_EQ(args.at("NCCL communicator ID"), std::to_string(0xb07a5c1e00000001ull) + "u");
  EXPECT_EQ(args.at("Message size [bytes]"), std::to_string(4u << 20) + "u");
  EXPECT_EQ(args.at("Reduction operation"), "Max") << "enum values by their name";
}

TEST_F(NvtxPayloadTest, EntriesWithoutOffsetsFollowCsLayoutAndStringsOfEachKindDecode) {
  struct Mixed {
    char flag;                  // offset 0
    int count;                  // 4
    double ratio;               // 8
    char label[8];              // 16, embedded
    const char* pointed;        // 24
    nvtxStringHandle_t handle;  // 32
    int16_t small;              // 40
  };
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_CHAR, "flag", nullptr, 0, 0, nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "count", nullptr, 0, 0, nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE, "ratio", nullptr, 0, 0, nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_CSTRING, "label", nullptr, 8, 0, nullptr, nullptr},
      {NVTX_PAYLOAD_ENTRY_FLAG_POINTER, NVTX_PAYLOAD_ENTRY_TYPE_CSTRING, "pointed", nullptr, 0, 0,
       nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE, "handle", nullptr, 0, 0, nullptr,
       nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT16, nullptr, nullptr, 0, 0, nullptr, nullptr}};
  nvtxPayloadSchemaAttr_t attr{};
  attr.fieldMask =
      NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES;
  attr.entries = entries;
  attr.numEntries = 7;
  const uint64_t id = registerSchema_(nccl_, &attr);
  EXPECT_GE(id, NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START) << "no static id: the tool assigns one";

  auto registerString = core2<RegisterStringA>(NVTX_CBID_CORE2_DomainRegisterStringA);
  auto mark = core2<DomainMarkEx>(NVTX_CBID_CORE2_DomainMarkEx);
  Profiler profiler(hostOnly());
  profiler.start();
  Mixed value{'x', -7, 0.25, "eight!!", "pointed to", registerString(nccl_, "registered"), -3};
  const nvtxPayloadData_t payload{id, sizeof value, &value};
  const nvtxEventAttributes_t event = withPayload(registerString(nccl_, "mixed"), &payload);
  mark(nccl_, &event);
  Trace trace = profiler.stop();

  const TraceData& data = detail::dataOf(trace);
  ASSERT_EQ(data.records.instants.size(), 1u);
  const auto args = argsOf(data, data.records.instants[0].args);
  EXPECT_EQ(args.at("flag"), std::to_string(int{'x'}) + "i");
  EXPECT_EQ(args.at("count"), "-7i");
  EXPECT_EQ(args.at("ratio"), std::to_string(0.25));
  EXPECT_EQ(args.at("label"), "eight!!");
  EXPECT_EQ(args.at("pointed"), "pointed to");
  EXPECT_EQ(args.at("handle"), "registered");
  EXPECT_EQ(args.at("field 6"), "-3i") << "an unnamed entry is named by its place";
}

TEST_F(NvtxPayloadTest, UnknownSchemasShortPayloadsAndAsyncRangesAreHandled) {
  registerAllReduce(nccl_);
  auto registerString = core2<RegisterStringA>(NVTX_CBID_CORE2_DomainRegisterStringA);
  auto push = core2<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  auto pop = core2<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);
  auto start = core2<DomainStartEx>(NVTX_CBID_CORE2_DomainRangeStartEx);
  auto end = core2<DomainEnd>(NVTX_CBID_CORE2_DomainRangeEnd);
  // Another domain's schema of the same id is another schema.
  const nvtxDomainHandle_t other =
      core2<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA)((domainName() + " other").c_str());

  const uint64_t undecodedBefore = inject::nvtxPayloadCounts().undecoded;
  Profiler profiler(hostOnly());
  profiler.start();
  AllReduceParams params{42, 1024, 0};
  const nvtxPayloadData_t unknown{kStatic + 99, sizeof params, &params};
  const nvtxEventAttributes_t unknownEvent =
      withPayload(registerString(nccl_, "unknown"), &unknown);
  push(nccl_, &unknownEvent);
  pop(nccl_);
  const nvtxPayloadData_t wrongDomain{kStatic + 5, sizeof params, &params};
  const nvtxEventAttributes_t otherEvent =
      withPayload(registerString(other, "elsewhere"), &wrongDomain);
  push(other, &otherEvent);
  pop(other);
  // 12 bytes: the communicator, and half the size; the cut entries are left out.
  const nvtxPayloadData_t shortPayload{kStatic + 5, 12, &params};
  const nvtxEventAttributes_t shortEvent =
      withPayload(registerString(nccl_, "short"), &shortPayload);
  push(nccl_, &shortEvent);
  pop(nccl_);
  const nvtxPayloadData_t full{kStatic + 5, sizeof params, &params};
  const nvtxEventAttributes_t asyncEvent = withPayload(registerString(nccl_, "async"), &full);
  end(nccl_, start(nccl_, &asyncEvent));
  Trace trace = profiler.stop();

  const TraceData& data = detail::dataOf(trace);
  const auto* unknownRange = range(data, domainName() + ": unknown");
  const auto* elsewhere = range(data, domainName() + " other: elsewhere");
  const auto* cut = range(data, domainName() + ": short");
  const auto* async = range(data, domainName() + ": async");
  ASSERT_TRUE(unknownRange && elsewhere && cut && async) << "every event is recorded";
  EXPECT_EQ(argsOfRange(data, *unknownRange), 0u);
  EXPECT_EQ(argsOfRange(data, *elsewhere), 0u);
  EXPECT_EQ(inject::nvtxPayloadCounts().undecoded - undecodedBefore, 2u);
  const auto cutArgs = argsOf(data, argsOfRange(data, *cut));
  EXPECT_EQ(cutArgs.size(), 1u);
  EXPECT_EQ(cutArgs.at("NCCL communicator ID"), "42u");
  EXPECT_TRUE(async->async);
  EXPECT_EQ(argsOf(data, argsOfRange(data, *async)).at("Reduction operation"), "Sum");
}

// NCCL opens ncclCommInitRank* with a plain range and closes it with nvtxRangePopPayload,
// once the communicator exists: the range ends there, with the communicator's id.
TEST_F(NvtxPayloadTest, APopWithAPayloadEndsTheRangeAndAddsItsArguments) {
  struct InitParams {
    uint64_t comm;
    int nranks;
    int rank;
    int device;
  };
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0,
       offsetof(InitParams, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "No. of ranks", nullptr, 0, offsetof(InitParams, nranks),
       nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Rank", nullptr, 0, offsetof(InitParams, rank), nullptr,
       nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "CUDA device", nullptr, 0, offsetof(InitParams, device),
       nullptr, nullptr}};
  // NCCL's own domain: its ranges' arguments reach the GPU work inside them.
  nccl_ = core2<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA)("NCCL");
  ASSERT_EQ(registerStruct(nccl_, entries, 4, kStatic + 11), kStatic + 11);
  auto registerString = core2<RegisterStringA>(NVTX_CBID_CORE2_DomainRegisterStringA);
  auto push = core2<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  auto pushPayload = module_.slot<PayloadEvent>(NVTX3EXT_CBID_nvtxRangePushPayload);
  auto popPayload = module_.slot<PayloadEvent>(NVTX3EXT_CBID_nvtxRangePopPayload);
  auto markPayload = module_.slot<MarkPayload>(NVTX3EXT_CBID_nvtxMarkPayload);
  auto startPayload = module_.slot<StartPayload>(NVTX3EXT_CBID_nvtxRangeStartPayload);
  auto endPayload = module_.slot<EndPayload>(NVTX3EXT_CBID_nvtxRangeEndPayload);

  // Outside a recording the levels still move, as for nvtxDomainRangePop.
  nvtxEventAttributes_t init{};
  init.version = NVTX_VERSION;
  init.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  init.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  init.message.registered = registerString(nccl_, "ncclCommInitRankConfig");
  const int outside = push(nccl_, &init);
  EXPECT_EQ(popPayload(nccl_, nullptr, 0), outside);

  Profiler profiler(hostOnly());
  profiler.start();
  push(nccl_, &init);
  InitParams params{0xfeedfacecafebeefull, 2, 1, 1};
  const nvtxPayloadData_t payload{kStatic + 11, sizeof params, &params};
  popPayload(nccl_, &payload, 1);
  markPayload(nccl_, &payload, 1);
  pushPayload(nccl_, &payload, 1);
  popPayload(nccl_, nullptr, 0);
  endPayload(nccl_, startPayload(nccl_, nullptr, 0), &payload, 1);
  Trace trace = profiler.stop();

  const TraceData& data = detail::dataOf(trace);
  const auto* call = range(data, "NCCL: ncclCommInitRankConfig");
  ASSERT_NE(call, nullptr);
  EXPECT_FALSE(call->unfinished) << "the pop with a payload ended it";
  const auto args = argsOf(data, argsOfRange(data, *call));
  EXPECT_EQ(args.at("NCCL communicator ID"), std::to_string(0xfeedfacecafebeefull) + "u");
  EXPECT_EQ(args.at("No. of ranks"), "2i");
  EXPECT_EQ(args.at("Rank"), "1i");
  EXPECT_TRUE(data.tables.eventArgs[argsOfRange(data, *call) - 1].nccl);

  // Events of a payload alone are named after their domain.
  ASSERT_EQ(data.records.instants.size(), 1u);
  EXPECT_EQ(data.tables.strings.get(data.records.instants[0].name), "NCCL");
  EXPECT_EQ(argsOf(data, data.records.instants[0].args).at("CUDA device"), "1i");
  int named = 0;
  for (const auto& r : data.records.ranges) {
    if (data.tables.strings.get(r.name) != "NCCL") continue;
    ++named;
    EXPECT_FALSE(r.unfinished);
    EXPECT_EQ(argsOf(data, argsOfRange(data, r)).at("Rank"), "1i");
  }
  EXPECT_EQ(named, 2) << "the pushed one and the async one";
}

// Inside ncclGroupStart ... ncclGroupEnd NCCL only queues the calls; their work is launched
// in ncclGroupEnd, whose range is given what the calls of the (outermost) group said.
TEST_F(NvtxPayloadTest, AnNcclGroupsEndIsGivenTheSumOfItsCalls) {
  struct SendRecvParams {
    uint64_t comm;
    size_t bytes;
    int peer;
  };
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0,
       offsetof(SendRecvParams, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0,
       offsetof(SendRecvParams, bytes), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Peer rank", nullptr, 0, offsetof(SendRecvParams, peer),
       nullptr, nullptr}};
  nccl_ = core2<DomainCreateA>(NVTX_CBID_CORE2_DomainCreateA)("NCCL");
  ASSERT_EQ(registerStruct(nccl_, entries, 3, kStatic + 9), kStatic + 9);
  auto registerString = core2<RegisterStringA>(NVTX_CBID_CORE2_DomainRegisterStringA);
  auto push = core2<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  auto pop = core2<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);
  auto plain = [&](const char* call) {
    nvtxEventAttributes_t event{};
    event.version = NVTX_VERSION;
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    event.message.registered = registerString(nccl_, call);
    push(nccl_, &event);
    pop(nccl_);
  };
  auto transfer = [&](const char* call, SendRecvParams params) {
    const nvtxPayloadData_t payload{kStatic + 9, sizeof params, &params};
    const nvtxEventAttributes_t event = withPayload(registerString(nccl_, call), &payload);
    push(nccl_, &event);
    pop(nccl_);
  };

  Profiler profiler(hostOnly());
  profiler.start();
  plain("ncclGroupStart");
  plain("ncclGroupStart");  // nested: only the outermost end gets the sum
  transfer("ncclSend", {7, 100, 1});
  plain("ncclGroupEnd");
  transfer("ncclRecv", {7, 300, 1});
  transfer("ncclRecv", {7, 500, 1});
  plain("ncclGroupEnd");
  plain("ncclGroupStart");
  transfer("ncclSend", {7, 10, 2});
  transfer("ncclSend", {7, 20, 3});
  plain("ncclGroupEnd");
  plain("ncclGroupEnd");  // unmatched: ignored
  Trace trace = profiler.stop();

  const TraceData& data = detail::dataOf(trace);
  std::vector<std::map<std::string, std::string>> ends;
  for (const auto& r : data.records.ranges) {
    if (data.tables.strings.get(r.name) == "NCCL: ncclGroupEnd") {
      ends.push_back(argsOf(data, argsOfRange(data, r)));
    }
  }
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_TRUE(ends[0].empty()) << "the inner group's end launches nothing";
  EXPECT_EQ(ends[1].at("Calls in the group"), "ncclSend, ncclRecv x2");
  EXPECT_EQ(ends[1].at("Message size [bytes]"), "900u");
  EXPECT_EQ(ends[1].at("NCCL communicator ID"), "7u");
  EXPECT_EQ(ends[1].at("Peer rank"), "1i");
  EXPECT_EQ(ends[2].at("Calls in the group"), "ncclSend x2");
  EXPECT_EQ(ends[2].at("Message size [bytes]"), "30u");
  EXPECT_EQ(ends[2].count("Peer rank"), 0u) << "two peers: none is named";
  EXPECT_TRUE(ends[3].empty());
}

TEST_F(NvtxPayloadTest, MalformedRegistrationsAreRefusedAndCounted) {
  const uint64_t refusedBefore = inject::nvtxPayloadCounts().refused;
  nvtxPayloadSchemaAttr_t noEntries{};
  noEntries.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES;
  EXPECT_EQ(registerSchema_(nccl_, &noEntries), 0u);
  EXPECT_EQ(registerSchema_(nccl_, nullptr), 0u);
  static const nvtxPayloadSchemaEntry_t entry[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "x", nullptr, 0, 0, nullptr, nullptr}};
  nvtxPayloadSchemaAttr_t outOfRange{};
  outOfRange.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                         NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                         NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
  outOfRange.entries = entry;
  outOfRange.numEntries = 1;
  outOfRange.schemaId = 7;  // below the static range: reserved for NVTX's own types
  EXPECT_EQ(registerSchema_(nccl_, &outOfRange), 0u);
  EXPECT_EQ(inject::nvtxPayloadCounts().refused - refusedBefore, 3u);
}

}  // namespace
}  // namespace kinetrace
