#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/event_args.h"

// NVTX's payload extension, as the tool sees it: what lets an NVTX range say more than its
// name. NCCL (2.19 and later) describes every call this way in its "NCCL" domain: the
// communicator, message size, reduction, root or peer of each ncclAllReduce, ncclSend...
//
// A library registers payload schemas (the fields of a C struct: name, type, offset) and
// enums with nvtxPayloadSchemaRegister / nvtxPayloadEnumRegister, then attaches a struct to
// an event: payloadType NVTX_PAYLOAD_TYPE_EXT, payload.ullValue pointing at an array of
// nvtxPayloadData_t {schema id, size, address}, reserved0 its length. The extension's calls
// reach the tool through InitializeInjectionNvtxExtension(moduleInfo), which NVTX calls once
// per extension module of each NVTX instance; the tool writes its functions into the
// module's slots.
//
// kinetrace keeps a copy of every schema and enum (registrations are few, made once) in an
// immutable catalog that registration replaces and events read without a lock, and decodes
// each payload into typed event arguments on the calling thread: integers, floats, enum
// names, strings (embedded, pointed to, or registered). Nested schemas, arrays and unions
// are left out. The payload-only calls (nvtxRangePushPayload, nvtxMarkPayload, ...) are not
// handled: NVTX turns them into no-ops.

namespace kinetrace::inject {

// InitializeInjectionNvtxExtension: fills the payload module's slots (other modules are
// left alone, so NVTX makes their calls no-ops). `moduleInfo`: an nvtxExtModuleInfo_t.
// Returns 1 (NVTX's success) unless the module info is unusable.
int initializeNvtxExtension(void* moduleInfo) noexcept;

// The text of a registered string handle (nvtxDomainRegisterString), for payload entries of
// type NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE; defined with the registry of
// strings (nvtx_injection.cpp).
std::string_view registeredStringText(const void* handle) noexcept;

// Decodes the payloads of an event (`payloads`: its nvtxPayloadData_t array, `count` long)
// in `domain` (its handle; nullptr for the default domain) into at most `capacity`
// arguments. Views point into the catalog and the payload, valid during the NVTX call.
// Returns the number of arguments written.
std::size_t decodeNvtxPayload(const void* domain, const void* payloads, std::size_t count,
                              detail::EventArg* out, std::size_t capacity) noexcept;

// Registration, as the extension's slots call it (exposed for tests, which register
// schemas through the same functions NCCL's calls reach). `attributes`: an
// nvtxPayloadSchemaAttr_t / nvtxPayloadEnumAttr_t. Return the schema id (0: refused).
uint64_t registerPayloadSchema(const void* domain, const void* attributes) noexcept;
uint64_t registerPayloadEnum(const void* domain, const void* attributes) noexcept;

struct NvtxPayloadCounts {
  uint64_t schemas = 0;    // registered schemas and enums kept
  uint64_t refused = 0;    // registrations refused (malformed, or past the cap)
  uint64_t undecoded = 0;  // payloads of events that named no known schema
};
NvtxPayloadCounts nvtxPayloadCounts() noexcept;

}  // namespace kinetrace::inject
