#pragma once

// A trace with one of every record kind, as the assembler hands them to EventWriter: host
// ranges (nested, async, unfinished), launch calls with their arrows, kernels (one from a
// graph), copies (one peer), a memset, a sync, a GPU span, instants, counters, memory
// events and CUPTI overhead, on two threads and two devices. For tests that write a trace
// and read it back in another format.

#include <string>

#include "model/trace_data.h"

namespace kinetrace::test {

inline detail::TraceData sampleTrace(int64_t base = 1'750'000'000'000'000'000) {
  using namespace detail;
  TraceData trace;
  trace.startNs = base;
  trace.stopNs = base + 1'000'000;
  TraceTables& t = trace.tables;
  t.pid = 4242;
  t.processName = "python3 train.py";
  t.threads.push_back(ThreadInfo{4242, 4242, t.strings.intern("main")});
  t.threads.push_back(ThreadInfo{4242, 4300, t.strings.intern("data loader")});
  auto name = [&t](const char* text) { return t.strings.intern(text); };

  TraceRecords& r = trace.records;
  r.ranges.push_back(
      {base + 100, base + 90'000, 1, 0, name("ProfilerStep#3"), 0, RangeCategory::UserAnnotation});
  r.ranges.push_back({base + 100, base + 40'000, 2, 1, name("aten::mm"), 0, RangeCategory::CpuOp});
  RangeRecord async{base + 500,
                    base + 70'000,
                    3,
                    0,
                    name("prefetch \"batch\"\n"),
                    1,
                    RangeCategory::UserAnnotation};
  async.async = true;
  async.lane = 1;
  r.ranges.push_back(async);
  RangeRecord open{
      base + 95'000, base + 1'000'000, 4, 0, name("still open"), 0, RangeCategory::UserAnnotation};
  open.unfinished = true;
  r.ranges.push_back(open);

  for (uint32_t i = 0; i < 3; ++i) {
    ApiCallRecord call;
    call.startNs = base + 1'000 + i * 10'000;
    call.endNs = call.startNs + 2'500;
    call.externalId = 2;
    call.correlationId = 70 + i;
    call.callbackId = 211;
    call.thread = 0;
    call.name = name(i == 2 ? "cudaMemcpyAsync" : "cudaLaunchKernel");
    call.effect = i == 2 ? CallEffect::Copy : CallEffect::Kernel;
    r.apiCalls.push_back(call);
    r.flows.push_back(FlowRecord{call.startNs, call.correlationId, 0});
  }
  ApiCallRecord driver;
  driver.startNs = base + 60'000;
  driver.endNs = base + 61'000;
  driver.correlationId = 90;
  driver.callbackId = 17;
  driver.thread = 1;
  driver.name = name("cuMemAlloc_v2");
  driver.domain = ApiDomain::Driver;
  r.apiCalls.push_back(driver);

  for (uint32_t i = 0; i < 2; ++i) {
    KernelRecord k;
    k.at.startNs = base + 5'000 + i * 10'000;
    k.at.endNs = k.at.startNs + 1'234;
    k.at.externalId = 2;
    k.at.correlationId = 70 + i;
    k.at.deviceId = i;
    k.at.contextId = 1;
    k.at.streamId = 7;
    k.at.hasLaunchCall = true;
    k.queuedNs = k.at.startNs - 3'000;
    k.name = name(i == 0 ? "void gemm<float, 128>(float const*, float*)" : "elementwise");
    k.grid[0] = 1024, k.grid[1] = 8, k.grid[2] = 1;
    k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
    k.registersPerThread = 96;
    k.staticSharedBytes = 1'024;
    k.dynamicSharedBytes = 48'000;
    k.blocksPerSm = 1.5f;
    k.warpsPerSm = 12.25f;
    k.occupancyPercent = i == 0 ? 37.5f : -1;
    if (i == 1) {
      k.graphId = 3;
      k.graphNodeId = 12345678901ull;
    }
    r.kernels.push_back(k);
  }
  MemcpyRecord copy;
  copy.at = r.kernels[0].at;
  copy.at.startNs = base + 26'000;
  copy.at.endNs = base + 29'000;
  copy.at.correlationId = 72;
  copy.bytes = 1 << 20;
  copy.copyKind = CopyKind::HtoD;
  copy.srcKind = MemoryKind::Pinned;
  copy.dstKind = MemoryKind::Device;
  r.memcpys.push_back(copy);
  MemcpyRecord peer = copy;
  peer.at.startNs = base + 31'000;
  peer.at.endNs = base + 32'000;
  peer.at.hasLaunchCall = false;
  peer.copyKind = CopyKind::PtoP;
  peer.peer = true;
  peer.srcDeviceId = 0;
  peer.dstDeviceId = 1;
  r.memcpys.push_back(peer);
  MemsetRecord set;
  set.at = peer.at;
  set.at.startNs = base + 33'000;
  set.at.endNs = base + 33'500;
  set.bytes = 4096;
  set.memoryKind = MemoryKind::Device;
  r.memsets.push_back(set);
  SyncRecord sync;
  sync.at = peer.at;
  sync.at.startNs = base + 34'000;
  sync.at.endNs = base + 36'000;
  sync.kind = SyncKind::StreamSync;
  r.syncs.push_back(sync);
  r.gpuSpans.push_back({base + 5'000, base + 40'000, 1, name("ProfilerStep#3"), 0, 7, 0});

  r.instants.push_back({base + 50'000, name("checkpoint saved"), 0});
  r.counters.push_back({base + 51'000, 17.5, name("loss"), 0});
  r.counters.push_back({base + 52'000, 3.0, name("queue depth"), 1});
  MemoryRecord alloc;
  alloc.timeNs = base + 60'500;
  alloc.address = 0x7f0000001000;
  alloc.bytes = 1 << 20;
  alloc.totalAllocated = 3 << 20;
  alloc.totalReserved = 4 << 20;
  alloc.thread = 1;
  r.memory.push_back(alloc);
  r.overheads.push_back(
      {base + 70'000, base + 71'000, 4242, OverheadKind::Unknown, OverheadObject::Unknown, 0});
  trace.header = {{"schemaVersion", 1},
                  {"distributedInfo", Value::object({{"rank", 0}, {"world_size", 2}})}};
  trace.footer = {{"kinetrace_cupti_dropped_records", 0},
                  {"kinetrace_clock", Value::object({{"bound_ns", 1500}, {"source", "launch"}})},
                  {"note", Value()},
                  {"big", uint64_t{18'000'000'000'000'000'000ull}},
                  {"ratio", 0.125}};
  return trace;
}

}  // namespace kinetrace::test
