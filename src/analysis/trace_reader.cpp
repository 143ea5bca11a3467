#include "analysis/trace_reader.h"

#include <fmt/format.h>

#include <cctype>
#include <string_view>

#include "analysis/byte_source.h"
#include "kinetrace/error.h"

namespace kinetrace::detail {

TraceFileFormat detectTraceFormat(const std::string& path) {
  ByteSource source(path);
  char first[64];
  std::size_t got = 0;
  got = source.read(first, sizeof first);
  if (got >= 3 && first[0] == '\x0a') {
    // A Trace message starts with field 1, length-delimited (the byte 0x0a, also a JSON
    // newline), then the first packet's length and its first field's tag. JSON would have
    // whitespace or an opening bracket followed by what may follow one.
    const auto isJsonSpace = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
    const std::string_view afterBracket = " \n\r\t\"{}[]-0123456789tfn";
    const bool jsonAhead =
        isJsonSpace(first[1]) || ((first[1] == '{' || first[1] == '[') &&
                                  afterBracket.find(first[2]) != std::string_view::npos);
    if (!jsonAhead) return TraceFileFormat::Perfetto;
  }
  // Otherwise the first byte that is not JSON whitespace decides.
  while (true) {
    if (got == 0) got = source.read(first, sizeof first);
    if (got == 0) {
      throw Error(fmt::format("{} is empty{}: not a trace", path,
                              source.compressed() ? " once decompressed" : ""));
    }
    std::size_t i = 0;
    while (i < got &&
           (first[i] == ' ' || first[i] == '\n' || first[i] == '\r' || first[i] == '\t')) {
      ++i;
    }
    if (i == got) {
      got = 0;
      continue;
    }
    const char c = first[i];
    if (c == '{' || c == '[') return TraceFileFormat::ChromeJson;
    const bool printable = std::isprint(static_cast<unsigned char>(c)) != 0;
    throw Error(fmt::format(
        "{} is not a trace: it starts with {} where Chrome trace JSON starts with '{{' or '[' "
        "and a Perfetto trace with the byte 0x0a",
        path,
        printable ? fmt::format("'{}'", c)
                  : fmt::format("the byte 0x{:02x}", static_cast<unsigned char>(c))));
  }
}

ReadReport readTraceFile(const std::string& path, Sink& sink, const std::string& traceName,
                         const ReadProgress& progress) {
  switch (detectTraceFormat(path)) {
    case TraceFileFormat::ChromeJson:
      return readChromeJsonTrace(path, sink, traceName, progress);
    case TraceFileFormat::Perfetto:
      return readPerfettoTrace(path, sink, traceName, progress);
  }
  return {};
}

}  // namespace kinetrace::detail
