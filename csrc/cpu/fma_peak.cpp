// The FMA peak of this CPU, measured by a small loop (tensorconv-bench --preset cpu-float prints it beside
// `direct`'s rate): independent FMA chains in registers, no memory traffic, on `threads` threads
// at once. The widest vectors the CPU has (AVX-512, else AVX2/FMA, else scalar); on CPUs that
// split 512-bit FMAs in two (Zen 4) both widths give the same peak.
#include <chrono>
#include <thread>
#include <vector>

#include "../core/types.hpp"
#include "cpu_features.hpp"
#include "fma_peak.hpp"

namespace tc {
namespace {

// GCC/Clang vector types: a * m + s contracts to one FMA per vector in the callers' targets.
typedef float f32x16 __attribute__((vector_size(64)));
typedef double f64x8 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef double f64x4 __attribute__((vector_size(32)));

// Chains independent FMA chains (>= latency x pipes: 4 x 2 on Zen 4 and recent Intel, within
// the register file) of vector type V over `iters` steps; returns lane-FMAs done.
template <class V, class T, int Chains>
inline __attribute__((always_inline)) std::int64_t chains(std::int64_t iters, double* sink) {
  constexpr int lanes = sizeof(V) / sizeof(T);
  V a[Chains];
  for (int c = 0; c < Chains; ++c)
    for (int l = 0; l < lanes; ++l) a[c][l] = T(c + l) * T(1e-3);
  const T m = T(0.999999), s = T(1e-7);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < Chains; ++c) a[c] = a[c] * m + s;
  }
  double t = 0;
  for (int c = 0; c < Chains; ++c)
    for (int l = 0; l < lanes; ++l) t += a[c][l];
  *sink = t;
  return iters * Chains * lanes;
}

template <class T>
std::int64_t scalar_loop(std::int64_t iters, double* sink) {  // CPUs without AVX2
  T a[8];
  for (int c = 0; c < 8; ++c) a[c] = T(c) * T(1e-3);
  for (std::int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < 8; ++c) a[c] = a[c] * T(0.999999) + T(1e-7);
  *sink = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
  return iters * 8;
}

#if TC_X86
// 16 chains of AVX-512's 32 registers; 12 of AVX2's 16 (two more hold the constants)
template <class T>
__attribute__((target("avx2,fma,avx512f"))) std::int64_t avx512_loop(std::int64_t iters,
                                                                       double* sink) {
  if constexpr (sizeof(T) == 4) return chains<f32x16, float, 16>(iters, sink);
  return chains<f64x8, double, 16>(iters, sink);
}
template <class T>
__attribute__((target("avx2,fma"))) std::int64_t avx2_loop(std::int64_t iters, double* sink) {
  if constexpr (sizeof(T) == 4) return chains<f32x8, float, 12>(iters, sink);
  return chains<f64x4, double, 12>(iters, sink);
}
#endif

template <class T>
std::int64_t loop(const std::string& isa, std::int64_t iters, double* sink) {
#if TC_X86
  if (isa == "avx512") return avx512_loop<T>(iters, sink);
  if (isa == "avx2") return avx2_loop<T>(iters, sink);
#endif
  return scalar_loop<T>(iters, sink);
}

}  // namespace

std::string fma_peak_isa() {
  if (cpu_has_avx512bw()) return "avx512";
  if (cpu_has_avx2_fma()) return "avx2";
  return "scalar";
}

double fma_peak_gflops(bool fp64, int threads, double seconds, const std::string& isa_in) {
  const std::string isa = isa_in.empty() ? fma_peak_isa() : isa_in;
  if ((isa == "avx512" && !cpu_has_avx512bw()) || (isa == "avx2" && !cpu_has_avx2_fma()) ||
      (isa != "avx512" && isa != "avx2" && isa != "scalar"))
    throw ValueError("fma_peak: ISA '" + isa + "' is not available on this CPU");
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  // size the loop from a short single-thread trial so one run takes about `seconds`
  using Clock = std::chrono::steady_clock;
  double sink = 0;
  std::int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = Clock::now();
    fp64 ? loop<double>(isa, iters, &sink) : loop<float>(isa, iters, &sink);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt > 0.02) {
      iters = static_cast<std::int64_t>(iters * seconds / dt) + 1;
      break;
    }
    iters *= 4;
  }
  std::vector<std::thread> pool;
  std::vector<std::int64_t> lanes(threads, 0);
  std::vector<double> sinks(threads, 0);
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      lanes[t] = fp64 ? loop<double>(isa, iters, &sinks[t]) : loop<float>(isa, iters, &sinks[t]);
    });
  for (auto& th : pool) th.join();
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  std::int64_t total = 0;
  for (auto l : lanes) total += l;
  return 2.0 * static_cast<double>(total) / dt / 1e9 + 0.0 * sink;
}

}  // namespace tc
