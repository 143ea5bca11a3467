#include "error_text.h"

#include "cli_options.h"

namespace kinetrace::cli {

std::string withoutKinetracePrefix(std::string_view message) {
  constexpr std::string_view kPrefixes[] = {"kinetrace: ", "kinetrace config: "};
  // A message wrapped twice ("kinetrace: kinetrace config: ...") loses both.
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (std::string_view prefix : kPrefixes) {
      if (message.substr(0, prefix.size()) == prefix) {
        message.remove_prefix(prefix.size());
        stripped = true;
      }
    }
  }
  return std::string(message);
}

std::string errorLine(std::string_view message) {
  const std::string text = withoutKinetracePrefix(message);
  for (const std::string& command : commandNames()) {
    const std::string own = "kinetrace " + command + ": ";
    if (text.compare(0, own.size(), own) == 0) return text;
  }
  return "kinetrace: " + text;
}

}  // namespace kinetrace::cli
