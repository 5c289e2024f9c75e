// Non-x86 builds: the AVX2 and AVX-512 files compile to nothing, and these never-called definitions satisfy
// the linker (avx2_supported() is false there, so analyze() only picks the portable path).
#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if !TC_X86
namespace tc {
namespace u8 {
void build_alg1_avx2(Block&, const std::int32_t*, int) {}
void build_alg2_avx2(Block&, const std::int32_t*) {}
void build_alg3_avx2(Block&, const std::int32_t*) {}
void build_pairs_avx2(Block&, const std::int32_t*) {}
void build_pairs_avx512(Block&, const std::int32_t*) {}
void build_wide_avx2(Block&, const std::int32_t*) {}
void sep_rows_avx2(const Separable&, const SepRows&, std::int64_t, std::int64_t) {}
void sep_rows_avx512(const Separable&, const SepRows&, std::int64_t, std::int64_t) {}
void binomial3_rows_avx512(const Binomial3&, std::int64_t, std::int64_t) {}
}  // namespace u8
}  // namespace tc
#endif  // !TC_X86
