// Which kernel sizes naive_shmem's fixed-shape fp32 variant compiles (csrc/cuda/naive_fixed.*) and
// which of them run Winograd F(2, 3) down the columns. Here rather than in the CUDA header so the
// registry (built without CUDA too) states the same rule: Winograd pairs output rows 2i and 2i + 1
// of the plan's output, so its bits hold under translations by an even number of rows only.
#pragma once

namespace tc {

constexpr int kNaiveFixedMaxTaps = 17;  // beyond, fft (rows) is the faster fp32 method

// Odd square kernels of 9..17 taps whose rows split into groups of three: k = 9 and 15.
constexpr bool naive_fixed_winograd(int k) {
  return k % 2 == 1 && k >= 9 && k <= kNaiveFixedMaxTaps && k % 3 == 0;
}

}  // namespace tc
