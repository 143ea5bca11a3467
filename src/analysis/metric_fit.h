#pragma once

#include <cstddef>
#include <vector>

// Per-name GPU metrics for kernels shorter than a sample. A metric sample averages its whole
// window: a 1 ms sample over a stream of 10 us kernels of several names, and idle time, says
// little about any one kernel, and a kernel's overlap-weighted average of the samples it
// touched is mostly its neighbours' and the idle time's. But every sample is the sum of what
// ran in it, each name weighted by the share of the window it occupied:
//
//   sample value  =  sum over names n of  occupancy(n, window) * value(n)
//                  + idle share of the window * value(idle)
//
// With thousands of samples over the same few names in changing proportions, the names'
// values are the non-negative least-squares solution of that system (non-negative: no unit
// runs below zero). LinearFit accumulates it sample by sample in its normal form (AᵀA and
// Aᵀb: memory of columns², not of samples) and solves it with Lawson and Hanson's active-set
// method. How well it explains the samples (R²) and each value's standard error come with
// it: a name whose occupancy never varies apart from another's cannot be told from it, and
// says so instead of showing a number.

namespace kinetrace::detail {

class LinearFit {
 public:
  explicit LinearFit(std::size_t columns);

  // One sample: its value and each column's occupancy (the share of its window; a row of
  // `columns` numbers, mostly zero).
  void add(const std::vector<double>& occupancy, double value);

  struct Result {
    std::vector<double> values;         // per column, >= 0
    std::vector<double> standardError;  // per column; infinity where it cannot be told
    std::vector<double> support;        // per column: its occupancy summed over the samples
    // Per column: how much its occupancy varies apart from every other column's, the sum over
    // the samples of the squared part of it that they do not explain (1 / (AᵀA)⁻¹_jj). A name
    // alone in one whole sample adds 1; a name always beside the same others adds nearly 0,
    // however often it ran. Its value rests on this much data of its own. 0: none.
    std::vector<double> ownVariation;
    double r2 = 0;                      // of the samples' variance, what the fit explains
    bool varies = false;                // the samples' values are not all one (r2 means something)
    std::size_t samples = 0;
  };
  Result solve() const;

  std::size_t samples() const { return samples_; }

 private:
  std::size_t columns_;
  std::vector<double> gram_;    // AᵀA, columns_ x columns_, row-major
  std::vector<double> moment_;  // Aᵀb
  std::vector<double> support_;
  double sumSquares_ = 0;  // bᵀb
  double sum_ = 0;         // of b, for the total variance
  std::size_t samples_ = 0;
};

// min |Ax - b| over x >= 0, given G = AᵀA (n x n, row-major) and c = Aᵀb. Exposed for tests.
std::vector<double> nonNegativeLeastSquares(const std::vector<double>& gram,
                                            const std::vector<double>& moment, std::size_t n);

}  // namespace kinetrace::detail
