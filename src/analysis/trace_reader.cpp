#include "analysis/trace_reader.h"

#include <fmt/format.h>

#include <cctype>
#include <string_view>

#include "analysis/byte_source.h"
#include "analysis/json_structure.h"
#include "kinetrace/error.h"

namespace kinetrace::detail {

void checkJsonDepth(std::string_view text, const std::string& what) {
  std::size_t depth = 0;
  forEachStructuralChar(text, [&](char c) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw Error(fmt::format("{} nests arrays and objects more than {} levels deep", what,
                                kMaxJsonDepth));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  });
}

TraceFileFormat detectTraceFormat(const std::string& path, ReadBudget& budget) {
  const ReadBudget::Reading reading(budget, path);
  ByteSource source(path, budget);
  return detectTraceFormat(source);
}

TraceFileFormat detectTraceFormat(ByteSource& source) {
  const std::string& path = source.path();
  std::string_view first = source.peek(3);
  if (first.size() >= 3 && first[0] == '\x0a') {
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
  // Otherwise the first byte that is not JSON whitespace decides. Whitespace is read and
  // let go (the JSON reader skips it again), so a file of whitespace takes no memory.
  char skipped[4096];
  while (true) {
    first = source.peek(sizeof skipped);
    if (first.empty()) {
      throw Error(fmt::format("{} is empty{}: not a trace", path,
                              source.compressed() ? " once decompressed" : ""));
    }
    const std::size_t spaces = first.find_first_not_of(" \n\r\t");
    if (spaces == std::string_view::npos || spaces > 0) {
      source.read(skipped, spaces == std::string_view::npos ? first.size() : spaces);
      continue;
    }
    const char c = first[0];
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
                         ReadBudget& budget, const ReadProgress& progress) {
  const ReadBudget::Reading reading(budget, path);
  ByteSource source(path, budget);
  switch (detectTraceFormat(source)) {
    case TraceFileFormat::ChromeJson:
      return readChromeJsonTrace(source, sink, traceName, budget, progress);
    case TraceFileFormat::Perfetto:
      return readPerfettoTrace(source, sink, traceName, budget, progress);
  }
  return {};
}

}  // namespace kinetrace::detail
