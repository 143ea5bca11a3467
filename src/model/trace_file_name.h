#pragma once

#include <string>
#include <string_view>
#include <vector>

// The one rule for the names kinetrace gives trace files itself (an output that names a
// directory, under `kinetrace run` or from a library session):
//
//   kinetrace-<part>-<part>...<extension>
//
// where the extension follows the trace format (Config::traceFormat), so a file's name always
// says what is inside it, whichever front-end wrote it. Header-only: the injection library
// uses it without reaching into libkinetrace.so's hidden symbols.

namespace kinetrace {

// ".json", ".json.gz" or ".pftrace" for a trace format; ".json" for "" (the default).
inline std::string_view traceFormatExtension(std::string_view format) {
  if (format == "json.gz") return ".json.gz";
  if (format == "pftrace") return ".pftrace";
  return ".json";
}

inline std::string traceFileName(const std::vector<std::string>& parts, std::string_view format) {
  std::string name = "kinetrace";
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    name += '-';
    name += part;
  }
  name += traceFormatExtension(format);
  return name;
}

}  // namespace kinetrace
