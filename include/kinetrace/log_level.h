#pragma once

// How much kinetrace says on stderr (Config::logLevel, KINETRACE_LOG_LEVEL): errors only, or
// also warnings, progress, and details. Its own header so that internal logging needs no
// part of the configuration.

namespace kinetrace {

enum class LogLevel { Error = 0, Warning = 1, Info = 2, Debug = 3 };

}  // namespace kinetrace
