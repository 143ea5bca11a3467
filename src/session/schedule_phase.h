#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kinetrace/schedule.h"

// What a Schedule says about one step: the one definition that StepScheduler (steps marked
// with kinetrace::step()) and the injection's controller (steps marked by NVTX ranges) share.

namespace kinetrace::detail {

enum class SchedulePhase { Idle, Warmup, Active };

// The phase of step `step` (counted from 0); `cycle` gets its cycle (from 1) unless Idle
// outside every cycle.
SchedulePhase schedulePhase(const Schedule& schedule, int64_t step, int64_t* cycle);

// Throws kinetrace::Error naming what is wrong (a negative count, no active step).
void checkSchedule(const Schedule& schedule);

// "wait=1,warmup=1,active=3,repeat=2[,skip_first=10]": keys as torch.profiler.schedule's
// arguments, any order, unnamed ones keep their defaults. Throws kinetrace::Error naming the
// bad part.
Schedule parseSchedule(std::string_view text);
std::string formatSchedule(const Schedule& schedule);

// A trace path for cycle `cycle`: "{cycle}" in `output` is replaced by the number, else
// "-cycleN" goes before the extension.
std::string pathOfCycle(const std::string& output, int64_t cycle);

}  // namespace kinetrace::detail
