#include "session/schedule_phase.h"

#include <fmt/format.h>

#include <charconv>

#include "kinetrace/error.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

}  // namespace

SchedulePhase schedulePhase(const Schedule& schedule, int64_t step, int64_t* cycle) {
  if (step < schedule.skipFirst) return SchedulePhase::Idle;
  const int64_t period = schedule.wait + schedule.warmup + schedule.active;
  const int64_t sinceStart = step - schedule.skipFirst;
  const int64_t cycleIndex = sinceStart / period;
  if (schedule.repeat != 0 && cycleIndex >= schedule.repeat) return SchedulePhase::Idle;
  *cycle = cycleIndex + 1;
  const int64_t inCycle = sinceStart % period;
  if (inCycle < schedule.wait) return SchedulePhase::Idle;
  if (inCycle < schedule.wait + schedule.warmup) return SchedulePhase::Warmup;
  return SchedulePhase::Active;
}

void checkSchedule(const Schedule& s) {
  if (s.skipFirst < 0 || s.wait < 0 || s.warmup < 0 || s.repeat < 0) {
    throw Error("schedule: skip_first, wait, warmup and repeat must not be negative");
  }
  if (s.active < 1) throw Error("schedule: active must be at least 1 step");
}

Schedule parseSchedule(std::string_view text) {
  Schedule schedule;
  std::string_view rest = text;
  while (!trim(rest).empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t equals = part.find('=');
    const std::string_view key = trim(part.substr(0, equals));
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : trim(part.substr(equals + 1));
    int64_t number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
      throw Error(fmt::format("schedule: \"{}\" is not KEY=NUMBER (in \"{}\")", part, text));
    }
    if (key == "wait") {
      schedule.wait = number;
    } else if (key == "warmup") {
      schedule.warmup = number;
    } else if (key == "active") {
      schedule.active = number;
    } else if (key == "repeat") {
      schedule.repeat = number;
    } else if (key == "skip_first") {
      schedule.skipFirst = number;
    } else {
      throw Error(fmt::format(
          "schedule: unknown key \"{}\" (known: skip_first, wait, warmup, active, repeat)", key));
    }
  }
  checkSchedule(schedule);
  return schedule;
}

std::string formatSchedule(const Schedule& s) {
  return fmt::format("skip_first={},wait={},warmup={},active={},repeat={}", s.skipFirst, s.wait,
                     s.warmup, s.active, s.repeat);
}

std::string pathOfCycle(const std::string& output, int64_t cycle) {
  const std::string number = std::to_string(cycle);
  std::string path = output;
  const std::size_t placeholder = path.find("{cycle}");
  if (placeholder != std::string::npos) return path.replace(placeholder, 7, number);
  // Before the extension (".json", ".json.gz", ".pftrace"), else at the end.
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos || dot == 0) return path + "-cycle" + number;
  return path.substr(0, dot) + "-cycle" + number + path.substr(dot);
}

}  // namespace kinetrace::detail
