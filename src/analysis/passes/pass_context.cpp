#include "analysis/passes/pass_context.h"

#include <string_view>

namespace kinetrace::detail::passes {

std::string PassContext::keptName(uint32_t id) const {
  const std::string_view name = trace.name(id);
  reportHold->take(name.size() > 15 ? name.size() + 1 + kAllocationOverheadBytes : 0,
                   "the report's names");
  return std::string(name);
}

}  // namespace kinetrace::detail::passes
