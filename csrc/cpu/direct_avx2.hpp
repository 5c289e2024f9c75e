// AVX2/FMA kernels of the CPU `direct` method (csrc/cpu/direct_avx2.cpp); call only when
// cpu_use_avx2(). Valid correlation, output row pairs shared out over threads (parallel.hpp).
#pragma once
#include <cstdint>

namespace tc {
void correlate_valid_avx2(const float* in, std::int64_t in_stride, float* out,
                          std::int64_t out_stride, std::int64_t orows, std::int64_t ocols,
                          const float* k, std::int64_t kh, std::int64_t kw);
void correlate_valid_avx2(const double* in, std::int64_t in_stride, double* out,
                          std::int64_t out_stride, std::int64_t orows, std::int64_t ocols,
                          const double* k, std::int64_t kh, std::int64_t kw);
}  // namespace tc
