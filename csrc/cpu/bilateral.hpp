// Bilateral filter plans (tensorconv.filters.bilateral), shared host-side set-up.
// out(p) = p + sum_q w(p, q) (I(q) - I(p)) / sum_q w(p, q), w = w_s(p - q) * w_r(I(q) - I(p)),
// over the (2r+1)^2 window, which is the textbook ratio sum w I(q) / sum w written so that a
// constant window returns I(p) exactly (every difference is 0) and the centre weight (1) keeps
// the denominator >= 1. Every implementation evaluates w as one exp2:
//   w = exp2(d * (d * cr) + ls[u][v]),  d = I(q) - I(p),  cr = -log2(e) / (2 sigma_r^2),
//   ls = log2(w_s) (the plan's kernel holds w_s).
// IEEE arithmetic gives the documented non-finite rule for free: a NaN or +-inf anywhere in the
// window makes the output NaN (NaN propagates; inf - inf at the centre is NaN; a finite centre
// gives an infinite neighbour w = 0 and 0 * inf = NaN).
#pragma once
#include <vector>

#include "../core/registry.hpp"

namespace tc {

struct BilateralSetup {
  int radius = 0;                // kernel is (2 radius + 1)^2
  std::vector<double> log2_ws;   // row-major, log2 of the spatial weights (-inf for 0)
  double cr = 0;                 // -log2(e) / (2 sigma_r^2), finite
};

// Validates the request (square odd kernel of finite weights >= 0 with a positive centre,
// finite range_sigma > 0); ValueError naming the problem otherwise.
BilateralSetup bilateral_setup(const PlanRequest& r);

}  // namespace tc
