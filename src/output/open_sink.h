#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kinetrace/sink.h"
#include "support/path_rule.h"

namespace kinetrace::detail {

// openSink() under a path rule (support/path_rule.h): a bare path, "file://" or
// "perfetto://" is written where the rule allows. A rule with allowed directories takes only
// those: a sink registered for another scheme writes wherever its code chooses, so it is
// refused for a trace that must stay inside them.
std::unique_ptr<Sink> openSinkUnder(const std::string& url, const PathRule& rule);

// Whether openSink() knows the format of `url` from its name: a URL ("scheme://...") is its
// scheme's sink's to write; a bare path or "file://" URL must end in ".json", ".json.gz",
// ".pftrace" or ".perfetto-trace" (optionally ".gz"). Any other path would be written as
// JSON, which a command that chooses the format by the name should not do unasked.
bool namesTraceFormat(std::string_view url);

}  // namespace kinetrace::detail
