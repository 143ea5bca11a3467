#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// NVTX capture for the injection library: kinetrace is the NVTX tool.
//
// An application's NVTX calls (C/C++ nvtxRangePushA..., PyTorch's torch.cuda.nvtx and
// emit_nvtx, NCCL's domain ranges) go through function pointers in the NVTX instance built
// into the calling library. On its first call, that instance loads the library named by
// NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2(getExportTable); the tool
// then asks the export table for the CORE and CORE2 modules' tables of function-pointer
// slots and writes its own implementations into them. Slots left alone become no-ops.
// Every library with NVTX compiled in has its own instance, so this runs once per instance.
//
// What kinetrace records (names are copied: NVTX strings are not literals):
//   nvtxRangePush{A,W,Ex}, nvtxDomainRangePushEx -> a range on the calling thread, closed by
//       the matching nvtxRangePop / nvtxDomainRangePop; GPU work launched inside it carries
//       its External id. All domains share the thread's one range stack.
//   nvtxRangeStart{A,W,Ex}, nvtxDomainRangeStartEx -> an async range (kinetrace::
//       startAsyncRange), ended by nvtxRangeEnd / nvtxDomainRangeEnd on any thread.
//   nvtxMark{A,W,Ex}, nvtxDomainMarkEx -> an instant.
//   nvtxNameOsThread{A,W} -> the thread's name.
//   Domains prefix the message: "NCCL: ncclAllReduce". Registered strings resolve to their
//   text. Colors, categories and scalar payloads are not recorded; extended payloads
//   (NVTX_PAYLOAD_TYPE_EXT, described by registered schemas: NCCL's message sizes,
//   communicators and peers) become the event's arguments (inject/nvtx_payload.h).
// Outside a recording every call returns after a relaxed load and a count kept per thread.
//
// Counted since the process started, so a trace can say why it holds no NVTX ranges: no
// NVTX instance ever loaded kinetrace (instances 0), none of them made a call (calls 0),
// or the calls came outside the recording (recorded < calls).

namespace kinetrace::inject {

// NvtxGetExportTableFunc_t, without NVTX's headers.
using NvtxGetExportTable = const void* (*)(uint32_t exportTableId);

// Fills the CORE and CORE2 tables of the NVTX instance behind `getExportTable`. Returns 1
// (NVTX's success) or 0 when the export table is unusable (NVTX then unloads nothing of
// ours that matters and turns its calls into no-ops).
int initializeNvtxInjection(NvtxGetExportTable getExportTable) noexcept;

// Step marks: ranges that start a step of the program's loop (config key step_marks). The
// listener runs on the thread that pushed or started the range, before the range itself is
// recorded, so a recording it starts holds the range and one it stops does not. Without a
// listener (the default) step marks cost nothing.
using StepMarkListener = void (*)() noexcept;
// `names`: comma list, as Config::stepMarks. Call before the program's loop; a later call
// replaces the names and listener (the old ones stay readable by threads still using them).
void setStepMarks(const std::vector<std::string>& names, StepMarkListener listener);
// Whether `message` starts with one of `names` without regard to case, followed by anything
// but a letter.
bool isStepMark(std::string_view message, const std::vector<std::string>& names) noexcept;

// The payload extension's event calls (nvtxRangePushPayload, nvtxRangePopPayload,
// nvtxMarkPayload, nvtxRangeStartPayload, nvtxRangeEndPayload), written into the payload
// module's function slots (inject/nvtx_payload.h): ranges and marks named after their
// domain, with the payload as arguments; a pop or end with a payload adds it to its range.
void installNvtxPayloadEventCalls(intptr_t* slots, std::size_t slotCount) noexcept;

struct NvtxCounts {
  uint64_t instances = 0;  // NVTX instances whose tables kinetrace filled
  uint64_t calls = 0;      // range pushes and starts, and marks: the calls that make an event
  uint64_t recorded = 0;   // those made while kinetrace was recording
};
NvtxCounts nvtxCounts() noexcept;

}  // namespace kinetrace::inject
