// simd_u8 driver (portable C++): the row/column walk that handles borders without padding the
// image (section 3.7): rows outside the image are row pointers (reflected, replicated or a shared
// zero row), and the few blocks that touch the left/right border or the row's end run the same
// vector routine on short per-row strips (built once per input row and reused by the kh output
// rows that read it) instead of a scalar remainder loop; the portable block; threads.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "../../core/factories.hpp"
#include "../../core/types.hpp"
#include "../cpu_features.hpp"
#include "../parallel.hpp"
#include "simd_u8.hpp"

namespace tc {
namespace u8 {

namespace {

// ---------------------------------------------------------------- portable block

void portable_block(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                    std::int64_t off) {
  constexpr int B = 32;
  std::int32_t acc[B] = {};
  for (int u = 0; u < bk.kh; ++u)
    for (int v = 0; v < bk.kw; ++v) {
      const std::int32_t c = bk.k32[u * bk.kw + v];
      if (c == 0) continue;
      const std::uint8_t* r = rows[u] + off + v;
      for (int b = 0; b < B; ++b) acc[b] += c * r[b];
    }
  for (int b = 0; b < B; ++b) outs[0][off + b] = clip_div(acc[b], bk.divisor);
}

void portable_blocks(const Block& bk, const std::uint8_t* const* rows, std::uint8_t* const* outs,
                     std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) portable_block(bk, rows, outs, i * bk.outputs);
}

// ---------------------------------------------------------------- driver

// Index of the pixel that position x (possibly outside [0, n)) reads; -1: the constant 0.
inline std::int64_t map_index(std::int64_t x, std::int64_t n, Border border) {
  if (x >= 0 && x < n) return x;
  if (border == Border::constant) return -1;
  if (border == Border::replicate) return x < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  if (x < 0 && -x < n) return -x;  // one reflection: no division (every row's border columns)
  if (x >= n && x < 2 * n - 1) return 2 * (n - 1) - x;
  const std::int64_t period = 2 * (n - 1);
  x %= period;
  if (x < 0) x += period;
  return x < n ? x : period - x;
}

constexpr int kMaxRows = kMaxK + 2;       // kernel rows + register-blocking rows - 1
constexpr double kParallelMinWork = 2e6;  // pixels x taps below which one thread is faster
constexpr double kBinomial3ParallelMin = 2.5e6;  // pixels, for the fused 3x3 binomial pass

struct Image {
  const std::uint8_t* in;
  std::int64_t h, w, in_stride;
  std::uint8_t* out;
  std::int64_t out_stride;
  Border border;
  int ay, ax;
  const std::uint8_t* zero;  // a zero row of w + 64 bytes, for the constant border
};

void row_pointers(const Image& im, std::int64_t first, std::int64_t n, const std::uint8_t** rows) {
  for (std::int64_t u = 0; u < n; ++u) {
    const std::int64_t y = map_index(first + u, im.h, im.border);
    rows[u] = y < 0 ? im.zero : im.in + y * im.in_stride;
  }
}

// Where the blocks of every output row go (the same for all rows of one call): blocks at 0, B,
// 2B, ... (the last one moved back to end at w), left to right so each block's garbage tail is
// overwritten by the next. Blocks starting in [jmin, jmax] read only image pixels and the
// interior run of them goes in one call; the few edge blocks read per-row strips in which the
// columns outside the image are mapped by the border rule.
struct RowPlan {
  std::int64_t run_j = 0, run_n = 0;  // interior run: run_n blocks from run_j
  struct Edge {
    std::int64_t jj;
    bool strip;      // reads a strip (else straight from the image)
    int lo, hi;      // strip bytes [lo, hi) are image columns jj - ax + [lo, hi)
    int src_offset;  // into src: mapped columns of the strip bytes outside [lo, hi)
  };
  std::vector<Edge> left, right;
  std::vector<std::int64_t> src;
  int nstrips = 0;
};

RowPlan plan_rows(const Block& bk, const Image& im) {
  RowPlan p;
  const std::int64_t w = im.w, B = bk.outputs;
  const std::int64_t jmin = im.ax;
  const std::int64_t jmax =
      std::min<std::int64_t>(w - B - (bk.kw - 1 - im.ax), w + im.ax - bk.reads);
  auto edge = [&](std::int64_t jj) {
    RowPlan::Edge e{jj, !(jj >= jmin && jj <= jmax), 0, 0, 0};
    if (e.strip) {
      const std::int64_t x0 = jj - im.ax;
      e.lo = static_cast<int>(std::clamp<std::int64_t>(-x0, 0, bk.reads));
      e.hi = static_cast<int>(std::clamp<std::int64_t>(w - x0, e.lo, bk.reads));
      e.src_offset = static_cast<int>(p.src.size());
      for (int s = 0; s < bk.reads; ++s)
        p.src.push_back(s >= e.lo && s < e.hi ? 0 : map_index(x0 + s, w, im.border));
      ++p.nstrips;
    }
    return e;
  };
  std::int64_t j = 0;
  for (; j < w && j < jmin; j += B) p.left.push_back(edge(j + B <= w ? j : std::max<std::int64_t>(0, w - B)));
  std::int64_t n = 0;
  while (j + n * B <= jmax && j + n * B + B <= w && j + n * B + bk.writes <= w) ++n;
  p.run_j = j;
  p.run_n = n;
  for (j += n * B; j < w; j += B) p.right.push_back(edge(j + B <= w ? j : std::max<std::int64_t>(0, w - B)));
  return p;
}

// Per chunk of rows: the edge strips of the last `ring` input rows, each built once and reused
// by the kh output rows that read it (slot y mod ring holds input row slot_y).
struct StripCache {
  int ring = 0, reads = 0, nstrips = 0;
  std::int64_t slot_y[kMaxRows];
  std::uint8_t* bytes;  // ring x nstrips x reads
  std::uint8_t* at(int slot, int e) { return bytes + (static_cast<std::int64_t>(slot) * nstrips + e) * reads; }
};

// R output rows from i0 with `fn`.
void run_rows(const Block& bk, BlockFn fn, int R, const Image& im, std::int64_t i0,
              const RowPlan& plan, StripCache& cache) {
  const int nrows = bk.kh + R - 1, B = bk.outputs;
  const std::uint8_t* rows[kMaxRows];
  const std::uint8_t* ptrs[kMaxRows];
  int slot[kMaxRows];
  alignas(32) std::uint8_t tmp[3][64];
  std::uint8_t* outs[3];
  const std::int64_t y0 = i0 - im.ay;
  row_pointers(im, y0, nrows, rows);
  const std::int64_t w = im.w;
  if (plan.nstrips > 0) {
    for (int u = 0; u < nrows; ++u) {
      const std::int64_t y = y0 + u;
      slot[u] = static_cast<int>(((y % cache.ring) + cache.ring) % cache.ring);
      if (cache.slot_y[slot[u]] == y) continue;
      cache.slot_y[slot[u]] = y;
      int e = 0;
      for (const auto* side : {&plan.left, &plan.right})
        for (const RowPlan::Edge& ed : *side) {
          if (!ed.strip) continue;
          std::uint8_t* st = cache.at(slot[u], e++);
          const std::int64_t* src = plan.src.data() + ed.src_offset;
          if (ed.hi > ed.lo)
            std::memcpy(st + ed.lo, rows[u] + (ed.jj - im.ax) + ed.lo,
                        static_cast<std::size_t>(ed.hi - ed.lo));
          for (int s = 0; s < ed.lo; ++s) st[s] = src[s] < 0 ? 0 : rows[u][src[s]];
          for (int s = ed.hi; s < bk.reads; ++s) st[s] = src[s] < 0 ? 0 : rows[u][src[s]];
        }
    }
  }
  // One edge block: written in place when its garbage tail stays inside the row, else through
  // tmp.
  int e = 0;
  auto one = [&](const RowPlan::Edge& ed) {
    const std::int64_t jj = ed.jj;
    if (ed.strip) {
      for (int u = 0; u < nrows; ++u) ptrs[u] = cache.at(slot[u], e);
      ++e;
    } else {
      for (int u = 0; u < nrows; ++u) ptrs[u] = rows[u] + (jj - im.ax);
    }
    const bool direct = jj + bk.writes <= w;
    for (int r = 0; r < R; ++r) outs[r] = direct ? im.out + (i0 + r) * im.out_stride + jj : tmp[r];
    fn(bk, ptrs, outs, 1);
    if (!direct) {
      const std::int64_t n = std::min<std::int64_t>(B, w - jj);
      for (int r = 0; r < R; ++r) std::memcpy(im.out + (i0 + r) * im.out_stride + jj, tmp[r], n);
    }
  };
  for (const auto& ed : plan.left) one(ed);
  if (plan.run_n > 0) {
    for (int u = 0; u < nrows; ++u) ptrs[u] = rows[u] + (plan.run_j - im.ax);
    for (int r = 0; r < R; ++r) outs[r] = im.out + (i0 + r) * im.out_stride + plan.run_j;
    fn(bk, ptrs, outs, plan.run_n);
  }
  for (const auto& ed : plan.right) one(ed);
}

int thread_count(int threads) { return threads > 0 ? threads : default_threads(); }

// Rows are handed out in chunks (~8 per thread) rather than one slice per thread: on a shared
// machine a briefly descheduled core then delays one chunk, not half the image.
std::int64_t chunk_of(std::int64_t n, int nthreads) {
  return std::max<std::int64_t>(1, n / (8 * std::max(1, nthreads)));
}

void run_blocks(const Block& bk, const Image& im, int threads) {
  const int R = bk.rows_out;
  const std::int64_t nblk = (im.h + R - 1) / R;
  const int nt = thread_count(threads);
  const std::int64_t chunk = chunk_of(nblk, nt);
  const RowPlan plan = plan_rows(bk, im);
  // Strip caches, one per chunk, allocated here so a failure raises MemoryError in the caller.
  const int ring = bk.kh + R - 1;
  const std::int64_t per_chunk = static_cast<std::int64_t>(ring) * plan.nstrips * bk.reads;
  std::vector<std::uint8_t> strips(static_cast<std::size_t>(((nblk + chunk - 1) / chunk) * per_chunk));
  parallel_chunks(nblk, nt, chunk, [&](std::int64_t b, std::int64_t e) {
    StripCache cache;
    cache.ring = ring;
    cache.reads = bk.reads;
    cache.nstrips = plan.nstrips;
    cache.bytes = strips.data() + (b / chunk) * per_chunk;
    std::fill(cache.slot_y, cache.slot_y + kMaxRows, std::numeric_limits<std::int64_t>::min());
    for (std::int64_t ib = b; ib < e; ++ib) {
      const std::int64_t i0 = ib * R;
      if (i0 + R <= im.h) {
        run_rows(bk, bk.fn, R, im, i0, plan, cache);
      } else {
        for (std::int64_t i = i0; i < im.h; ++i) run_rows(bk, bk.fn1, 1, im, i, plan, cache);
      }
    }
  });
}

}  // namespace

std::int64_t binomial3_band(std::int64_t stride) {
  bool seen[64] = {};
  int sets = 0;
  for (std::int64_t y = 0; y < 64; ++y) {
    const auto set = static_cast<std::size_t>(((y * stride) >> 6) & 63);
    sets += !seen[set];
    seen[set] = true;
  }
  return std::min<std::int64_t>(64, std::max(4, 4 * sets));
}

namespace {

void run_separable(const Separable& s, const Image& im, int threads) {
  const std::int64_t w = im.w, tlen = sep_temp_len(w, s.kw);
  const int nt = thread_count(threads);
  const std::int64_t chunk = chunk_of(im.h, nt);
  // Input row pointers, border rows mapped: output row i reads rows[i .. i + kh).
  std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(im.h + s.kh - 1));
  row_pointers(im, -im.ay, static_cast<int>(rows.size()), rows.data());
  std::int64_t border_src[kMaxK], border_dst[kMaxK];  // the same for every row
  for (int c = 0; c < s.kw - 1; ++c) {
    const std::int64_t x = c < im.ax ? c - im.ax : w + (c - im.ax);
    border_src[c] = map_index(x, w, im.border);
    border_dst[c] = im.ax + x;
  }
  if (s.binomial3_scale && im.ay == 1 && im.ax == 1 && w >= kBinomial3MinW) {
    const int phase = static_cast<int>(-reinterpret_cast<std::uintptr_t>(im.out) & 63);
    const Binomial3 g{rows.data(), w,     border_src[0],     border_src[1],
                      im.out,      im.out_stride, s.binomial3_scale, phase,
                      binomial3_band(im.in_stride)};
    // The fused pass takes ~0.03 ns per pixel on one core, so below kBinomial3ParallelMin
    // pixels the whole job is about as long as a worker's wake-up (20-40 us on an idle vCPU;
    // on this VM most wakes even land on the caller's vCPU): one thread was faster from
    // 1280x720 to 1920x1080 in cpu_u8.py (4 alternating runs), two from 2048x1536 on.
    const double px = static_cast<double>(im.h) * static_cast<double>(w);
    const int nt3 = px < kBinomial3ParallelMin ? 1 : nt;
    parallel_chunks(im.h, nt3, chunk_of(im.h, nt3),
                    [&](std::int64_t b, std::int64_t e) { binomial3_rows_avx512(g, b, e); });
    return;
  }
  // Algorithm 7's temporary row, one per chunk, allocated here so a failure raises MemoryError
  // in the caller rather than terminating a worker thread.
  const std::int64_t nchunks = (im.h + chunk - 1) / chunk;
  std::vector<std::int16_t, Aligned64<std::int16_t>> temps(
      static_cast<std::size_t>(nchunks * tlen), 0);
  // Rows narrower than one AVX-512 vector would run the plane passes' scalar remainder: the
  // AVX2 passes (same arithmetic, half the width) cover 32 .. 63 columns with vectors.
  const SepRowsFn run = s.run == &sep_rows_avx512 && w < 64 ? &sep_rows_avx2 : s.run;
  parallel_chunks(im.h, nt, chunk, [&](std::int64_t b, std::int64_t e) {
    const SepRows j{rows.data(), w,          temps.data() + (b / chunk) * tlen, im.ax,
                    border_src,  border_dst, im.out,                            im.out_stride};
    run(s, j, b, e);
  });
}

}  // namespace
void build_portable(Block& b, const std::int32_t* k) {
  b.k32.assign(k, k + b.kh * b.kw);
  b.outputs = 32;
  b.reads = 32 + b.kw - 1;
  b.writes = 32;
  b.fn = b.fn1 = &portable_blocks;
  b.rows_out = 1;
}


void filter2d(const std::uint8_t* in, std::int64_t h, std::int64_t w, std::int64_t in_stride,
              std::uint8_t* out, std::int64_t out_stride, const std::int32_t* k, int kh, int kw,
              std::int64_t divisor, Border border, int ay, int ax, const std::string& algorithm,
              int threads) {
  if (h < 1 || w < 1) throw ValueError("image is empty");
  if (ay < 0 || ay >= kh || ax < 0 || ax >= kw)
    throw ValueError("anchor must lie inside the kernel");
  const auto p = prepared(k, kh, kw, divisor, algorithm, isa_in_use());
  std::vector<std::uint8_t> zero(border == Border::constant ? static_cast<std::size_t>(w + 64) : 0,
                                 0);
  Image im{in, h, w, in_stride, out, out_stride, border, ay, ax, zero.data()};
  const bool sep = p->an.algo == Algo::sep;
  // Small images run on the calling thread: waking workers costs more than they save.
  const double work = static_cast<double>(h) * static_cast<double>(w) * (sep ? kh + kw : kh * kw);
  if (work < kParallelMinWork) threads = 1;
  if (sep)
    run_separable(p->sep, im, threads);
  else
    run_blocks(p->block, im, threads);
}

}  // namespace u8
}  // namespace tc
