#include "output/sink_losses.h"

namespace kinetrace::detail {

ReportsLosses::~ReportsLosses() = default;

SinkLosses lossesOf(const Sink& sink) {
  if (const auto* reporting = dynamic_cast<const ReportsLosses*>(&sink)) return reporting->losses();
  return {};
}

}  // namespace kinetrace::detail
