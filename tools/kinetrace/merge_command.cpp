#include "merge_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "analysis/read_budget.h"
#include "analysis/trace_merge.h"
#include "files.h"
#include "kinetrace/sink.h"
#include "left_out.h"
#include "output/atomic_file.h"
#include "output/sink_losses.h"
#include "output/sink_memory.h"
#include "progress.h"
#include "standard_output.h"
#include "support/text.h"

namespace kinetrace::cli {
namespace {

// "+1.234 ms", "-12 us", "0 ns"
std::string signedDuration(int64_t ns) {
  const char* sign = ns > 0 ? "+" : ns < 0 ? "-" : "";
  // Unsigned: the magnitude of INT64_MIN does not fit an int64_t.
  const uint64_t magnitude =
      ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (magnitude >= 1'000'000) return fmt::format("{}{:.3f} ms", sign, magnitude / 1e6);
  if (magnitude >= 1'000) return fmt::format("{}{:.1f} us", sign, magnitude / 1e3);
  return fmt::format("{}{} ns", sign, magnitude);
}

// "12.3 us", "1.234 ms"
std::string duration(int64_t ns) {
  const std::string text = signedDuration(ns);
  return text[0] == '+' ? text.substr(1) : text;
}

}  // namespace

int mergeCommand(const MergeOptions& options, std::FILE* out, std::FILE* messages) {
  // Ctrl-C, a hangup or a kill leaves no half-written OUT beside the real one.
  detail::removeTemporaryFilesOnSignals();
  // Opening the output first names an unwritable OUT before reading every input twice.
  refuseOutputOverInput(options.output, options.paths, "kinetrace merge");
  // Made before the sink, which draws from it and gives back what it took when it goes.
  detail::ReadBudget budget(options.memoryBytes);
  std::unique_ptr<Sink> sink = openTraceOutput(options.output);
  // Its report goes where messages go when the trace itself is on standard output.
  if (isStandardOutput(options.output)) out = messages;
  // Its growing state (a .pftrace's tracks, lanes, interned strings) within the same cap.
  detail::drawSinkMemoryFrom(*sink, budget.memory());
  detail::MergeOptions mergeOptions;
  mergeOptions.alignOnCollectives = options.align;

  ProgressLine scanning(messages, "finding ranks and collectives", !options.quiet,
                        options.progressFromBytes);
  const std::vector<detail::RankPlacement> plan = scanning.follow([&](auto onProgress) {
    return detail::planMerge(options.paths, mergeOptions, budget, onProgress);
  });

  ProgressLine writing(messages, "writing " + outputName(options.output), !options.quiet,
                       options.progressFromBytes);
  const detail::MergeReport report = writing.follow([&](auto onProgress) {
    return detail::writeMerged(plan, *sink, options.output, budget, onProgress);
  });
  const detail::SinkLosses losses = detail::lossesOf(*sink);
  sink.reset();
  if (!options.quiet) {
    // Every event of the inputs is either written or said below with why it was not.
    const uint64_t read = eventsRead(report.events, report.skipped);
    const uint64_t written = eventsWritten(report.events, losses);
    std::fprintf(
        out, "kinetrace: merged %zu traces into %s: wrote %s of %s events%s\n", plan.size(),
        outputName(options.output).c_str(), detail::withThousands(written).c_str(),
        detail::withThousands(read).c_str(),
        report.addedNames > 0
            ? fmt::format(" (and {} process names for the ranks)", report.addedNames).c_str()
            : "");
    for (const detail::RankPlacement& p : plan) {
      std::string line = fmt::format("  rank {} ({}): ", p.rank, p.path);
      if (p.collectivesMatched > 0) {
        line += fmt::format(
            "shifted {}, aligned on {} NCCL collectives, residual skew median {}, "
            "max {}",
            signedDuration(p.offsetNs), p.collectivesMatched, duration(p.residualMedianNs),
            duration(p.residualMaxNs));
      } else {
        line += p.note;
      }
      if (!p.rankFromTrace) line += " (no distributedInfo.rank: its place on the command line)";
      std::fprintf(out, "%s\n", line.c_str());
    }
  }
  // What was left out goes where errors go, as `convert` says it, --quiet or not.
  sayWhatWasLeftOut(messages, report.skipped, losses);
  return 0;
}

}  // namespace kinetrace::cli
