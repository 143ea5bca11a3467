#include "error_text.h"

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

}  // namespace kinetrace::cli
