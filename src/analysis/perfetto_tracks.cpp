#include "analysis/perfetto_tracks.h"

#include <fmt/format.h>

#include <utility>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"

namespace kinetrace::detail {

using proto::ProtoField;
using proto::ProtoReader;
using namespace pftrace;

TrackTable::TrackTable(ReadBudget& budget)
    : budget_(budget),
      tracks_(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
              BudgetAllocator<char>(budget, kTracksGrowth)) {}

void TrackTable::describe(std::string_view bytes) {
  ProtoReader reader(bytes);
  ProtoField field;
  uint64_t uuid = 0;
  TrackInfo info(budget_);
  while (reader.next(field)) {
    switch (field.number) {
      case kTrackUuid:
        uuid = field.value;
        break;
      case kTrackParentUuid:
        info.parent = field.value;
        break;
      case kTrackName:
        info.name.assign(field.bytes.data(), field.bytes.size());
        break;
      case kTrackProcess: {
        info.kind = TrackInfo::Kind::Process;
        ProtoReader process(field.bytes);
        ProtoField part;
        while (process.next(part)) {
          // int32 in Perfetto's schema; kinetrace writes any int64 pid as a varint.
          if (part.number == kProcessPid) info.pid = part.asInt64();
        }
        break;
      }
      case kTrackThread: {
        info.kind = TrackInfo::Kind::Thread;
        ProtoReader thread(field.bytes);
        ProtoField part;
        while (thread.next(part)) {
          if (part.number == kThreadPid) info.pid = part.asInt64();
          if (part.number == kThreadTid) info.tid = part.asInt64();
        }
        break;
      }
      case kTrackCounter: {
        info.kind = TrackInfo::Kind::Counter;
        ProtoReader counter(field.bytes);
        ProtoField part;
        while (counter.next(part)) {
          if (part.number == kCounterUnitName)
            info.unit.assign(part.bytes.data(), part.bytes.size());
          if (part.number == kCounterCategories) {
            info.category.assign(part.bytes.data(), part.bytes.size());
          }
        }
        break;
      }
      default:
        break;
    }
  }
  // A lane of a thread track (a child track with no descriptor of its own): its events
  // are the thread's.
  if (info.kind == TrackInfo::Kind::Other && info.parent != 0) {
    auto parent = tracks_.find(info.parent);
    if (parent != tracks_.end() && parent->second.kind == TrackInfo::Kind::Thread) {
      info.kind = TrackInfo::Kind::Thread;
      info.pid = parent->second.pid;
      info.tid = parent->second.tid;
    }
  }
  auto found = tracks_.find(uuid);
  if (found == tracks_.end()) {
    tracks_.emplace(uuid, std::move(info));
  } else {
    found->second = std::move(info);
  }
}

const TrackInfo& TrackTable::at(uint64_t uuid) const {
  auto found = tracks_.find(uuid);
  if (found == tracks_.end()) {
    throw Error(fmt::format("an event on track {}, which was never described", uuid));
  }
  return found->second;
}

}  // namespace kinetrace::detail
