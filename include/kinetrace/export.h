#pragma once

// Symbols of the public API are exported from libkinetrace.so; everything else is hidden.
#if defined(_WIN32)
#define KINETRACE_API
#else
#define KINETRACE_API __attribute__((visibility("default")))
#endif
