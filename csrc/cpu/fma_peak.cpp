// The FMA peak of this CPU, measured by a small loop (benchmarks/cpu_float.py prints it beside
// `direct`'s rate): independent FMA chains in registers, no memory traffic, on `threads` threads
// at once. The widest vectors the CPU has (AVX-512, else AVX2/FMA, else scalar); on CPUs that
// split 512-bit FMAs in two (Zen 4) both widths give the same peak.
#include <chrono>
#include <thread>
#include <vector>

#include "../core/types.hpp"
#include "cpu_features.hpp"
#include "fma_peak.hpp"
#if TC_X86
#include <immintrin.h>
#endif

namespace tc {
namespace {

// Independent chains >= FMA latency x pipes (4 x 2 on Zen 4 and recent Intel), within the
// register file: 16 of AVX-512's 32 registers, 12 of AVX2's 16 (with the two constants).
constexpr int kChains = 16, kChains256 = 12;

template <class T>
std::int64_t scalar_loop(std::int64_t iters, T* sink) {
  T a[kChains];
  for (int c = 0; c < kChains; ++c) a[c] = T(c) * T(1e-3);
  const T m = T(0.999999), s = T(1e-7);
  for (std::int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) a[c] = a[c] * m + s;
  T t = 0;
  for (int c = 0; c < kChains; ++c) t += a[c];
  *sink = t;
  return iters * kChains;  // lane-FMAs
}

#if TC_X86
template <class T>
__attribute__((target("avx2,fma,avx512f"))) std::int64_t avx512_loop(std::int64_t iters,
                                                                       T* sink) {
  constexpr bool f32 = sizeof(T) == 4;
  __m512 a[kChains];
  __m512d d[kChains];
  for (int c = 0; c < kChains; ++c) {
    a[c] = _mm512_set1_ps(float(c) * 1e-3f);
    d[c] = _mm512_set1_pd(double(c) * 1e-3);
  }
  const __m512 m = _mm512_set1_ps(0.999999f), s = _mm512_set1_ps(1e-7f);
  const __m512d md = _mm512_set1_pd(0.999999), sd = _mm512_set1_pd(1e-7);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) {
      if constexpr (f32)
        a[c] = _mm512_fmadd_ps(a[c], m, s);
      else
        d[c] = _mm512_fmadd_pd(d[c], md, sd);
    }
  }
  T t = 0;
  for (int c = 0; c < kChains; ++c)
    t += f32 ? T(_mm512_reduce_add_ps(a[c])) : T(_mm512_reduce_add_pd(d[c]));
  *sink = t;
  return iters * kChains * (64 / static_cast<std::int64_t>(sizeof(T)));
}

template <class T>
__attribute__((target("avx2,fma"))) std::int64_t avx2_loop(std::int64_t iters, T* sink) {
  constexpr bool f32 = sizeof(T) == 4;
  __m256 a[kChains256];
  __m256d d[kChains256];
  for (int c = 0; c < kChains256; ++c) {
    a[c] = _mm256_set1_ps(float(c) * 1e-3f);
    d[c] = _mm256_set1_pd(double(c) * 1e-3);
  }
  const __m256 m = _mm256_set1_ps(0.999999f), s = _mm256_set1_ps(1e-7f);
  const __m256d md = _mm256_set1_pd(0.999999), sd = _mm256_set1_pd(1e-7);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains256; ++c) {
      if constexpr (f32)
        a[c] = _mm256_fmadd_ps(a[c], m, s);
      else
        d[c] = _mm256_fmadd_pd(d[c], md, sd);
    }
  }
  alignas(32) T lanes[32 / sizeof(T)];
  T t = 0;
  for (int c = 0; c < kChains256; ++c) {
    if constexpr (f32)
      _mm256_store_ps(reinterpret_cast<float*>(lanes), a[c]);
    else
      _mm256_store_pd(reinterpret_cast<double*>(lanes), d[c]);
    for (T v : lanes) t += v;
  }
  *sink = t;
  return iters * kChains256 * (32 / static_cast<std::int64_t>(sizeof(T)));
}
#endif

template <class T>
std::int64_t loop(const std::string& isa, std::int64_t iters, T* sink) {
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
    fp64 ? loop<double>(isa, iters, &sink) : [&] {
      float s = 0;
      auto r = loop<float>(isa, iters, &s);
      sink += s;
      return r;
    }();
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
      if (fp64) {
        lanes[t] = loop<double>(isa, iters, &sinks[t]);
      } else {
        float s = 0;
        lanes[t] = loop<float>(isa, iters, &s);
        sinks[t] = s;
      }
    });
  for (auto& th : pool) th.join();
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  std::int64_t total = 0;
  for (auto l : lanes) total += l;
  return 2.0 * static_cast<double>(total) / dt / 1e9 + 0.0 * sink;
}

}  // namespace tc
