#include "inject/nvtx_payload.h"

// Types only: kinetrace is the tool, not an NVTX client.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "inject/nvtx_injection.h"

namespace kinetrace::inject {
namespace {

using detail::EventArg;

// ---- what a registration is kept as -------------------------------------------------

struct Entry {
  std::string name;  // "field N" when the schema gave none
  uint64_t type = 0;
  uint64_t flags = 0;
  uint64_t offset = 0;
  uint64_t arrayLength = 0;  // arrayOrUnionDetail
  bool placed = true;        // its offset is known (false past an entry of unknown size)
};

struct Schema {
  const void* domain = nullptr;
  uint64_t id = 0;
  std::vector<Entry> entries;
};

struct Enum {
  const void* domain = nullptr;
  uint64_t id = 0;
  std::size_t size = 4;  // bytes of the enum's values in a payload
  std::vector<std::pair<uint64_t, std::string>> values;
};

// Everything registered, immutable once published: registration copies it, adds and swaps
// the pointer; events read it with one acquire load. Replaced catalogs are kept (an event may
// still be reading one): registrations are made once per schema, and capped.
struct Catalog {
  std::vector<const Schema*> schemas;
  std::vector<const Enum*> enums;
  const Catalog* older = nullptr;
};

constexpr std::size_t kMaxRegistrations = 4096;

std::mutex gRegisterMutex;
std::atomic<const Catalog*> gCatalog{nullptr};
std::atomic<uint64_t> gNextDynamicId{NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START};
std::atomic<uint64_t> gRegistered{0};
std::atomic<uint64_t> gRefused{0};
std::atomic<uint64_t> gUndecoded{0};

const Schema* findSchema(const Catalog* catalog, const void* domain, uint64_t id) {
  if (catalog == nullptr) return nullptr;
  for (const Schema* schema : catalog->schemas) {
    if (schema->id == id && schema->domain == domain) return schema;
  }
  return nullptr;
}

const Enum* findEnum(const Catalog* catalog, const void* domain, uint64_t id) {
  if (catalog == nullptr) return nullptr;
  for (const Enum* e : catalog->enums) {
    if (e->id == id && e->domain == domain) return e;
  }
  return nullptr;
}

// Size in bytes of a predefined entry type on this platform (LP64); 0 for types without a
// fixed size (strings and the like are handled apart).
std::size_t predefinedSize(uint64_t type) {
  switch (type) {
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT8:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT8:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR8:
    case NVTX_PAYLOAD_ENTRY_TYPE_BYTE:
      return 1;
    case NVTX_PAYLOAD_ENTRY_TYPE_SHORT:
    case NVTX_PAYLOAD_ENTRY_TYPE_USHORT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR16:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_BF16:
      return 2;
    case NVTX_PAYLOAD_ENTRY_TYPE_INT:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_WCHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR32:
    case NVTX_PAYLOAD_ENTRY_TYPE_TF32:
    case NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY:
    case NVTX_PAYLOAD_ENTRY_TYPE_COLOR_ARGB:
    case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT32:
      return 4;
    case NVTX_PAYLOAD_ENTRY_TYPE_LONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_SIZE:
    case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS:
    case NVTX_PAYLOAD_ENTRY_TYPE_SCOPE_ID:
    case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE:
      return 8;
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGDOUBLE:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT128:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT128:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT128:
      return 16;
    default:
      return 0;
  }
}

bool isString(uint64_t type) {
  return type == NVTX_PAYLOAD_ENTRY_TYPE_CSTRING || type == NVTX_PAYLOAD_ENTRY_TYPE_CSTRING_UTF8;
}

bool isArray(uint64_t flags) {
  return (flags & NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY) != 0;
}

// Where an entry without an offset goes: after the previous one, at its own alignment (a C
// struct's natural layout, which NVTX assumes when the offset is left at 0).
std::size_t entrySize(const Entry& entry, const Catalog* catalog, const void* domain) {
  if (isString(entry.type)) {
    if (entry.flags & NVTX_PAYLOAD_ENTRY_FLAG_POINTER) return sizeof(void*);
    return entry.arrayLength > 0 ? entry.arrayLength : sizeof(void*);
  }
  if (isArray(entry.flags)) return 0;
  if (entry.flags & NVTX_PAYLOAD_ENTRY_FLAG_POINTER) return sizeof(void*);
  if (entry.type >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START) {
    const Enum* e = findEnum(catalog, domain, entry.type);
    return e != nullptr ? e->size : 0;
  }
  return predefinedSize(entry.type);
}

std::size_t entryAlignment(const Entry& entry, std::size_t size) {
  if (isString(entry.type) && !(entry.flags & NVTX_PAYLOAD_ENTRY_FLAG_POINTER) &&
      entry.arrayLength > 0) {
    return 1;
  }
  return std::min<std::size_t>(std::max<std::size_t>(size, 1), 16);
}

void placeEntries(Schema& schema, const Catalog* catalog) {
  std::size_t next = 0;
  bool known = true;
  for (std::size_t i = 0; i < schema.entries.size(); ++i) {
    Entry& entry = schema.entries[i];
    const std::size_t size = entrySize(entry, catalog, schema.domain);
    if (entry.offset == 0 && i > 0) {
      if (!known || size == 0) {
        entry.placed = false;
        known = false;
        continue;
      }
      const std::size_t align = entryAlignment(entry, size);
      entry.offset = (next + align - 1) / align * align;
    }
    entry.placed = known || entry.offset != 0;
    if (size == 0) {
      known = false;
    } else {
      next = entry.offset + size;
      known = true;
    }
  }
}

// Publishes a catalog with `add` applied to a copy of the current one.
template <typename Add>
uint64_t publish(Add&& add) {
  std::lock_guard<std::mutex> lock(gRegisterMutex);
  if (gRegistered.load(std::memory_order_relaxed) >= kMaxRegistrations) {
    gRefused.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const Catalog* current = gCatalog.load(std::memory_order_acquire);
  auto* next = new (std::nothrow) Catalog();
  if (next == nullptr) return 0;
  if (current != nullptr) {
    next->schemas = current->schemas;
    next->enums = current->enums;
  }
  next->older = current;
  const uint64_t id = add(*next, current);
  if (id == 0) {
    delete next;
    gRefused.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  gRegistered.fetch_add(1, std::memory_order_relaxed);
  gCatalog.store(next, std::memory_order_release);
  return id;
}

uint64_t idFor(uint64_t fieldMask, uint64_t idField, uint64_t schemaIdBit) {
  if ((fieldMask & schemaIdBit) && idField >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START &&
      idField < NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START) {
    return idField;
  }
  if (fieldMask & schemaIdBit) return 0;  // a static id out of the static range
  return gNextDynamicId.fetch_add(1, std::memory_order_relaxed);
}

// ---- decoding -------------------------------------------------------------------------

template <typename T>
T readAt(const unsigned char* base, std::size_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof value);
  return value;
}

bool isSignedInteger(uint64_t type) {
  switch (type) {
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_SHORT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT:
    case NVTX_PAYLOAD_ENTRY_TYPE_LONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT8:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT64:
      return true;
    default:
      return false;
  }
}

int64_t signedOfSize(const unsigned char* base, std::size_t offset, std::size_t size) {
  switch (size) {
    case 1:
      return readAt<int8_t>(base, offset);
    case 2:
      return readAt<int16_t>(base, offset);
    case 4:
      return readAt<int32_t>(base, offset);
    default:
      return readAt<int64_t>(base, offset);
  }
}

uint64_t unsignedOfSize(const unsigned char* base, std::size_t offset, std::size_t size) {
  switch (size) {
    case 1:
      return readAt<uint8_t>(base, offset);
    case 2:
      return readAt<uint16_t>(base, offset);
    case 4:
      return readAt<uint32_t>(base, offset);
    default:
      return readAt<uint64_t>(base, offset);
  }
}

// One entry of a payload `size` bytes long at `base`; false when it cannot be decoded.
bool decodeEntry(const Entry& entry, const Catalog* catalog, const void* domain,
                 const unsigned char* base, std::size_t size, EventArg& out) {
  if (!entry.placed) return false;
  const std::size_t bytes = entrySize(entry, catalog, domain);
  if (bytes == 0 || entry.offset > size || size - entry.offset < bytes) return false;
  const std::size_t at = entry.offset;

  if (isString(entry.type)) {
    const char* text = nullptr;
    std::size_t limit = detail::kMaxEventArgTextBytes;
    if (!(entry.flags & NVTX_PAYLOAD_ENTRY_FLAG_POINTER) && entry.arrayLength > 0) {
      text = reinterpret_cast<const char*>(base + at);  // embedded, fixed length
      limit = std::min<std::size_t>(limit, entry.arrayLength);
    } else {
      text = readAt<const char*>(base, at);  // a pointer the caller keeps valid for the call
    }
    if (text == nullptr) return false;
    out = EventArg::textValue(entry.name, std::string_view(text, strnlen(text, limit)));
    return true;
  }
  if (isArray(entry.flags) || (entry.flags & NVTX_PAYLOAD_ENTRY_FLAG_POINTER)) return false;
  if (entry.type == NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE) {
    out = EventArg::textValue(entry.name, registeredStringText(readAt<const void*>(base, at)));
    return true;
  }
  if (entry.type >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START) {
    const Enum* e = findEnum(catalog, domain, entry.type);
    if (e == nullptr) return false;  // a nested schema
    const uint64_t value = unsignedOfSize(base, at, e->size);
    for (const auto& [number, name] : e->values) {
      if (number == value) {
        out = EventArg::textValue(entry.name, name);
        return true;
      }
    }
    out = EventArg::unsignedValue(entry.name, value);
    return true;
  }
  switch (entry.type) {
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32:
      out = EventArg::doubleValue(entry.name, readAt<float>(base, at));
      return true;
    case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64:
      out = EventArg::doubleValue(entry.name, readAt<double>(base, at));
      return true;
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGDOUBLE:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT128:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT128:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT128:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_BF16:
    case NVTX_PAYLOAD_ENTRY_TYPE_TF32:
      return false;
    default:
      break;
  }
  if (isSignedInteger(entry.type)) {
    out = EventArg::signedValue(entry.name, signedOfSize(base, at, bytes));
  } else {
    out = EventArg::unsignedValue(entry.name, unsignedOfSize(base, at, bytes));
  }
  return true;
}

// ---- the extension's slots ------------------------------------------------------------

uint64_t NVTX_API schemaRegisterSlot(nvtxDomainHandle_t domain,
                                     const nvtxPayloadSchemaAttr_t* attributes) {
  return registerPayloadSchema(domain, attributes);
}

uint64_t NVTX_API enumRegisterSlot(nvtxDomainHandle_t domain,
                                   const nvtxPayloadEnumAttr_t* attributes) {
  return registerPayloadEnum(domain, attributes);
}

uint8_t NVTX_API domainIsEnabledSlot(nvtxDomainHandle_t) {
  return 1;
}

}  // namespace

uint64_t registerPayloadSchema(const void* domain, const void* attributes) noexcept {
  const auto* attr = static_cast<const nvtxPayloadSchemaAttr_t*>(attributes);
  if (attr == nullptr || !(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) ||
      !(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) || attr->entries == nullptr ||
      attr->numEntries == 0 || attr->numEntries > 256) {
    gRefused.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  // Only plain structs are decoded; a union or a dynamic layout is registered (its id is
  // returned, so the caller works as without a tool) but its payloads are left out.
  const bool structLayout = !(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE) ||
                            attr->type == NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  try {
    return publish([&](Catalog& catalog, const Catalog* current) -> uint64_t {
      const uint64_t id =
          idFor(attr->fieldMask, attr->schemaId, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID);
      if (id == 0 || !structLayout) return id;
      auto* schema = new Schema();
      schema->domain = domain;
      schema->id = id;
      for (std::size_t i = 0; i < attr->numEntries; ++i) {
        const nvtxPayloadSchemaEntry_t& in = attr->entries[i];
        Entry entry;
        entry.name = in.name != nullptr ? std::string(in.name) : "field " + std::to_string(i);
        entry.type = in.type;
        entry.flags = in.flags;
        entry.offset = in.offset;
        entry.arrayLength = in.arrayOrUnionDetail;
        schema->entries.push_back(std::move(entry));
      }
      placeEntries(*schema, current);
      // A later registration of the same id replaces the earlier one.
      catalog.schemas.erase(
          std::remove_if(catalog.schemas.begin(), catalog.schemas.end(),
                         [&](const Schema* s) { return s->id == id && s->domain == domain; }),
          catalog.schemas.end());
      catalog.schemas.push_back(schema);
      return id;
    });
  } catch (...) {
    gRefused.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
}

uint64_t registerPayloadEnum(const void* domain, const void* attributes) noexcept {
  const auto* attr = static_cast<const nvtxPayloadEnumAttr_t*>(attributes);
  if (attr == nullptr || !(attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES) ||
      !(attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES) || attr->entries == nullptr ||
      attr->numEntries > 4096) {
    gRefused.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  try {
    return publish([&](Catalog& catalog, const Catalog*) -> uint64_t {
      const uint64_t id =
          idFor(attr->fieldMask, attr->schemaId, NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID);
      if (id == 0) return 0;
      auto* e = new Enum();
      e->domain = domain;
      e->id = id;
      if ((attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE) &&
          (attr->sizeOfEnum == 1 || attr->sizeOfEnum == 2 || attr->sizeOfEnum == 4 ||
           attr->sizeOfEnum == 8)) {
        e->size = attr->sizeOfEnum;
      }
      for (std::size_t i = 0; i < attr->numEntries; ++i) {
        const nvtxPayloadEnum_t& in = attr->entries[i];
        e->values.emplace_back(in.value, in.name != nullptr ? in.name : "");
      }
      catalog.enums.erase(
          std::remove_if(catalog.enums.begin(), catalog.enums.end(),
                         [&](const Enum* old) { return old->id == id && old->domain == domain; }),
          catalog.enums.end());
      catalog.enums.push_back(e);
      return id;
    });
  } catch (...) {
    gRefused.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
}

std::size_t decodeNvtxPayload(const void* domain, const void* payloads, std::size_t count,
                              detail::EventArg* out, std::size_t capacity) noexcept {
  const auto* data = static_cast<const nvtxPayloadData_t*>(payloads);
  if (data == nullptr) return 0;
  const Catalog* catalog = gCatalog.load(std::memory_order_acquire);
  std::size_t written = 0;
  // NCCL attaches one payload per event; a few more are read, and the rest left out.
  count = std::min<std::size_t>(count == 0 ? 1 : count, 4);
  for (std::size_t p = 0; p < count && written < capacity; ++p) {
    const Schema* schema = findSchema(catalog, domain, data[p].schemaId);
    if (schema == nullptr || data[p].payload == nullptr) {
      gUndecoded.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const auto* base = static_cast<const unsigned char*>(data[p].payload);
    // SIZE_MAX: the caller left the size to the tool; the schema's layout bounds the reads.
    const std::size_t size = data[p].size;
    for (const Entry& entry : schema->entries) {
      if (written == capacity) break;
      if (decodeEntry(entry, catalog, domain, base, size, out[written])) ++written;
    }
  }
  return written;
}

int initializeNvtxExtension(void* moduleInfo) noexcept {
  auto* info = static_cast<nvtxExtModuleInfo_t*>(moduleInfo);
  if (info == nullptr || info->segments == nullptr) return 0;
  // Other modules (counters, memory, ...) keep their slots empty: NVTX makes them no-ops.
  if (info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount == 0) return 1;
  nvtxExtModuleSegment_t& segment = info->segments[0];
  if (segment.functionSlots == nullptr) return 1;
  auto install = [&](std::size_t slot, auto function) {
    if (slot < segment.slotCount) {
      segment.functionSlots[slot] = reinterpret_cast<intptr_t>(function);
    }
  };
  install(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, &schemaRegisterSlot);
  install(NVTX3EXT_CBID_nvtxPayloadEnumRegister, &enumRegisterSlot);
  // Modules of older NVTX headers (compatibility id 0x0103) have these two slots only.
  install(NVTX3EXT_CBID_nvtxDomainIsEnabled, &domainIsEnabledSlot);
  installNvtxPayloadEventCalls(segment.functionSlots, segment.slotCount);
  return 1;
}

NvtxPayloadCounts nvtxPayloadCounts() noexcept {
  NvtxPayloadCounts counts;
  counts.schemas = gRegistered.load(std::memory_order_relaxed);
  counts.refused = gRefused.load(std::memory_order_relaxed);
  counts.undecoded = gUndecoded.load(std::memory_order_relaxed);
  return counts;
}

}  // namespace kinetrace::inject
