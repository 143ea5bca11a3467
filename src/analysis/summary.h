#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/read_budget.h"
#include "model/trace_data.h"
#include "output/trace_summary.h"

// The offline side of a trace's summary (output/trace_summary.h): the summary of a trace
// read back whole, and its text for a terminal (`kinetrace summary`, `kinetrace run`).

namespace kinetrace::detail {

// A "<trace>.summary.json" read back. Throws kinetrace::Error for text that is not a summary
// (or nests deeper than a summary can); keys it does not know are ignored, missing ones keep
// their defaults.
Summary summaryFromJson(const std::string& json);

// A summary file read back, within the budget: only a regular file is read (a link, device
// or FIFO is refused by name: regular_file.h), its bytes and their parsing taken from the
// budget while they are held. Throws kinetrace::Error naming the file.
Summary readSummaryFile(const std::string& path, ReadBudget& budget);

// The summary of a trace held in memory.
Summary summarize(const TraceData& trace, std::size_t topKernels = 20);

// The summary for a terminal, at most `topKernels` kernels listed; lines end in '\n'.
//
//   trace  kinetrace-run1-node1-pid4242.json  (rank 0 of 2, python)
//   window 2.014 s   GPU busy 1.702 s (84.5%), kernels 1.650 s (81.9%) on 1 device
//   kernels 61,482 (total 1.688 s)
//      41.2%  0.695 s  x12000  ampere_sgemm_128x64_tn
//   ...
std::string formatSummary(const Summary& summary, std::size_t topKernels = 5);

// Helpers the summary uses, exposed for tests: "1.234 s", "12.3 ms", "850 us", "120 ns";
// "1.5 GB", "12.0 MB", "512 B"; names longer than `width` are cut with "...".
std::string formatDuration(int64_t ns);
std::string formatBytes(uint64_t bytes);
std::string shortenName(const std::string& name, std::size_t width);

}  // namespace kinetrace::detail
