#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "output/atomic_file.h"

namespace kinetrace::cli {

// The --json and --html files of a command that writes a report (analyze, diff). Each file is
// made (a temporary file beside its name) when this is constructed, before the traces are
// read: an output that cannot be written is said at once, not after minutes of analysis, and
// a Ctrl-C meanwhile leaves none of them behind. Standard output ("-") carries one report:
// the one asked for there, else the text.
class ReportOutputs {
 public:
  ReportOutputs(const std::string& json, const std::string& html);

  // Writes each report asked for; a report's text is made only where it is written.
  void write(const std::function<std::string()>& json, const std::function<std::string()>& html,
             const std::function<std::string()>& text, std::FILE* out);

 private:
  std::string json_;
  std::string html_;
  std::unique_ptr<kinetrace::detail::AtomicFile> jsonFile_;
  std::unique_ptr<kinetrace::detail::AtomicFile> htmlFile_;
};

}  // namespace kinetrace::cli
