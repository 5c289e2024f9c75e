// Measured FMA peak (csrc/cpu/fma_peak.cpp), for the benchmarks' "% of peak" figures.
#pragma once
#include <string>

namespace tc {
std::string fma_peak_isa();  // "avx512", "avx2" or "scalar": the widest this CPU has
// GFLOP/s (2 per lane-FMA) of `threads` threads (<= 0: all) running FMA chains for ~`seconds`;
// isa "" = fma_peak_isa().
double fma_peak_gflops(bool fp64, int threads, double seconds, const std::string& isa);
}  // namespace tc
