#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kinetrace/config.h"

// The one rule for the names kinetrace gives trace files itself (an output that names a
// directory, under `kinetrace run` or from a library session):
//
//   kinetrace-<part>-<part>...<extension>
//
// where the extension follows the trace format (Config::traceFormat), so a file's name always
// says what is inside it, whichever front-end wrote it. Header-only: the injection library
// uses it without reaching into libkinetrace.so's hidden symbols.

namespace kinetrace {

// Every trace format, one row each: its name as settings and options say it
// (trace_format=pftrace, --format pftrace) and its files' extension.
struct TraceFormatName {
  TraceFormat format;
  const char* name;
  const char* extension;
};
inline constexpr TraceFormatName kTraceFormats[] = {
    {TraceFormat::Json, "json", ".json"},
    {TraceFormat::JsonGz, "json.gz", ".json.gz"},
    {TraceFormat::Pftrace, "pftrace", ".pftrace"},
};

inline const TraceFormatName& traceFormatName(TraceFormat format) {
  for (const TraceFormatName& row : kTraceFormats) {
    if (row.format == format) return row;
  }
  return kTraceFormats[0];
}

inline std::string traceFileName(const std::vector<std::string>& parts, TraceFormat format) {
  std::string name = "kinetrace";
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    name += '-';
    name += part;
  }
  name += traceFormatName(format).extension;
  return name;
}

}  // namespace kinetrace
