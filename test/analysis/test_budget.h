#pragma once

// The read budget of a test: one per cap, living as long as the test program, since what a
// test reads (a collected trace, a report) may keep drawing from it after the reader is
// gone. Each test gives back all it took when what it made goes.

#include <cstddef>
#include <map>
#include <memory>

#include "analysis/read_budget.h"

namespace kinetrace::detail {

inline ReadBudget& budgetOf(std::size_t capBytes = kDefaultReadBudgetBytes) {
  static std::map<std::size_t, std::unique_ptr<ReadBudget>> budgets;
  std::unique_ptr<ReadBudget>& budget = budgets[capBytes];
  if (!budget) budget = std::make_unique<ReadBudget>(capBytes);
  return *budget;
}

}  // namespace kinetrace::detail
