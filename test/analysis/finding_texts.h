#pragma once

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"

namespace kinetrace::testing {

// The findings' sentences, for tests that read what a user reads.
inline std::vector<std::string> findingTexts(const std::vector<detail::Finding>& findings) {
  std::vector<std::string> texts;
  for (const detail::Finding& finding : findings) texts.push_back(finding.text);
  return texts;
}

}  // namespace kinetrace::testing
