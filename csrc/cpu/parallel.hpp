// A small work-sharing pool for the CPU methods (simd_u8, direct). Like OpenMP's dynamic
// schedule, but the caller never waits for a worker that has not started: on shared cores an
// OpenMP join waits for a descheduled thread (we measured 4-8 ms stalls per call on a 2-core VM
// shared with other jobs), while here a late worker simply finds no work left.
#pragma once
#include <cstdint>

namespace tc {

using ChunkBody = void (*)(void* ctx, std::int64_t begin, std::int64_t end);

// Calls body(ctx, b, e) over [0, n) in chunks of `chunk` on up to `threads` threads (the caller
// included; threads <= 0: all hardware threads, at most 64). Each thread starts on its own
// contiguous range of chunks (the same one every call: the caller the first), then takes chunks
// from the ends of the others' ranges. Returns when every chunk is done. After a call
// in which the caller waited for a descheduled worker longer than it worked itself, calls run
// on the calling thread alone for the next 200 ms.
void parallel_for(std::int64_t n, int threads, std::int64_t chunk, ChunkBody body, void* ctx);

// Convenience for lambdas: f(begin, end).
template <class F>
void parallel_chunks(std::int64_t n, int threads, std::int64_t chunk, F&& f) {
  parallel_for(
      n, threads, chunk,
      [](void* c, std::int64_t b, std::int64_t e) { (*static_cast<F*>(c))(b, e); },
      static_cast<void*>(&f));
}

int default_threads();  // hardware threads

}  // namespace tc
