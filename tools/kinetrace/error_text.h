#pragma once

#include <string>
#include <string_view>

namespace kinetrace::cli {

// The project's rule for error text: a message inside kinetrace::Error carries no
// "kinetrace" prefix; the code that prints it adds exactly one ("kinetrace: ",
// "kinetrace run: "). Library messages written before that rule start with "kinetrace: " or
// "kinetrace config: "; this removes such leading prefixes, so the command's own prefix is
// the only one whichever way the library spells its messages.
//
//   withoutKinetracePrefix("kinetrace: cannot write trace to t.json: File too large")
//     == "cannot write trace to t.json: File too large"
std::string withoutKinetracePrefix(std::string_view message);

// The line the command prints for an error: the message with exactly one prefix. A message
// that names its command ("kinetrace convert: OUT and IN are the same file") keeps that
// prefix alone; any other gets "kinetrace: ". Never "kinetrace: kinetrace convert: ...".
std::string errorLine(std::string_view message);

}  // namespace kinetrace::cli
