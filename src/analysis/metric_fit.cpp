#include "analysis/metric_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace kinetrace::detail {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Solves M z = r for the n x n matrix M (row-major, changed) by Gaussian elimination with
// partial pivoting; false when a pivot is below `tiny` (M singular for our purposes).
bool solveInPlace(std::vector<double>& m, std::vector<double>& r, std::size_t n, double tiny) {
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t row = col + 1; row < n; ++row) {
      if (std::abs(m[row * n + col]) > std::abs(m[pivot * n + col])) pivot = row;
    }
    if (std::abs(m[pivot * n + col]) <= tiny) return false;
    if (pivot != col) {
      for (std::size_t k = 0; k < n; ++k) std::swap(m[col * n + k], m[pivot * n + k]);
      std::swap(r[col], r[pivot]);
    }
    for (std::size_t row = col + 1; row < n; ++row) {
      const double factor = m[row * n + col] / m[col * n + col];
      if (factor == 0) continue;
      for (std::size_t k = col; k < n; ++k) m[row * n + k] -= factor * m[col * n + k];
      r[row] -= factor * r[col];
    }
  }
  for (std::size_t col = n; col-- > 0;) {
    double sum = r[col];
    for (std::size_t k = col + 1; k < n; ++k) sum -= m[col * n + k] * r[k];
    r[col] = sum / m[col * n + col];
  }
  return true;
}

// The unconstrained solution over the columns marked `passive` (zero elsewhere).
bool solvePassive(const std::vector<double>& gram, const std::vector<double>& moment, std::size_t n,
                  const std::vector<bool>& passive, double tiny, std::vector<double>& z) {
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) {
    if (passive[i]) index.push_back(i);
  }
  const std::size_t p = index.size();
  std::vector<double> m(p * p);
  std::vector<double> r(p);
  for (std::size_t a = 0; a < p; ++a) {
    r[a] = moment[index[a]];
    for (std::size_t b = 0; b < p; ++b) m[a * p + b] = gram[index[a] * n + index[b]];
  }
  if (!solveInPlace(m, r, p, tiny)) return false;
  std::fill(z.begin(), z.end(), 0.0);
  for (std::size_t a = 0; a < p; ++a) z[index[a]] = r[a];
  return true;
}

double largestDiagonal(const std::vector<double>& gram, std::size_t n) {
  double largest = 0;
  for (std::size_t i = 0; i < n; ++i) largest = std::max(largest, gram[i * n + i]);
  return largest;
}

}  // namespace

std::vector<double> nonNegativeLeastSquares(const std::vector<double>& gram,
                                            const std::vector<double>& moment, std::size_t n) {
  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  std::vector<bool> blocked(n, false);  // dependent on the passive columns: never added
  const double scale = std::max(largestDiagonal(gram, n), 1e-300);
  const double tiny = 1e-12 * scale;
  double largestMoment = 0;
  for (double c : moment) largestMoment = std::max(largestMoment, std::abs(c));
  const double tolerance = 1e-12 * std::max(largestMoment, 1e-300);
  std::vector<double> z(n);
  std::vector<double> gradient(n);
  // Each round adds one column; columns leave only as the solution moves: a few rounds per
  // column bound it.
  for (std::size_t round = 0; round < 3 * n + 3; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      double gx = 0;
      for (std::size_t k = 0; k < n; ++k) gx += gram[i * n + k] * x[k];
      gradient[i] = moment[i] - gx;
    }
    std::size_t best = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (passive[i] || blocked[i] || gradient[i] <= tolerance) continue;
      if (best == n || gradient[i] > gradient[best]) best = i;
    }
    if (best == n) break;
    passive[best] = true;
    for (std::size_t inner = 0; inner < 3 * n + 3; ++inner) {
      if (!solvePassive(gram, moment, n, passive, tiny, z)) {
        passive[best] = false;
        blocked[best] = true;
        break;
      }
      bool allPositive = true;
      for (std::size_t i = 0; i < n; ++i) {
        if (passive[i] && z[i] <= 0) allPositive = false;
      }
      if (allPositive) {
        x = z;
        break;
      }
      // Step from x towards z as far as keeps every passive value non-negative; the ones
      // that reach zero leave the passive set.
      double alpha = 1;
      for (std::size_t i = 0; i < n; ++i) {
        if (passive[i] && z[i] <= 0) alpha = std::min(alpha, x[i] / (x[i] - z[i]));
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (!passive[i]) continue;
        x[i] += alpha * (z[i] - x[i]);
        if (x[i] <= 1e-15 * scale) {
          x[i] = 0;
          passive[i] = false;
        }
      }
    }
  }
  return x;
}

LinearFit::LinearFit(std::size_t columns)
    : columns_(columns),
      gram_(columns * columns, 0.0),
      moment_(columns, 0.0),
      support_(columns, 0.0) {}

void LinearFit::add(const std::vector<double>& occupancy, double value) {
  for (std::size_t i = 0; i < columns_; ++i) {
    const double a = occupancy[i];
    if (a == 0) continue;
    support_[i] += a;
    moment_[i] += a * value;
    for (std::size_t k = 0; k < columns_; ++k) gram_[i * columns_ + k] += a * occupancy[k];
  }
  sumSquares_ += value * value;
  sum_ += value;
  ++samples_;
}

LinearFit::Result LinearFit::solve() const {
  const std::size_t n = columns_;
  Result out;
  out.samples = samples_;
  out.support = support_;
  out.values = nonNegativeLeastSquares(gram_, moment_, n);
  // What is left unexplained: bᵀb - 2xᵀAᵀb + xᵀAᵀAx.
  double residual = sumSquares_;
  for (std::size_t i = 0; i < n; ++i) {
    residual -= 2 * out.values[i] * moment_[i];
    for (std::size_t k = 0; k < n; ++k) {
      residual += out.values[i] * gram_[i * n + k] * out.values[k];
    }
  }
  residual = std::max(residual, 0.0);
  const double count = static_cast<double>(samples_);
  const double total = samples_ > 0 ? sumSquares_ - sum_ * sum_ / count : 0;
  out.varies = total > 1e-12 * std::max(sumSquares_, 1e-300);
  out.r2 = out.varies ? std::max(0.0, 1 - residual / total) : (residual <= 1e-9 ? 1.0 : 0.0);

  // Standard errors from the unconstrained covariance over the columns with support:
  // sigma² (AᵀA)⁻¹, each column's inverse diagonal found by solving for its unit vector. A
  // column that depends on the others (its occupancy never varies apart from theirs) has
  // none: its variance inflation, (AᵀA)⁻¹_jj (AᵀA)_jj, is past any use.
  constexpr double kMostInflation = 1e4;
  out.standardError.assign(n, kInfinity);
  out.ownVariation.assign(n, 0.0);
  std::vector<std::size_t> supported;
  for (std::size_t i = 0; i < n; ++i) {
    if (support_[i] > 0) supported.push_back(i);
  }
  const std::size_t p = supported.size();
  if (p == 0 || samples_ <= p) return out;
  const double sigma2 = residual / (count - static_cast<double>(p));
  const double tiny = 1e-14 * std::max(largestDiagonal(gram_, n), 1e-300);
  for (std::size_t a = 0; a < p; ++a) {
    std::vector<double> m(p * p);
    for (std::size_t r = 0; r < p; ++r) {
      for (std::size_t c = 0; c < p; ++c) m[r * p + c] = gram_[supported[r] * n + supported[c]];
    }
    std::vector<double> unit(p, 0.0);
    unit[a] = 1;
    if (!solveInPlace(m, unit, p, tiny)) continue;  // dependent columns: none told apart
    const double inverseDiagonal = unit[a];
    const std::size_t column = supported[a];
    if (inverseDiagonal > 0) out.ownVariation[column] = 1 / inverseDiagonal;
    const double inflation = inverseDiagonal * gram_[column * n + column];
    if (!(inverseDiagonal > 0) || inflation > kMostInflation) continue;
    out.standardError[column] = std::sqrt(sigma2 * inverseDiagonal);
  }
  return out;
}

}  // namespace kinetrace::detail
