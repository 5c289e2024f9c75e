// SIMD kernels of the CPU `direct` method: AVX2/FMA (csrc/cpu/direct_avx2.cpp; call only when
// cpu_use_avx2()) and AVX-512 (direct_avx512.cpp; only when the CPU has AVX-512 and neither
// TENSORCONV_FORCE_AVX2 nor TENSORCONV_FORCE_PORTABLE is set). Valid correlation, groups of
// output rows shared out over threads (parallel.hpp).
#pragma once
#include <cstdint>

#include "parallel.hpp"

namespace tc {
// Below ~2^22 multiply-adds (~100 us on one core) a second thread costs more than it saves on
// cores shared with other jobs: a worker preempted mid-chunk stalls the caller for milliseconds.
inline int direct_threads(std::int64_t orows, std::int64_t ocols, std::int64_t kh,
                          std::int64_t kw) {
  return orows * ocols * kh * kw < (std::int64_t{1} << 22) ? 1 : default_threads();
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
