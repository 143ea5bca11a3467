#pragma once

#include <memory>
#include <string>

#include "kinetrace/sink.h"
#include "support/path_rule.h"

namespace kinetrace::detail {

// openSink() under a path rule (support/path_rule.h): a bare path, "file://" or
// "perfetto://" is written where the rule allows. A rule with allowed directories takes only
// those: a sink registered for another scheme writes wherever its code chooses, so it is
// refused for a trace that must stay inside them.
std::unique_ptr<Sink> openSinkUnder(const std::string& url, const PathRule& rule);

}  // namespace kinetrace::detail
