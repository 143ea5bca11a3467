#include "report_outputs.h"

#include "standard_output.h"

namespace kinetrace::cli {

ReportOutputs::ReportOutputs(const std::string& json, const std::string& html)
    : json_(json), html_(html) {
  kinetrace::detail::removeTemporaryFilesOnSignals();
  if (!json_.empty() && !isStandardOutput(json_)) {
    jsonFile_ = std::make_unique<kinetrace::detail::AtomicFile>(json_);
  }
  if (!html_.empty() && !isStandardOutput(html_)) {
    htmlFile_ = std::make_unique<kinetrace::detail::AtomicFile>(html_);
  }
}

void ReportOutputs::write(const std::function<std::string()>& json,
                          const std::function<std::string()>& html,
                          const std::function<std::string()>& text, std::FILE* out) {
  const auto complete = [](kinetrace::detail::AtomicFile& file, const std::string& report) {
    file.write(report.data(), report.size());
    file.commit();
  };
  if (jsonFile_) complete(*jsonFile_, json());
  if (htmlFile_) complete(*htmlFile_, html());
  if (isStandardOutput(json_)) {
    std::fputs(json().c_str(), out);
  } else if (isStandardOutput(html_)) {
    std::fputs(html().c_str(), out);
  } else {
    std::fputs(text().c_str(), out);
  }
}

}  // namespace kinetrace::cli
