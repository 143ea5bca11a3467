#include <string>
#include <type_traits>
#include <variant>

#include "kinetrace/sink.h"
#include "output/chrome_naming.h"

namespace kinetrace {
namespace {

// Event strings point into the trace being written and die with the write() call.
OwnedArg copyArg(const Arg& arg) {
  OwnedArg owned;
  owned.key = std::string(arg.key);
  std::visit(
      [&owned](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          owned.value = std::string(value);
        } else if constexpr (std::is_same_v<T, JsonText>) {
          owned.value = OwnedJsonText{std::string(value.text)};
        } else {
          owned.value = value;
        }
      },
      arg.value);
  return owned;
}

}  // namespace

const OwnedArg* OwnedEvent::arg(const std::string& key) const {
  for (const OwnedArg& candidate : args) {
    if (candidate.key == key) return &candidate;
  }
  return nullptr;
}

void MemorySink::begin(const TraceHeader& header) {
  header_ = header;
  footer_.clear();
  events_.clear();
  tracks_.clear();
  ended_ = false;
}

void MemorySink::write(const Event& event) {
  OwnedEvent& owned = events_.emplace_back();
  owned.phase = event.phase;
  owned.name = std::string(event.name);
  owned.category = std::string(event.category);
  owned.pid = event.pid;
  owned.tid = event.tid;
  owned.timestampNs = event.timestampNs;
  owned.durationNs = event.durationNs;
  owned.flowId = event.flowId;
  owned.track = event.track;
  owned.args.reserve(event.argCount);
  for (std::size_t i = 0; i < event.argCount; ++i) owned.args.push_back(copyArg(event.args[i]));
}

void MemorySink::describe(const Track& track) {
  detail::noteLatestTrack(tracks_, track);
}

const OwnedTrack* MemorySink::track(uint64_t id) const {
  for (const OwnedTrack& t : tracks_) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

void MemorySink::end(const Metadata& footer) {
  for (const OwnedTrack& kept : tracks_) {
    detail::forEachChromeNamingEvent(detail::trackView(kept),
                                     [this](const Event& event) { write(event); });
  }
  footer_ = footer;
  ended_ = true;
}

const Value* MemorySink::metadata(const std::string& key) const {
  // The last entry of a key is the one a JSON reader keeps, and the footer comes last.
  auto findLast = [&key](const Metadata& metadata) -> const Value* {
    for (auto it = metadata.rbegin(); it != metadata.rend(); ++it) {
      if (it->key == key) return &it->value;
    }
    return nullptr;
  };
  if (const Value* value = findLast(footer_)) return value;
  return findLast(header_.metadata);
}

}  // namespace kinetrace
