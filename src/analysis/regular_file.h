#pragma once

#include <string>
#include <string_view>

#include "analysis/read_budget.h"

// Reading a whole small file that someone else may have put where it is read from (a
// summary in a directory of traces, a configuration): only a regular file is read, and only
// as many bytes as the read budget gives. A symbolic link (it could name any file), a
// device such as /dev/zero (endless), a FIFO (it could block forever) or a directory is
// refused by name, without following or blocking on it.

namespace kinetrace::detail {

// The file's bytes, their room taken from the budget into `hold` (given back when the hold
// is reset or destroyed). Throws kinetrace::Error naming the file: it cannot be opened, is
// not a regular file, or is larger than the budget gives ("<path>: <what> would take more
// than ...").
//
//   BudgetHold hold(budget);
//   const std::string text = readRegularFile("run.summary.json", hold, "summary files");
std::string readRegularFile(const std::string& path, BudgetHold& hold, std::string_view what);

}  // namespace kinetrace::detail
