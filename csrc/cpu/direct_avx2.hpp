// SIMD kernels of the CPU `direct` method: AVX2/FMA (csrc/cpu/direct_avx2.cpp; call only when
// cpu_use_avx2()) and AVX-512 (direct_avx512.cpp; only when the CPU has AVX-512 and neither
// TENSORCONV_FORCE_AVX2 nor TENSORCONV_FORCE_PORTABLE is set). Valid correlation, groups of
// output rows shared out over threads (parallel.hpp).
#pragma once
#include <cstdint>

#include "parallel.hpp"

namespace tc {
// One thread below 2^23 multiply-adds (~0.15 ms on one core in fp32): on cores shared with other
// jobs a worker preempted mid-chunk stalls the caller for a time slice (ms), which a short call
// cannot earn back; above it two threads won in quiet and loaded runs alike (1024^2, k = 3:
// 0.78 ms against 0.92 for cv2.filter2D; one thread 0.63 against 0.57).
inline int direct_threads(std::int64_t orows, std::int64_t ocols, std::int64_t kh,
                          std::int64_t kw) {
  return orows * ocols * kh * kw < (std::int64_t{1} << 23) ? 1 : default_threads();
}
void correlate_valid_avx2(const float* in, std::int64_t in_stride, float* out,
                          std::int64_t out_stride, std::int64_t orows, std::int64_t ocols,
                          const float* k, std::int64_t kh, std::int64_t kw);
void correlate_valid_avx2(const double* in, std::int64_t in_stride, double* out,
                          std::int64_t out_stride, std::int64_t orows, std::int64_t ocols,
                          const double* k, std::int64_t kh, std::int64_t kw);
// T = float or double (instantiated in direct_avx512.cpp)
template <class T>
void correlate_valid_avx512(const T* in, std::int64_t in_stride, T* out, std::int64_t out_stride,
                            std::int64_t orows, std::int64_t ocols, const T* k, std::int64_t kh,
                            std::int64_t kw);
}  // namespace tc
