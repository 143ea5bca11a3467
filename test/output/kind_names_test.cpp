#include "output/kind_names.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace kinetrace::detail {
namespace {

TEST(KindNamesTest, NamesCopyKindsAsCupti) {
  const std::pair<CopyKind, const char*> expected[] = {
      {CopyKind::Unknown, "Unknown"}, {CopyKind::HtoD, "HtoD"}, {CopyKind::DtoH, "DtoH"},
      {CopyKind::HtoA, "HtoA"},       {CopyKind::AtoH, "AtoH"}, {CopyKind::AtoA, "AtoA"},
      {CopyKind::AtoD, "AtoD"},       {CopyKind::DtoA, "DtoA"}, {CopyKind::DtoD, "DtoD"},
      {CopyKind::HtoH, "HtoH"},       {CopyKind::PtoP, "PtoP"},
  };
  for (const auto& [kind, name] : expected) EXPECT_EQ(copyKindName(kind), name);
}

TEST(KindNamesTest, NamesMemoryKindsAsLibkineto) {
  const std::pair<MemoryKind, const char*> expected[] = {
      {MemoryKind::Unknown, "Unknown"},
      {MemoryKind::Pageable, "Pageable"},
      {MemoryKind::Pinned, "Pinned"},
      {MemoryKind::Device, "Device"},
      {MemoryKind::Array, "Array"},
      {MemoryKind::Managed, "Managed"},
      {MemoryKind::DeviceStatic, "Device Static"},
      {MemoryKind::ManagedStatic, "Managed Static"},
  };
  for (const auto& [kind, name] : expected) EXPECT_EQ(memoryKindName(kind), name);
}

TEST(KindNamesTest, NamesSyncKindsAsLibkineto) {
  EXPECT_EQ(syncKindName(SyncKind::EventSync), "Event Sync");
  EXPECT_EQ(syncKindName(SyncKind::StreamWaitEvent), "Stream Wait Event");
  EXPECT_EQ(syncKindName(SyncKind::StreamSync), "Stream Sync");
  EXPECT_EQ(syncKindName(SyncKind::ContextSync), "Context Sync");
  EXPECT_EQ(syncKindName(SyncKind::Unknown), "Synchronization");
}

TEST(KindNamesTest, NamesOverheadKindsAsTheDecoderDid) {
  const std::pair<OverheadKind, const char*> expected[] = {
      {OverheadKind::Unknown, "CUPTI overhead"},
      {OverheadKind::DriverCompiler, "Driver compiler"},
      {OverheadKind::CuptiBufferFlush, "CUPTI buffer flush"},
      {OverheadKind::CuptiInstrumentation, "CUPTI instrumentation"},
      {OverheadKind::CuptiResource, "CUPTI resource"},
      {OverheadKind::ModuleLoading, "Module loading"},
      {OverheadKind::LazyFunctionLoading, "Lazy function loading"},
      {OverheadKind::CommandBufferFull, "Command buffer full"},
      {OverheadKind::ActivityBufferRequest, "Activity buffer request"},
  };
  for (const auto& [kind, name] : expected) EXPECT_EQ(overheadKindName(kind), name);
}

TEST(KindNamesTest, NamesMemcpysAndMemsetsAsHtaSearchesForThem) {
  EXPECT_EQ(memcpyEventName(CopyKind::HtoD, MemoryKind::Pinned, MemoryKind::Device),
            "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(memcpyEventName(CopyKind::DtoH, MemoryKind::Device, MemoryKind::Pageable),
            "Memcpy DtoH (Device -> Pageable)");
  EXPECT_EQ(memcpyEventName(CopyKind::PtoP, MemoryKind::Device, MemoryKind::ManagedStatic),
            "Memcpy PtoP (Device -> Managed Static)");
  EXPECT_EQ(memcpyEventName(CopyKind::Unknown, MemoryKind::Unknown, MemoryKind::Unknown),
            "Memcpy Unknown (Unknown -> Unknown)");
  EXPECT_EQ(memsetEventName(MemoryKind::Device), "Memset (Device)");
  EXPECT_EQ(memsetEventName(MemoryKind::DeviceStatic), "Memset (Device Static)");
  EXPECT_EQ(memsetEventName(MemoryKind::Unknown), "Memset (Unknown)");
}

TEST(KindNamesTest, EveryMemcpyNameIsOneConstantFormattedOnce) {
  for (int copy = 0; copy <= static_cast<int>(CopyKind::PtoP); ++copy) {
    for (int src = 0; src <= static_cast<int>(MemoryKind::ManagedStatic); ++src) {
      for (int dst = 0; dst <= static_cast<int>(MemoryKind::ManagedStatic); ++dst) {
        const auto c = static_cast<CopyKind>(copy);
        const auto s = static_cast<MemoryKind>(src);
        const auto d = static_cast<MemoryKind>(dst);
        const std::string_view first = memcpyEventName(c, s, d);
        EXPECT_EQ(first, "Memcpy " + std::string(copyKindName(c)) + " (" +
                             std::string(memoryKindName(s)) + " -> " +
                             std::string(memoryKindName(d)) + ")");
        EXPECT_EQ(memcpyEventName(c, s, d).data(), first.data()) << "same storage each call";
      }
    }
  }
}

TEST(KindNamesTest, ValuesOutsideTheEnumsAreNamedUnknown) {
  const auto badCopy = static_cast<CopyKind>(200);
  const auto badMemory = static_cast<MemoryKind>(99);
  EXPECT_EQ(copyKindName(badCopy), "Unknown");
  EXPECT_EQ(memoryKindName(badMemory), "Unknown");
  EXPECT_EQ(syncKindName(static_cast<SyncKind>(77)), "Synchronization");
  EXPECT_EQ(overheadKindName(static_cast<OverheadKind>(77)), "CUPTI overhead");
  EXPECT_EQ(memcpyEventName(badCopy, MemoryKind::Pinned, badMemory),
            "Memcpy Unknown (Pinned -> Unknown)");
  EXPECT_EQ(memsetEventName(badMemory), "Memset (Unknown)");
}

TEST(KindNamesTest, CallsFromManyThreadsSeeOneTable) {
  std::vector<const char*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([t, &seen] { seen[t] = memsetEventName(MemoryKind::Managed).data(); });
  }
  for (auto& thread : threads) thread.join();
  for (const char* pointer : seen) EXPECT_EQ(pointer, seen[0]);
  EXPECT_EQ(std::string(seen[0]), "Memset (Managed)");
}

}  // namespace
}  // namespace kinetrace::detail
