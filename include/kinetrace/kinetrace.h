#pragma once

// kinetrace: GPU and host activity traces for CUDA programs, written as Chrome Trace JSON.
//
//   #include <kinetrace/kinetrace.h>
//
//   kinetrace::Profiler profiler;                    // configured from KINETRACE_* variables
//   profiler.start();
//   for (int step = 0; step < steps; ++step) {
//     kinetrace::Range range("ProfilerStep#" + std::to_string(step));
//     train_step();
//   }
//   profiler.stop().save("trace.json");             // open in Perfetto or chrome://tracing
//
// Layers: host.h records from the application's threads; profiler.h runs a session;
// schedule.h runs sessions for chosen steps of a loop; trace.h is a session's result; sink.h
// is where a trace goes.

#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "kinetrace/event.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "kinetrace/schedule.h"
#include "kinetrace/sink.h"
#include "kinetrace/trace.h"
