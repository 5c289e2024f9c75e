// "pairs" on AVX-512 (512-bit vectors, 64 outputs per block): pairs_impl.hpp with V512.
#include <cstdint>

#include "../cpu_features.hpp"
#include "simd_u8.hpp"
#if TC_X86
#include "avx512_common.hpp"
#include "pairs_impl.hpp"

namespace tc {
namespace u8 {

void build_pairs_avx512(Block& b, const std::int32_t* k) { build_pairs<V512>(b, k); }

}  // namespace u8
}  // namespace tc
TC_AVX512_END
#endif  // TC_X86
