// Page-locked host memory shared by every CUDA plan of the process (host_pipeline.cu): the
// pinned rings that stage host images, and NumPy results the card copies into directly.
// Blocks are kept when given back (pinning 64 MB costs ~5-30 ms, more than the round trip it
// serves) up to a cap (pinned_set_cap; Python sets it from TENSORCONV_PINNED_MB, default 2048
// MB; 0: results are never pinned).
#pragma once
#include <cstddef>

namespace tc {
namespace cuda {

// A block of at least `bytes`. For a result (`result`): nullptr when it would pass the cap or
// is larger than a quarter of it (the caller then uses pageable memory); staging rings always
// get one (OutOfMemory when the system has none).
void* pinned_take(std::size_t bytes, bool result);
void pinned_give(void* p) noexcept;              // back to the pool (not to the system)
bool pinned_owns(const void* p, std::size_t bytes);  // inside a block handed out?
std::size_t pinned_held_bytes();                 // free + handed out
void pinned_set_cap(std::size_t bytes);          // for results; staging rings ignore it

}  // namespace cuda
}  // namespace tc
