// "separable" (Podlozhnyuk 2007): a row pass then a column pass, each staging a tile with its apron
// in shared memory with coalesced loads. The kernel K (kh x kw) is written as a sum of r outer
// products a_i b_i^T: r = 1 for separable kernels (Gaussian, box, Sobel's factors), found by an
// SVD whose rank tolerance follows the precision; when the SVD finds full rank the plan uses the
// exact row decomposition K = sum_u e_u K[u,:] (r = min(kh, kw) passes), so any kernel is exact.
//
// Row pass: T[t, x] = sum_v b[v] in[t, x + v]; column pass: out[y, x] (+)= sum_u a[u] T[y + u, x].
// For kh, kw <= 64 and scalar precisions both run fused in one kernel with T in shared memory;
// fp16 (half2 lanes) and larger kernels use a row-pass kernel and a column-pass kernel. The fused
// passes run as banded products on the tensor cores (band_mma.cuh): both on tf32 MMAs for tf32
// from 13 taps, and for fp32 from 25 taps the column pass on fp64 MMAs (DMMA).
// T (and the running sum over the r terms) is held in the precision's compute type. T is a ring
// of rows processed in bands when it would pass 1 GiB (TENSORCONV_SEPARABLE_BAND_MB sets the
// size: bands small enough to keep T in L2 were measured slower on the H100, 2026-11-22).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

#include "../core/factories.hpp"
#include "async_copy.cuh"
#include "common.cuh"
#include "precision.cuh"
#include "sliding.cuh"
#include "band_mma.cuh"
#include "nonfinite.cuh"

namespace tc {
namespace cuda {
namespace {

constexpr int BX = 32, BY = 8, CT = 64;  // threads; taps per shared-memory chunk
constexpr int PITCH_T = BX + 1;          // transposed tiles: odd pitch, conflict-free both ways

template <Precision P>
constexpr int rows_per_thread() { return P == Precision::fp64 ? 8 : 16; }

// ---- row pass ------------------------------------------------------------------------------
// Lanes map to image rows (W rows per lane: t and t + BX), threadIdx.y to groups of R outputs
// along x. The tile is stored transposed (x down, rows across) so that the sliding window runs
// along x with conflict-free reads; results go back through shared memory for coalesced stores.
template <Precision P>
__global__ void __launch_bounds__(BX* BY)
    row_pass(const typename Prec<P>::Store* __restrict__ in, std::int64_t in_stride, int t0,
             int t1, int iw, typename Prec<P>::Elem* __restrict__ ring, int ring_rows, int ow,
             const typename Prec<P>::Vec* __restrict__ b, int kw) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OX = BY * R, W = T::W, TR = BX * W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sb = reinterpret_cast<Vec*>(smem_raw);
  Vec* tile = sb + CT;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int x0 = blockIdx.x * OX;
  for (int tb = t0 + blockIdx.y * TR; tb < t1; tb += gridDim.y * TR) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int v0 = 0; v0 < kw; v0 += CT) {
      const int cv = imin(CT, kw - v0), arows = OX + cv - 1;
      __syncthreads();
      // Division-free staging: lanes along x (coalesced reads; the odd pitch keeps the
      // transposed shared stores conflict-free), warps over the block's rows.
      for (int r_ = ty; r_ < BX; r_ += BY) {
        const int t = tb + r_;
        const typename T::Store* row0 = in + t * in_stride;
        const typename T::Store* row1 = in + (t + BX) * in_stride;
#pragma unroll 2
        for (int a = tx; a < arows; a += BX) {
          const int x = x0 + v0 + a;
          typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
          if (x < iw) {
            if (t < t1) e0 = T::load(row0[x]);
            if (W == 2 && t + BX < t1) e1 = T::load(row1[x]);
          }
          tile[a * PITCH_T + r_] = T::pack(e0, e1);
        }
      }
      for (int i = tid; i < cv; i += BX * BY) sb[i] = b[v0 + i];
      __syncthreads();
      slide_column<T, R>(acc, tile + ty * R * PITCH_T + tx, PITCH_T, cv,
                         [&](int v) { return sb[v]; });
    }
    __syncthreads();  // reuse the tile to transpose the results
#pragma unroll
    for (int r = 0; r < R; ++r) tile[(ty * R + r) * PITCH_T + tx] = acc[r];
    __syncthreads();
    for (int tl = ty; tl < TR; tl += BY) {
      const int t = tb + tl;
      if (t >= t1) break;
      typename T::Elem* dst = ring + static_cast<std::int64_t>(t % ring_rows) * ow;
      for (int xl = tx; xl < OX; xl += BX) {
        const int x = x0 + xl;
        if (x < ow) dst[x] = T::lane(tile[xl * PITCH_T + (tl % BX)], tl / BX);
      }
    }
  }
}

// One result of term q: added to the running sum of the earlier terms (unless FIRST), written
// in the storage type to `out` (LAST) or back to the running sum.
// A non-finite final result flags the plan's NonfiniteRepair (the r terms' zero factors meet
// inf: 0 x inf = NaN, and +inf / -inf terms cancel into NaN where scipy has inf).
template <Precision P, bool FIRST, bool LAST>
__device__ __forceinline__ void emit(typename Prec<P>::Elem v, typename Prec<P>::Elem* sum,
                                     typename Prec<P>::Store* out, int* nf) {
  if (!FIRST) v = Prec<P>::add_elem(v, *sum);
  if (LAST) {
    __stcs(out, Prec<P>::store(v));  // streamed: not read again here
    mark_nonfinite(nf, v);
  } else {
    *sum = v;
  }
}

// ---- column pass ---------------------------------------------------------------------------
// Lanes map to columns (W per lane: x and x + BX), threadIdx.y to groups of R output rows.
// FIRST: no running sum to add; LAST: write the storage type to `out`, else the running sum.
template <Precision P, bool FIRST, bool LAST>
__global__ void __launch_bounds__(BX* BY)
    column_pass(const typename Prec<P>::Elem* __restrict__ ring, int ring_rows, int ow, int y0,
                int y1, int t_end, typename Prec<P>::Elem* sum, std::int64_t sum_stride,
                typename Prec<P>::Store* out, std::int64_t out_stride,
                const typename Prec<P>::Vec* __restrict__ a, int kh, int* nf) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  constexpr int R = rows_per_thread<P>(), OH = BY * R, W = T::W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Vec* sa = reinterpret_cast<Vec*>(smem_raw);
  Vec* tile = sa + CT;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int xb = blockIdx.x * BX * W;
  for (int yb = y0 + blockIdx.y * OH; yb < y1; yb += gridDim.y * OH) {
    Vec acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T::zero();
    for (int u0 = 0; u0 < kh; u0 += CT) {
      const int cu = imin(CT, kh - u0), rows = OH + cu - 1;
      __syncthreads();
      for (int r_ = ty; r_ < rows; r_ += BY) {
        const int t = yb + u0 + r_, x = xb + tx;
        typename T::Elem e0 = T::zero_elem(), e1 = T::zero_elem();
        if (t < t_end) {
          const typename T::Elem* row = ring + static_cast<std::int64_t>(t % ring_rows) * ow;
          if (x < ow) e0 = T::round(row[x]);
          if (W == 2 && x + BX < ow) e1 = T::round(row[x + BX]);
        }
        tile[r_ * BX + tx] = T::pack(e0, e1);
      }
      for (int i = tid; i < cu; i += BX * BY) sa[i] = a[u0 + i];
      __syncthreads();
      slide_column<T, R>(acc, tile + ty * R * BX + tx, BX, cu, [&](int u) { return sa[u]; });
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int y = yb + ty * R + r;
      if (y >= y1) break;
#pragma unroll
      for (int l = 0; l < W; ++l) {
        const int x = xb + tx + l * BX;
        if (x >= ow) continue;
        emit<P, FIRST, LAST>(T::lane(acc[r], l), sum + y * sum_stride + x,
                             out + y * out_stride + x, nf);
      }
    }
  }
}

// ---- fused pass (scalar precisions, kh and kw <= 64) -----------------------------------------
// One block walks down a strip of FW = 64 columns over SEG output rows. Row-filtered rows T live
// only in shared memory (FOH + kh - 1 of them); each step filters FG new image rows, column-
// filters FOH output rows, and shifts the kh - 1 rows the next step still needs. Input is read
// once (plus the apron), output written once: no T round trip through HBM, no second launch.
// What makes it fast (ncu on the H100 guided each; the FMAs are ~55 % of the instructions):
//  - taps unrolled at compile time (NC chunks of 8): each coefficient is an operand from the
//    kernel's parameter bank, not a load; only the chunk that passes the kernel edge is guarded;
//  - FR = 16 outputs per thread, so a shared load feeds 16 FMAs (the row pass loads 16 bytes);
//  - image rows arrive by 16-byte cp.async while the block runs its column pass; rows are
//    row-major with a pitch of an odd number of 16-byte units, so the row pass's lanes (one image
//    row each) read 16 bytes per lane without bank conflicts. Unaligned inputs (row stride or
//    pointer not 16-byte aligned) are staged with plain loads instead.
constexpr int FW = 2 * BX, FR = 16, FG = 64, FOH = 4 * FR, FMAX = 64, FCH = 8;
static_assert(BX * BY == 256 && FG == 2 * BX && FOH == FG && BY == 8, "fused pass thread layout");
static_assert(FG == 4 * 16 && FW == 2 * 8 * kBandGroups && FOH == 2 * 8 * kBandGroups,
              "tensor-core passes: 8 warps = 4 x 16 lines x 2 x 32 outputs");

// The tensor-core forms of the passes (band_mma.cuh), per precision: Row / Col name the MMA of
// the row / column pass (void: FFMAs). tf32: both on tf32 MMAs (fused_pass). fp32: the column
// pass on fp64 MMAs beside an FFMA row pass, in the warp-specialized fused_ws_pass (sm_90), so
// that the FMA and tensor pipes work at once (fp64 MMAs in both passes, or both passes in the
// same warps, measured slower: benchmark notes).
template <Precision P>
struct FusedMma {
  using Row = void;
  using Col = void;
};
template <>
struct FusedMma<Precision::tf32> {
  using Row = BandTf32;
  using Col = BandTf32;
};
template <>
struct FusedMma<Precision::fp32> {
  using Row = void;
  using Col = BandF64;
};
template <class M>
constexpr bool kMma = !std::is_void<M>::value;
template <class M>
constexpr std::size_t bfrag_bytes() {
  if constexpr (kMma<M>) return sizeof(typename M::BFrag);
  else return 0;
}
// T row pitch: FW + 4 keeps the row pass's 16-byte stores conflict-free; the tensor-core column
// pass reads 4 rows x 8 columns per load, conflict-free when the pitch is 8 (mod 32) words.
template <bool TC>
constexpr int kPitchT = TC ? FW + 8 : FW + 4;

template <class S>
constexpr int kVec = 16 / static_cast<int>(sizeof(S));  // elements per 16-byte copy

// Band chunks of a tensor-core pass over `taps` taps (band_mma.cuh): ceil((taps + 7) / 8).
__host__ __device__ inline int band_chunks(int taps) { return (taps + 14) / 8; }

// Input tile pitch in elements: room for the window's last 16-byte load (and, with nd > 0, for
// the last chunk of a tensor-core row pass with nd band chunks), odd in 16-byte units
// (conflict-free 16-byte row reads; also conflict-free for the row pass's 8 x 4 fragment loads).
template <class S>
__host__ __device__ inline int fused_in_pitch(int kw, int nd) {
  int need = FW + kw - 1 + kVec<S>;
  if (nd > 0 && 8 * nd + 56 > need) need = 8 * nd + 56;
  const int units = (need + kVec<S> - 1) / kVec<S>;
  return (units | 1) * kVec<S>;
}

// T rows in shared memory: FOH + kh - 1, and up to the last chunk a tensor-core column pass with
// nd band chunks reads.
__host__ __device__ inline int fused_t_rows(int kh, int nd) {
  const int rows = FOH + kh - 1;
  return nd > 0 && 8 * nd + 56 > rows ? 8 * nd + 56 : rows;
}

template <class E>
struct FusedCoef {  // passed by value: lives in the kernel's constant parameter bank
  E a[FMAX];
  E b[FMAX];
};

// The fused kernels' other launch parameters (one term of the sum over r).
template <Precision P>
struct FusedArgs {
  const typename Prec<P>::Store* in;
  std::int64_t in_stride;
  int ih, iw, oh, ow, seg;  // seg: output rows per block
  typename Prec<P>::Elem* sum;  // running sum of the earlier terms
  std::int64_t sum_stride;
  typename Prec<P>::Store* out;
  std::int64_t out_stride;
  int kh, kw;
  bool first, last, async;  // first / last term; rows 16-byte aligned (cp.async staging)
  int* nf;                  // NonfiniteRepair's flag (emit marks non-finite final results)
};

// nd: band chunks of the tensor-core passes (RM / CM: row / column pass MMA, void for FFMAs).
template <Precision P, class RM, class CM>
std::size_t fused_smem(int kh, int kw, int nd) {
  using S = typename Prec<P>::Store;
  return FG * fused_in_pitch<S>(kw, kMma<RM> ? nd : 0) * sizeof(S) +
         fused_t_rows(kh, kMma<CM> ? nd : 0) * kPitchT<kMma<CM>> * sizeof(typename Prec<P>::Elem) +
         nd * 32 * (bfrag_bytes<RM>() + bfrag_bytes<CM>());
}

template <class E, int N>
struct Chunk {
  E v[N];
};

// The elements of one 16-byte shared-memory load, by value (no address taken: stays in registers).
__device__ __forceinline__ Chunk<float, 4> unpack16(uint4 r, float) {
  return {{__uint_as_float(r.x), __uint_as_float(r.y), __uint_as_float(r.z), __uint_as_float(r.w)}};
}
__device__ __forceinline__ Chunk<double, 2> unpack16(uint4 r, double) {
  return {{__hiloint2double(static_cast<int>(r.y), static_cast<int>(r.x)),
           __hiloint2double(static_cast<int>(r.w), static_cast<int>(r.z))}};
}
__device__ __forceinline__ Chunk<__half, 8> unpack16(uint4 r, __half) {
  Chunk<__half, 8> c;
  const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    c.v[2 * i] = __ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu));
    c.v[2 * i + 1] = __ushort_as_half(static_cast<unsigned short>(w[i] >> 16));
  }
  return c;
}

// 16 bytes of rounded results (the column pass's operands) for one shared-memory store.
template <class T>
__device__ __forceinline__ uint4 pack16(const float* v, T) {
  return make_uint4(__float_as_uint(T::round(v[0])), __float_as_uint(T::round(v[1])),
                    __float_as_uint(T::round(v[2])), __float_as_uint(T::round(v[3])));
}
template <class T>
__device__ __forceinline__ uint4 pack16(const double* v, T) {
  const double a = T::round(v[0]), b = T::round(v[1]);
  return make_uint4(static_cast<unsigned>(__double2loint(a)), static_cast<unsigned>(__double2hiint(a)),
                    static_cast<unsigned>(__double2loint(b)), static_cast<unsigned>(__double2hiint(b)));
}

// Calls f(std::integral_constant<int, r>) for 1 <= r < FCH: one indexed branch (a jump table)
// where a chain of per-tap tests costs up to 2 (FCH - 1) instructions.
template <class F>
__device__ __forceinline__ void by_count(int r, F f) {
  static_assert(FCH == 8, "by_count's cases");
  using std::integral_constant;
  switch (r) {
    case 1: f(integral_constant<int, 1>{}); break;
    case 2: f(integral_constant<int, 2>{}); break;
    case 3: f(integral_constant<int, 3>{}); break;
    case 4: f(integral_constant<int, 4>{}); break;
    case 5: f(integral_constant<int, 5>{}); break;
    case 6: f(integral_constant<int, 6>{}); break;
    case 7: f(integral_constant<int, 7>{}); break;
    default: break;
  }
}

// acc[i] += sum_{v < n} coef[v] * x[v + i], i < FR, n <= NC * FCH, where load(c) returns
// x[VEC c .. VEC c + VEC - 1]. Every index is a compile-time constant after unrolling, so x and
// the coefficients stay in registers / the parameter bank; each x is loaded just before use.
// TAIL_SWITCH: the last chunk's taps by one indexed branch (by_count) instead of a test per tap
// (measured only in fused_ws_pass).
template <class T, int NC, int VEC, bool TAIL_SWITCH = false, class Vec, class E, class Load>
__device__ __forceinline__ void fused_taps(Vec (&acc)[FR], int n, const E (&coef)[FMAX],
                                           Load load) {
  // A ring of FR + VEC registers: reusing slots keeps the compiler from hoisting every load
  // to the top (distinct registers per element took ~200 registers and spilled).
  constexpr int RING = FR + VEC;
  Vec x[RING];
  auto fetch = [&](int c) {
    const Chunk<Vec, VEC> ch = load(c);
#pragma unroll
    for (int i = 0; i < VEC; ++i) x[(c * VEC + i) % RING] = ch.v[i];
  };
  auto tap = [&](int v) {
    const int need = v + FR - 1;  // the newest element tap v reads
    if (v == 0) {
#pragma unroll
      for (int c = 0; c <= (FR - 1) / VEC; ++c) fetch(c);
    } else if (need % VEC == 0) {
      fetch(need / VEC);
    }
#pragma unroll
    for (int i = 0; i < FR; ++i) T::fma(acc[i], x[(v + i) % RING], coef[v]);
  };
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    if ((c + 1) * FCH <= n) {
#pragma unroll
      for (int q = 0; q < FCH; ++q) tap(c * FCH + q);
    } else if (TAIL_SWITCH && c == NC - 1) {
      by_count(n - c * FCH, [&](auto len) {
#pragma unroll
        for (int q = 0; q < decltype(len)::value; ++q) tap(c * FCH + q);
      });
    } else {
#pragma unroll
      for (int q = 0; q < FCH; ++q)
        if (c * FCH + q < n) tap(c * FCH + q);
    }
  }
}

// Stage FG image rows from t0 (columns xb .. xb + xa_n - 1) into sin, zero past the image:
// lanes along x (coalesced reads), rows r0, r0 + kStageStep, ... per warp (8 staging warps).
// UNROLL: interior tiles whose rows fit one 16-byte unit per lane take unrolled copies.
constexpr int kStageStep = 8;
template <Precision P, bool UNROLL = true>
__device__ __forceinline__ void stage_group(const typename Prec<P>::Store* __restrict__ in,
                                            std::int64_t in_stride, int ih, int iw, int xb, int t0,
                                            typename Prec<P>::Store* sin, int pitch, int xa_n,
                                            bool async, int r0) {
  using T = Prec<P>;
  using Store = typename T::Store;
  constexpr int V = kVec<Store>, rstep = kStageStep;
  const int tx = threadIdx.x;
  if (async) {
    const int units = (xa_n + V - 1) / V;
    if (t0 + FG <= ih && xb + units * V <= iw) {  // the whole tile is inside the image
      const Store* src = in + static_cast<std::int64_t>(t0 + r0) * in_stride + xb;
      Store* dst = sin + r0 * pitch;
      // A unit per lane and row (fp32 up to 65 taps): ~3 instructions per row, where the loops
      // below take ~30 (ncu: 13 % of fp32's warp-specialized kernel at 55 taps).
      if (UNROLL && units <= BX) {
        if (tx < units) {
#pragma unroll
          for (int k = 0; k < FG / rstep; ++k)
            cp_async_bytes(dst + k * rstep * pitch + tx * V, src + k * rstep * in_stride + tx * V,
                           16);
        }
        return;
      }
      for (int r = r0; r < FG; r += rstep, src += rstep * in_stride, dst += rstep * pitch)
        for (int u = tx; u < units; u += BX) cp_async_bytes(dst + u * V, src + u * V, 16);
      return;
    }
    for (int r = r0; r < FG; r += rstep) {  // tiles at the image's edges: zero-filled copies
      const int t = t0 + r;
      const Store* row = in + static_cast<std::int64_t>(min(t, ih - 1)) * in_stride + xb;
      for (int u = tx; u < units; u += BX) {
        const int left = t < ih ? iw - xb - u * V : 0;  // elements of the unit in the image
        const int bytes = left <= 0 ? 0 : (left >= V ? 16 : left * static_cast<int>(sizeof(Store)));
        cp_async_bytes(sin + r * pitch + u * V, bytes ? row + u * V : in, bytes);
      }
    }
  } else {
    for (int r = r0; r < FG; r += rstep) {
      const int t = t0 + r;
      const Store* row = in + static_cast<std::int64_t>(min(t, ih - 1)) * in_stride;
      for (int xa = tx; xa < xa_n; xa += BX) {
        const int x = xb + xa;
        sin[r * pitch + xa] = (t < ih && x < iw) ? row[x] : T::store(T::zero_elem());
      }
    }
  }
}

// The first image row that group g of a segment starting at row ys stages: step 0's g0 groups
// cover its whole window, each later group the FG new rows of its step.
__device__ __forceinline__ int group_row(int g, int g0, int ys, int kh) {
  return g < g0 ? ys + g * FG : ys + (g - g0 + 1) * FOH + kh - 1;
}

// Calls put(F, L, full) with the compile-time flags of this term (one term, rank 1, is the
// common case and gets unguarded copies for full tiles).
template <class Put>
__device__ __forceinline__ void dispatch_term(bool first, bool last, bool full, Put put) {
  using Y = std::true_type;
  using N = std::false_type;
  if (first && last) {
    if (full) put(Y{}, Y{}, Y{});
    else put(Y{}, Y{}, N{});
  } else if (first) put(Y{}, N{}, N{});
  else if (last) put(N{}, Y{}, N{});
  else put(N{}, N{}, N{});
}

// The outputs of a tensor-core column pass (band_filter's layout: columns x, x + 8, rows
// y + 8 p + {0, 1}); `rows` of them from y are in the segment, x < ow the image's.
template <Precision P, class Acc, int G>
__device__ __forceinline__ void emit_band(const Acc (&acc)[G][4], int x, int y,
                                          int rows, int ow, bool first, bool last, bool full,
                                          typename Prec<P>::Elem* sum, std::int64_t sum_stride,
                                          typename Prec<P>::Store* out, std::int64_t out_stride,
                                          int* nf) {
  using Vec = typename Prec<P>::Vec;
  dispatch_term(first, last, full, [&](auto f, auto l, auto fl) {
    constexpr bool F = decltype(f)::value, L = decltype(l)::value, FULL = decltype(fl)::value;
    typename Prec<P>::Store* o = out + static_cast<std::int64_t>(y) * out_stride + x;
    Vec* sm = sum + static_cast<std::int64_t>(y) * sum_stride + x;
#pragma unroll
    for (int p = 0; p < G; ++p) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int dy = e & 1, dx = 8 * (e >> 1);
        if (FULL || (8 * p + dy < rows && x + dx < ow))
          emit<P, F, L>(static_cast<Vec>(acc[p][e]), sm + dy * sum_stride + dx,
                        o + dy * out_stride + dx, nf);
      }
      o += 8 * out_stride;
      sm += 8 * sum_stride;
    }
  });
}

// One thread's FFMA row pass: FR outputs of the tile row at `src` (16-byte aligned), written to
// the T row at `dst` if `store`, rounded to the column pass's operand type. CHECK: returns true
// if a stored output is not finite.
template <Precision P, int NC, bool TAIL_SWITCH = false, bool CHECK = false>
__device__ __forceinline__ bool ffma_row(const typename Prec<P>::Store* src, int kw,
                                         const typename Prec<P>::Elem (&coef)[FMAX],
                                         typename Prec<P>::Vec* dst, bool store) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  using Store = typename T::Store;
  constexpr int V = kVec<Store>;
  Vec acc[FR];
#pragma unroll
  for (int j = 0; j < FR; ++j) acc[j] = T::zero();
  fused_taps<T, NC, V, TAIL_SWITCH>(acc, kw, coef, [&](int c) {
    const Chunk<Store, V> e = unpack16(*reinterpret_cast<const uint4*>(src + c * V), Store{});
    Chunk<Vec, V> r;
#pragma unroll
    for (int i = 0; i < V; ++i) r.v[i] = T::load(e.v[i]);
    return r;
  });
  if (store) {  // 16-byte stores (the compiler cannot prove the alignment itself)
    constexpr int E = 16 / static_cast<int>(sizeof(Vec));
    uint4* d = reinterpret_cast<uint4*>(dst);
#pragma unroll
    for (int j = 0; j < FR / E; ++j) d[j] = pack16(acc + j * E, T{});  // column-pass operands
  }
  bool bad = false;  // CHECK: a stored result is not finite
  if constexpr (CHECK) {
#pragma unroll
    for (int j = 0; j < FR; ++j) bad |= !(fabsf(acc[j]) < __builtin_huge_valf());
  }
  return bad && store;
}

// Blocks per SM the register allocation must allow (else the fully unrolled taps hoist every
// load and use ~200 registers).
// The tensor-core passes: 2 blocks/SM (3 measured 0.090 against 0.082 ms, tf32 k = 55).
template <Precision P, bool TC>
constexpr int fused_min_blocks() { return P == Precision::fp64 || TC ? 2 : 3; }

// SU: stage_group's unrolled copies (see setup_fused).
template <Precision P, int NC, class RM, class CM, bool SU = true>
__global__ void __launch_bounds__(BX* BY, fused_min_blocks<P, kMma<RM> || kMma<CM>>())
    fused_pass(const __grid_constant__ FusedArgs<P> args,
               const __grid_constant__ FusedCoef<typename Prec<P>::Elem> cf) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  using Store = typename T::Store;
  constexpr bool RT = kMma<RM>, CTC = kMma<CM>;  // row / column pass on the tensor cores
  constexpr int PT = kPitchT<CTC>;
  static_assert(T::W == 1, "fused_pass is for scalar precisions");
  static_assert((!RT || std::is_same<RM, typename FusedMma<P>::Row>::value) &&
                    (!CTC || std::is_same<CM, typename FusedMma<P>::Col>::value),
                "tensor-core pass not declared for this precision (FusedMma)");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Tensor-core passes: ND band chunks (compile-time: no per-MMA guards); the plan takes them
  // only when the filtered sides need ND or ND - 1 chunks.
  constexpr int ND = RT || CTC ? NC + 1 : 0;
  const int xa_n = FW + args.kw - 1, pitch = fused_in_pitch<Store>(args.kw, RT ? ND : 0);
  const int t_rows = fused_t_rows(args.kh, CTC ? ND : 0);
  Store* sin = reinterpret_cast<Store*>(smem_raw);    // FG image rows x pitch
  Vec* st = reinterpret_cast<Vec*>(sin + FG * pitch);  // t_rows T rows x PT
  unsigned char* bands = reinterpret_cast<unsigned char*>(st + t_rows * PT);  // 16-byte aligned
  auto* band_b = reinterpret_cast<typename std::conditional_t<RT, RM, BandTf32>::BFrag*>(bands);
  auto* band_a = reinterpret_cast<typename std::conditional_t<CTC, CM, BandTf32>::BFrag*>(
      bands + ND * 32 * bfrag_bytes<RM>());
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int xb = blockIdx.x * FW, ys = blockIdx.y * args.seg;
  const int y_end = min(args.oh, ys + args.seg);
  if (ys >= y_end) return;
  const int steps = (y_end - ys + FOH - 1) / FOH;
  // The passes read whole 8-wide chunks: columns past the window and T rows past FOH + kh - 1
  // meet zero taps but must be finite.
  if constexpr (RT) {
    build_band<RM>(band_b, cf.b, args.kw, ND, tid, BX * BY);
    for (int i = tid; i < FG * pitch; i += BX * BY) sin[i] = 0.0f;
  }
  if constexpr (CTC) {
    build_band<CM>(band_a, cf.a, args.kh, ND, tid, BX * BY);
    for (int i = (FOH + args.kh - 1) * PT + tid; i < t_rows * PT; i += BX * BY) st[i] = 0.0f;
  }
  if constexpr (RT || CTC) __syncthreads();
  // Groups of FG image rows: step 0 filters FOH + kh - 1 rows into T rows 0.., every later
  // step FG rows into T rows kh - 1 (after the shift).
  const int g0 = (FOH + args.kh - 1 + FG - 1) / FG, groups = g0 + steps - 1;
  auto stage = [&](int g) {
    stage_group<P, SU>(args.in, args.in_stride, args.ih, args.iw, xb,
                       group_row(g, g0, ys, args.kh), sin, pitch, xa_n, args.async, ty);
  };
  stage(0);
  const int rl = tx + BX * (ty >> 2), xg = ty & 3;  // FFMA row pass: image row, group of FR outputs
  const int cl = tx + BX * (ty & 1), rg = ty >> 1;  // FFMA column pass: column, group of FR rows
  // Tensor-core passes: each warp filters 16 lines (rows of the tile for the row pass, columns
  // of T for the column pass) x 32 outputs; fragment coordinates g = lane / 4, q = lane % 4.
  const int wl = ty & 3, wo = ty >> 2, fg = tx >> 2, fq = tx & 3;
  const Store* my_row = sin + rl * pitch + xg * FR;
  int g = 0;
  for (int s = 0; s < steps; ++s) {
    const int y = ys + s * FOH;
    const int g_end = s == 0 ? g0 : g + 1;
    for (; g < g_end; ++g) {
      cp_async_wait_all();
      __syncthreads();  // sin holds group g; the shift is done
      const int d = s == 0 ? g * FG : args.kh - 1;
      const int n = s == 0 ? imin(FG, FOH + args.kh - 1 - g * FG) : FG;
      if constexpr (RT) {  // T rows d + 16 wl + {g, g + 8}, columns 32 wo + 8 p + 2 q + {0, 1}
        typename RM::Acc acc[kBandGroups][4] = {};
        const Store* src = sin + 16 * wl * pitch + 32 * wo;
        auto chunk = [&](int j) { return src + 8 * j; };  // columns past the window are zero
        if (__any_sync(~0u, band_filter<RM, ND, true>(acc, chunk, pitch, 1, 1 << 30, band_b)))
          band_direct(acc, chunk, pitch, 1, cf.b, args.kw, [](float x) { return T::load(x); });
        const int r0 = 16 * wl + fg;
        float* dst = st + (d + r0) * PT + 32 * wo + 2 * fq;
#pragma unroll
        for (int p = 0; p < kBandGroups; ++p) {
          if (r0 < n)
            *reinterpret_cast<float2*>(dst + 8 * p) = make_float2(
                T::round(static_cast<float>(acc[p][0])), T::round(static_cast<float>(acc[p][1])));
          if (r0 + 8 < n)
            *reinterpret_cast<float2*>(dst + 8 * PT + 8 * p) = make_float2(
                T::round(static_cast<float>(acc[p][2])), T::round(static_cast<float>(acc[p][3])));
        }
      } else {
        ffma_row<P, NC>(my_row, args.kw, cf.b, st + (d + rl) * PT + xg * FR, rl < n);
      }
      __syncthreads();  // sin is free, st has the group
      if (g + 1 < groups) stage(g + 1);  // lands during the column pass / next row pass
    }
    const int rows_left = y_end - y;  // output rows of this step: min(FOH, rows_left)
    if constexpr (CTC) {  // outputs: columns 16 wl + {g, g + 8}, rows 32 wo + 8 p + 2 q + {0, 1}
      typename CM::Acc acc[kBandGroups][4] = {};
      const Vec* src = st + 32 * wo * PT + 16 * wl;
      // T is stored rounded to the operand type (T::round): no second rounding here.
      auto chunk = [&](int j) { return src + 8 * j * PT; };  // rows past the window are zero
      if (__any_sync(~0u, band_filter<CM, ND, false>(acc, chunk, 1, PT, 1 << 30, band_a)))
        band_direct(acc, chunk, 1, PT, cf.a, args.kh, [](float x) { return x; });
      const int yl = 32 * wo + 2 * fq;
      emit_band<P>(acc, xb + 16 * wl + fg, y + yl, rows_left - yl, args.ow, args.first, args.last,
                   rows_left >= FOH && xb + FW <= args.ow, args.sum, args.sum_stride, args.out,
                   args.out_stride, args.nf);
    } else {
      Vec acc[FR];
#pragma unroll
      for (int j = 0; j < FR; ++j) acc[j] = T::zero();
      const Vec* col = st + rg * FR * PT + cl;
      fused_taps<T, NC, 1>(acc, args.kh, cf.a, [&](int c) { return Chunk<Vec, 1>{{col[c * PT]}}; });
      const int x = xb + cl, y0 = y + rg * FR, rows = imin(FR, y_end - y0);
      if (x < args.ow) {
        // Pointers stepped row by row: recomputing 64-bit addresses per output cost ~16
        // instructions each (ncu: a quarter of the column pass).
        auto put = [&](auto f, auto l, auto full) {
          constexpr bool F = decltype(f)::value, L = decltype(l)::value;
          Store* o = args.out + static_cast<std::int64_t>(y0) * args.out_stride + x;
          Vec* sm = args.sum + static_cast<std::int64_t>(y0) * args.sum_stride + x;
#pragma unroll
          for (int j = 0; j < FR; ++j) {
            if (decltype(full)::value || j < rows) emit<P, F, L>(acc[j], sm, o, args.nf);
            o += args.out_stride;
            sm += args.sum_stride;
          }
        };
        dispatch_term(args.first, args.last, rows == FR, put);
      }
    }
    if (s + 1 < steps) {
      __syncthreads();  // the column pass is done with st: keep its last kh - 1 rows
      constexpr int U = PT * static_cast<int>(sizeof(Vec)) / 16;  // 16-byte units per row
      uint4* st4 = reinterpret_cast<uint4*>(st);
      for (int i = tid; i < (args.kh - 1) * U; i += BX * BY) st4[i] = st4[i + FOH * U];
    }
  }
}

// ---- fused pass, warp-specialized (fp32: FFMA row pass + fp64-MMA column pass, sm_90) ---------
// The FMA pipe and the tensor pipe (DMMA: 32 fp64 FMAs per clock per SM sub-partition, as many
// as fp32 FFMAs) run at once when each has its own warps: warps 0-7 (two warpgroups) stage the
// image and run the FFMA row pass (as fused_pass) into a ring of T rows, warps 8-11 (one
// warpgroup) run the column pass on finished steps as banded fp64 products, each warp 16
// columns x the step's 64 rows in one pass (8 output groups: 15 chunk loads per 64 DMMAs).
// Named barriers hand steps over: FULL (rows of step s written), EMPTY (step s read: its ring
// rows may be rewritten); the row pass runs up to kDepth steps ahead. setmaxnreg moves registers
// from the row pass (56) to the column pass (128: 32 fp64 accumulators), 2 blocks per SM.
// Non-finite data: the row pass flags the steps whose T rows it wrote non-finite (16 FSETPs per
// 16 outputs, on the side with slack); the column pass tests its data per datum (band_filter's
// check, then band_direct) only in steps whose window holds a flagged row.
// Measured (H100, Gaussian 4096^2, k = 25 / 35 / 55 / 64 ms, one call alternating both forms):
// 0.0727 / 0.0840 / 0.0984 / 0.1113 against 0.0750 / 0.0840 / 0.1040 / 0.1136 for the form
// before (two passes of 4 groups per step, every datum tested, a 248-row ring at k = 55, first
// staging after the set-up); this code in the benchmark: 0.074 / 0.084 / 0.098 (notes, round 6).
namespace ws {
constexpr int kWarpsY = 12, kThreads = BX * kWarpsY, kProducers = BX * 8;
constexpr int kDepth = 3;  // steps the row pass may run ahead of the column pass
constexpr int kFull = 1, kEmpty = kFull + kDepth, kStage = kEmpty + kDepth;  // barrier ids
constexpr int kGroups = FOH / 8;  // output groups of 8 rows per column-pass warp: the whole step
// Ring of T rows: a step's window as the column pass's chunks address it (fused_t_rows <= 128
// for kh <= 64) plus the FG rows of each step the row pass may be ahead (<= 256), rounded up to
// 256 so that a step's base row takes 4 values (compile-time chunk offsets, wrap by a mask).
constexpr int kRingRows = 256;
static_assert(FOH == 64 && kRingRows % FOH == 0 && 128 + (kDepth - 1) * FG <= kRingRows,
              "ws ring: steps of 64 rows, every window and the rows written ahead fit");
__device__ __forceinline__ void bar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}
// This warpgroup's register budget (sm_90a; elsewhere the launch's 80 stand, with spills).
template <bool INC, int N>
__device__ __forceinline__ void set_max_regs() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  if constexpr (INC) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
}  // namespace ws

template <Precision P, class CM>
std::size_t fused_ws_smem(int kw, int nd) {
  using S = typename Prec<P>::Store;
  return FG * fused_in_pitch<S>(kw, 0) * sizeof(S) +
         ws::kRingRows * kPitchT<true> * sizeof(typename Prec<P>::Elem) +
         nd * 32 * bfrag_bytes<CM>();
}

template <Precision P, int NC, class CM>
__global__ void __launch_bounds__(ws::kThreads, 2)
    fused_ws_pass(const __grid_constant__ FusedArgs<P> args,
                  const __grid_constant__ FusedCoef<typename Prec<P>::Elem> cf) {
  using T = Prec<P>;
  using Vec = typename T::Vec;
  using Store = typename T::Store;
  constexpr int PT = kPitchT<true>, ND = NC + 1, G = ws::kGroups, R = ws::kRingRows;
  static_assert(T::W == 1 && std::is_same<CM, typename FusedMma<P>::Col>::value,
                "warp-specialized pass: the precision's tensor-core column pass");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // nonfinite[s % (kDepth + 1)] != 0: a T row written in step s is not finite (a step's window
  // holds its own rows and the previous step's; slots are reset kDepth + 1 steps later).
  __shared__ int nonfinite[ws::kDepth + 1];
  const int xa_n = FW + args.kw - 1, pitch = fused_in_pitch<Store>(args.kw, 0);
  Store* sin = reinterpret_cast<Store*>(smem_raw);       // FG image rows x pitch
  Vec* ring = reinterpret_cast<Vec*>(sin + FG * pitch);  // R T rows x PT
  auto* band_a = reinterpret_cast<typename CM::BFrag*>(ring + R * PT);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int xb = blockIdx.x * FW, ys = blockIdx.y * args.seg;
  const int y_end = min(args.oh, ys + args.seg);
  if (ys >= y_end) return;
  const int steps = (y_end - ys + FOH - 1) / FOH;
  const int win = FOH + args.kh - 1;  // T rows a step reads
  // Step 0 filters T rows 0 .. win - 1 (g0 groups), step s rows s FOH + kh - 1 .. + FG - 1.
  const int g0 = (win + FG - 1) / FG;
  auto stage = [&](int g) {
    stage_group<P>(args.in, args.in_stride, args.ih, args.iw, xb, group_row(g, g0, ys, args.kh),
                   sin, pitch, xa_n, args.async, ty);
  };
  if (ty < 8) stage(0);  // first, so that its latency overlaps the set-up (-1.5 % at k = 55)
  build_band<CM>(band_a, cf.a, args.kh, ND, tid, ws::kThreads);
  for (int i = tid; i < R * PT; i += ws::kThreads) ring[i] = 0.0f;  // finite, for the band's zeros
  if (tid <= ws::kDepth) nonfinite[tid] = 0;
  __syncthreads();
  if (ty < 8) {
    ws::set_max_regs<false, 56>();
    // Row pass: lane = image row rl, group of FR outputs xg.
    const int rl = tx + BX * (ty >> 2), xg = ty & 3;
    int g = 0;
    for (int s = 0; s < steps; ++s) {
      // Step s's rows replace those of step s - kDepth in the ring.
      if (s >= ws::kDepth) ws::bar_sync(ws::kEmpty + s % ws::kDepth, ws::kThreads);
      // The column pass is done with step s - kDepth, the last to read this slot.
      if (s > ws::kDepth && tid == 0) nonfinite[s % (ws::kDepth + 1)] = 0;
      for (const int g_end = s == 0 ? g0 : g + 1; g < g_end; ++g) {
        cp_async_wait_all();
        ws::bar_sync(ws::kStage, ws::kProducers);  // sin holds group g
        const int d = s == 0 ? g * FG : s * FOH + args.kh - 1;  // its first T row
        const int n = s == 0 ? imin(FG, win - g * FG) : FG;
        const int slot = (d + rl) & (R - 1);
        if (ffma_row<P, NC, true, true>(sin + rl * pitch + xg * FR, args.kw, cf.b,
                                        ring + slot * PT + xg * FR, rl < n))
          atomicOr(&nonfinite[s % (ws::kDepth + 1)], 1);  // rare; atomic: no write-write race
        ws::bar_sync(ws::kStage, ws::kProducers);  // sin is free
        if (g + 1 < g0 + steps - 1) stage(g + 1);
      }
      ws::bar_arrive(ws::kFull + s % ws::kDepth, ws::kThreads);
    }
  } else {
    // Column pass: warp w = 16 columns 16 w + {g, g + 8} x the step's 64 rows.
    ws::set_max_regs<true, 128>();
    const int w = ty - 8, fg = tx >> 2, fq = tx & 3;
    const Vec* pw = ring + 16 * w;
    for (int s = 0; s < steps; ++s) {
      ws::bar_sync(ws::kFull + s % ws::kDepth, ws::kThreads);
      const int y = ys + s * FOH, rows_left = y_end - y;
      // Every flag of the rows in this step's window was set before FULL(s) was reached.
      const bool check =
          nonfinite[s % (ws::kDepth + 1)] | (s ? nonfinite[(s - 1) % (ws::kDepth + 1)] : 0);
      typename CM::Acc acc[G][4] = {};
      // Rows past the window (win) are being rewritten by the row pass: read as zero. (The
      // plan's band_chunks(kh) >= ND - 1 keeps win >= 8 (G + ND - 3), as band_filter requires.)
      if (!check) {
        // The step's base row is 64 (s mod 4): every chunk address is a compile-time offset.
        auto run = [&](auto b) {
          constexpr int B = decltype(b)::value;
          auto at = [&](int j) { return pw + ((B + 8 * j) & (R - 1)) * PT; };
          band_filter<CM, ND, false, false, false>(acc, at, 1, PT, win, band_a);
        };
        switch (s & 3) {
          case 0: run(std::integral_constant<int, 0>{}); break;
          case 1: run(std::integral_constant<int, 64>{}); break;
          case 2: run(std::integral_constant<int, 128>{}); break;
          default: run(std::integral_constant<int, 192>{}); break;
        }
      } else {
        const int base = (s * FOH) & (R - 1);
        auto chunk = [&](int j) { return pw + ((base + 8 * j) & (R - 1)) * PT; };
        if (__any_sync(~0u, band_filter<CM, ND, false, false>(acc, chunk, 1, PT, win, band_a)))
          band_direct(acc, chunk, 1, PT, cf.a, args.kh, [](float x) { return x; });
      }
      emit_band<P>(acc, xb + 16 * w + fg, y + 2 * fq, rows_left - 2 * fq, args.ow, args.first,
                   args.last, rows_left >= FOH && xb + FW <= args.ow, args.sum, args.sum_stride,
                   args.out, args.out_stride, args.nf);
      if (s + ws::kDepth < steps) ws::bar_arrive(ws::kEmpty + s % ws::kDepth, ws::kThreads);
    }
  }
}

template <Precision P, class CM, int NC = 1>
auto fused_ws_kernel(int nc) -> decltype(&fused_ws_pass<P, 1, CM>) {
  if constexpr (NC < FMAX / FCH) {
    if (nc > NC) return fused_ws_kernel<P, CM, NC + 1>(nc);
  }
  return &fused_ws_pass<P, NC, CM>;
}

// The fused kernel's pointer type; half2 fp16 has no fused pass (and must not name one).
template <Precision P, bool = (Prec<P>::W == 1)>
struct FusedPtr {
  using type = void*;
};
template <Precision P>
struct FusedPtr<P, true> {
  using type = void (*)(FusedArgs<P>, FusedCoef<typename Prec<P>::Elem>);  // every fused kernel
};

// The fused kernel for NC = ceil(max(kh, kw) / 8) chunks of taps, picked at run time.
template <Precision P, class RM, class CM, int NC = 1>
auto fused_kernel(int nc, bool su) -> typename FusedPtr<P>::type {
  if constexpr (NC < FMAX / FCH) {
    if (nc > NC) return fused_kernel<P, RM, CM, NC + 1>(nc, su);
  }
  // Only 4-byte data need both forms: 2-byte rows always take the unrolled copies (su), fp64
  // rows never fit them (stage_group's units <= BX) at the taps where su is set.
  using S = typename Prec<P>::Store;
  if constexpr (sizeof(S) == 4)
    return su ? &fused_pass<P, NC, RM, CM, true> : &fused_pass<P, NC, RM, CM, false>;
  else
    return &fused_pass<P, NC, RM, CM, sizeof(S) == 2>;
}

// ---- host: rank-revealing decomposition ----------------------------------------------------
// One-sided Jacobi SVD of an m x n column-major matrix (m >= n): A = U diag(s) V^T.
void jacobi_svd(std::vector<double>& A, int m, int n, std::vector<double>& V,
                std::vector<double>& s) {
  V.assign(static_cast<std::size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j) V[j * n + j] = 1.0;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0.0;
    for (int p = 0; p < n - 1; ++p) {
      for (int q = p + 1; q < n; ++q) {
        double* ap = &A[static_cast<std::size_t>(p) * m];
        double* aq = &A[static_cast<std::size_t>(q) * m];
        double alpha = 0, beta = 0, gamma = 0;
        for (int i = 0; i < m; ++i) {
          alpha += ap[i] * ap[i];
          beta += aq[i] * aq[i];
          gamma += ap[i] * aq[i];
        }
        if (gamma == 0.0) continue;
        const double rel = std::fabs(gamma) / std::sqrt(alpha * beta);
        if (!(rel > 1e-15)) continue;
        off = std::max(off, rel);
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1.0 + zeta * zeta));
        const double c = 1.0 / std::sqrt(1.0 + t * t), sn = c * t;
        for (int i = 0; i < m; ++i) {
          const double x = ap[i], y = aq[i];
          ap[i] = c * x - sn * y;
          aq[i] = sn * x + c * y;
        }
        double* vp = &V[static_cast<std::size_t>(p) * n];
        double* vq = &V[static_cast<std::size_t>(q) * n];
        for (int i = 0; i < n; ++i) {
          const double x = vp[i], y = vq[i];
          vp[i] = c * x - sn * y;
          vq[i] = sn * x + c * y;
        }
      }
    }
    if (off <= 1e-15) break;
  }
  s.assign(n, 0.0);
  for (int j = 0; j < n; ++j) {
    double* aj = &A[static_cast<std::size_t>(j) * m];
    double nrm = 0;
    for (int i = 0; i < m; ++i) nrm += aj[i] * aj[i];
    s[j] = std::sqrt(nrm);
    if (s[j] > 0)
      for (int i = 0; i < m; ++i) aj[i] /= s[j];
  }
}

// Unit roundoff of the operands each precision multiplies.
double operand_eps(Precision p) {
  switch (p) {
    case Precision::fp16:
    case Precision::fp16fp32:
    case Precision::tf32: return std::ldexp(1.0, -11);
    case Precision::bf16: return std::ldexp(1.0, -8);
    case Precision::fp32: return std::ldexp(1.0, -24);
    case Precision::fp64: break;
  }
  return std::ldexp(1.0, -53);
}

struct Terms {
  int r = 0;
  std::vector<double> a, b;  // r x kh column factors, r x kw row factors
};

constexpr int kMaxSvd = 512;  // larger kernels skip the O(n^3) SVD and use the exact rows

Terms decompose(const double* k, int kh, int kw, Precision p) {
  Terms t;
  const int full = std::min(kh, kw);
  // A NaN/inf coefficient takes the exact rows (no SVD of it): every output is then non-finite
  // and NonfiniteRepair recomputes it.
  bool finite = true;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(kh) * kw; ++i)
    finite = finite && std::isfinite(k[i]);
  if (finite && full <= kMaxSvd && full > 1) {
    const bool tall = kh >= kw;  // SVD of K (tall) or K^T, so that m >= n
    const int m = tall ? kh : kw, n = tall ? kw : kh;
    std::vector<double> A(static_cast<std::size_t>(m) * n), V, s;
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j)
        A[tall ? static_cast<std::size_t>(j) * m + i : static_cast<std::size_t>(i) * m + j] =
            k[static_cast<std::size_t>(i) * kw + j];
    jacobi_svd(A, m, n, V, s);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int x, int y) { return s[x] > s[y]; });
    const double tol = operand_eps(p) * s[order[0]];
    int rank = 0;
    while (rank < n && s[order[rank]] > tol) ++rank;
    if (rank < full) {
      t.r = std::max(rank, 1);  // a zero kernel still runs one (zero) term
      t.a.resize(static_cast<std::size_t>(t.r) * kh);
      t.b.resize(static_cast<std::size_t>(t.r) * kw);
      for (int q = 0; q < t.r; ++q) {
        const int j = order[q];
        const double w = std::sqrt(s[j]);
        const double* u = &A[static_cast<std::size_t>(j) * m];  // length m
        const double* v = &V[static_cast<std::size_t>(j) * n];  // length n
        for (int i = 0; i < kh; ++i) t.a[q * kh + i] = w * (tall ? u[i] : v[i]);
        for (int i = 0; i < kw; ++i) t.b[q * kw + i] = w * (tall ? v[i] : u[i]);
      }
      return t;
    }
  }
  // Exact: one term per kernel row (a = unit vector) or per column (b = unit vector).
  const bool by_rows = kh <= kw;
  t.r = by_rows ? kh : kw;
  t.a.assign(static_cast<std::size_t>(t.r) * kh, 0.0);
  t.b.assign(static_cast<std::size_t>(t.r) * kw, 0.0);
  for (int q = 0; q < t.r; ++q) {
    if (by_rows) {
      t.a[q * kh + q] = 1.0;
      for (int j = 0; j < kw; ++j) t.b[q * kw + j] = k[static_cast<std::size_t>(q) * kw + j];
    } else {
      t.b[q * kw + q] = 1.0;
      for (int i = 0; i < kh; ++i) t.a[q * kh + i] = k[static_cast<std::size_t>(i) * kw + q];
    }
  }
  return t;
}

// Rows of T per band: the ring of T plus the band's input and output should fit in L2.
std::int64_t band_bytes() {
  if (const char* e = std::getenv("TENSORCONV_SEPARABLE_BAND_MB")) {
    const long mb = std::strtol(e, nullptr, 10);
    if (mb > 0) return static_cast<std::int64_t>(mb) << 20;
  }
  return std::int64_t(1) << 30;  // one band unless T passes 1 GiB: bands were measured slower
}

template <Precision P>
class SeparablePlan final : public CudaPlan {
  using T = Prec<P>;
  using Elem = typename T::Elem;
  using Vec = typename T::Vec;
  static constexpr bool kSumInOut = std::is_same<typename T::Store, Elem>::value;

 public:
  explicit SeparablePlan(const PlanRequest& r) : CudaPlan(r), nf_(r) {
    const Terms t = decompose(r.kernel, static_cast<int>(r.kh), static_cast<int>(r.kw), P);
    r_ = t.r;
    upload_coefficients<P>(t.a.data(), static_cast<std::int64_t>(t.a.size()), a_);
    upload_coefficients<P>(t.b.data(), static_cast<std::int64_t>(t.b.size()), b_);
    const std::int64_t oh = out_rows(), ow = out_cols();
    if (r_ > 1 && !kSumInOut) sum_.reset(oh * ow * sizeof(Elem));
    if constexpr (T::W == 1) {
      if (use_fused(r.kh, r.kw) && setup_fused()) return;
    }
    constexpr int OH = BY * rows_per_thread<P>();
    std::int64_t rows = band_bytes() / (ow * static_cast<std::int64_t>(sizeof(Elem)));
    band_ = std::max<std::int64_t>(OH, rows / OH * OH);
    if (band_ >= oh) band_ = oh;
    ring_rows_ = std::min<std::int64_t>(ih_, band_ + kh_ - 1);
    ring_.reset(ring_rows_ * ow * sizeof(Elem));
  }
  std::size_t workspace_bytes() const override {
    return ring_.bytes() + sum_.bytes() + a_.bytes() + b_.bytes();
  }
  int rank() const { return r_; }

 private:
  // The fused pass (default for scalar precisions with kh, kw <= 64; TENSORCONV_SEPARABLE_FUSED=0
  // selects the two-pass form, kept for fp16's half2 lanes and larger kernels).
  static bool use_fused(std::int64_t kh, std::int64_t kw) {
    const char* e = std::getenv("TENSORCONV_SEPARABLE_FUSED");
    return kh <= FMAX && kw <= FMAX && !(e && e[0] == '0');
  }

  using Mma = FusedMma<P>;
  // The tensor-core passes (FusedMma) from min_taps() taps on (H100, Gaussians at 4096^2; tf32:
  // k = 15 0.074 vs 0.075 ms with FFMAs, 25 0.070 vs 0.091, 55 0.082 vs 0.141, same MAPE; fp32:
  // k = 25 0.074 vs 0.077, 35 0.084 vs 0.090, 55 0.098 vs 0.119, MAPE 2.4-2.8e-6 vs
  // 5.8-8.3e-6 %).
  // TENSORCONV_SEPARABLE_TC=0/1 forces either form. The tensor-core passes run nd band chunks
  // (the longer side's), so a much shorter filtered side would waste them.
  static constexpr int min_taps() { return P == Precision::tf32 ? 13 : 25; }
  bool use_tc(int kh, int kw, int nd) const {
    if (!kMma<typename Mma::Col>) return false;
    if (!kMma<typename Mma::Row>) {  // fp64 MMAs: sm_90 on
      int major = 0;
      TC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device()));
      if (major < 9) return false;
    }
    const int side = kMma<typename Mma::Row> ? std::min(kh, kw) : kh;
    if (band_chunks(side) < nd - 1) return false;
    if (const char* e = std::getenv("TENSORCONV_SEPARABLE_TC")) return e[0] != '0';
    return std::max(kh, kw) >= min_taps();
  }

  // False (two-pass form instead) where the fused pass's shared memory does not fit the device
  // (it needs up to ~136 KB in fp64 at 64 taps; consumer GPUs offer ~100 KB per block).
  bool setup_fused() {
    int optin = 0;
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device()));
    const int nc = static_cast<int>((std::max(kh_, kw_) + FCH - 1) / FCH);
    const int kh = static_cast<int>(kh_), kw = static_cast<int>(kw_);
    using Row = typename Mma::Row;
    using Col = typename Mma::Col;
    constexpr bool kWs = !kMma<Row> && kMma<Col>;  // fp32: the warp-specialized kernel
    const std::size_t tc_smem =
        kWs ? fused_ws_smem<P, Col>(kw, nc + 1) : fused_smem<P, Row, Col>(kh, kw, nc + 1);
    // Not for the exact row decomposition (r = min(kh, kw) terms): its unit-vector factors
    // would fill whole bands with zeros (tf32 random k = 55: 15.4 against 11.9 ms).
    const bool low_rank = r_ == 1 || r_ < std::min(kh, kw);
    const bool tc =
        low_rank && use_tc(kh, kw, nc + 1) && tc_smem <= static_cast<std::size_t>(optin);
    smem_ = tc ? tc_smem : fused_smem<P, void, void>(kh, kw, 0);
    if (smem_ > static_cast<std::size_t>(optin)) return false;
    // The unrolled staging copies (stage_group) measured faster for 2-byte data at every k and
    // for 4-byte data from 25 taps (-3 to -12 %), slower for 4-byte data below (k = 3, 15: +3 %
    // fp32, +11 % tf32's tensor-core passes at 15; H100, 4096^2, Gaussians; benchmark notes).
    const bool su = sizeof(typename T::Store) == 2 || kw >= 25;
    if (!tc) {
      kern_ = fused_kernel<P, void, void>(nc, su);
    } else if constexpr (kWs) {
      kern_ = fused_ws_kernel<P, Col>(nc);
      block_y_ = ws::kWarpsY;
    } else {
      kern_ = fused_kernel<P, Row, Col>(nc, su);
    }
    // The rounded coefficients (as the device rounds operands) go to the launch parameters.
    std::vector<Elem> a(a_.bytes() / sizeof(Elem)), b(b_.bytes() / sizeof(Elem));
    TC_CUDA_CHECK(cudaMemcpy(a.data(), a_.get(), a_.bytes(), cudaMemcpyDeviceToHost));
    TC_CUDA_CHECK(cudaMemcpy(b.data(), b_.get(), b_.bytes(), cudaMemcpyDeviceToHost));
    coef_.assign(r_, FusedCoef<Elem>{});
    for (int q = 0; q < r_; ++q) {
      std::copy_n(a.data() + static_cast<std::size_t>(q) * kh_, kh_, coef_[q].a);
      std::copy_n(b.data() + static_cast<std::size_t>(q) * kw_, kw_, coef_[q].b);
    }
    int per_sm = 0;
    TC_CUDA_CHECK(cudaFuncSetAttribute(kern_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem_)));
    TC_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern_, BX * block_y_, smem_));
    if (per_sm < 1) return false;
    // One wave of blocks (never more, or a second partial wave doubles the time): strips of FW
    // columns x segments of `seg_` rows (each segment recomputes kh - 1 rows of T, so segments
    // are as long as the wave allows).
    const std::int64_t strips = (out_cols() + FW - 1) / FW;
    const std::int64_t slots = static_cast<std::int64_t>(per_sm) * sm_count();
    const std::int64_t splits = std::max<std::int64_t>(1, slots / strips);
    std::int64_t seg = (out_rows() + splits - 1) / splits;
    if (const char* e = std::getenv("TENSORCONV_SEPARABLE_SEGMENT"))  // tests: longer walks
      seg = std::max<std::int64_t>(seg, std::strtol(e, nullptr, 10));
    seg_ = std::max<std::int64_t>(FOH, (seg + FOH - 1) / FOH * FOH);
    fused_ = true;
    return true;
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    constexpr int R = rows_per_thread<P>();
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const int kh = static_cast<int>(kh_), kw = static_cast<int>(kw_);
    const int ring_rows = static_cast<int>(ring_rows_);
    Elem* sum = kSumInOut ? reinterpret_cast<Elem*>(out.data) : sum_.get<Elem>();
    const std::int64_t sum_stride = kSumInOut ? out.row_stride : ow;
    nf_.arm(stream);
    if constexpr (T::W == 1) {
      if (fused_) {
        const int seg = static_cast<int>(
            std::max<std::int64_t>(seg_, (ceil_div(oh, 65535) + FOH - 1) / FOH * FOH));
        const dim3 grid(ceil_div(ow, FW), ceil_div(oh, seg));
        // 16-byte cp.async needs 16-byte aligned rows; other inputs are staged with plain loads.
        const bool async = reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 &&
                           in.row_stride * sizeof(typename T::Store) % 16 == 0;
        for (int q = 0; q < r_; ++q) {
          const FusedArgs<P> args{in.ptr<typename T::Store>(), in.row_stride,
                                  static_cast<int>(in.rows), static_cast<int>(in.cols), oh, ow,
                                  seg, sum, sum_stride, out.ptr<typename T::Store>(),
                                  out.row_stride, kh, kw, q == 0, q == r_ - 1, async, nf_.flag()};
          kern_<<<grid, dim3(BX, block_y_), smem_, stream>>>(args, coef_[q]);
          TC_CUDA_LAUNCH_CHECK();
        }
        nf_.run(in, out, stream, true);
        return;
      }
    }
    const std::size_t row_smem = (CT + (BY * R + std::min(CT, kw) - 1) * PITCH_T) * sizeof(Vec);
    const std::size_t col_smem = (CT + (BY * R + std::min(CT, kh) - 1) * BX) * sizeof(Vec);
    const dim3 block(BX, BY);
    for (int q = 0; q < r_; ++q) {
      const Vec* a = a_.get<Vec>() + static_cast<std::size_t>(q) * kh;
      const Vec* b = b_.get<Vec>() + static_cast<std::size_t>(q) * kw;
      int done = 0;  // rows of T computed for this term
      for (int y0 = 0; y0 < oh; y0 += static_cast<int>(band_)) {
        const int y1 = static_cast<int>(std::min<std::int64_t>(oh, y0 + band_));
        const int need = y1 + kh - 1;
        const dim3 rgrid(ceil_div(ow, BY * R), std::min(ceil_div(need - done, BX * T::W), 65535));
        row_pass<P><<<rgrid, block, row_smem, stream>>>(
            in.ptr<typename T::Store>(), in.row_stride, done, need, static_cast<int>(in.cols),
            ring_.get<Elem>(), ring_rows, ow, b, kw);
        TC_CUDA_LAUNCH_CHECK();
        done = need;
        const dim3 cgrid(ceil_div(ow, BX * T::W), std::min(ceil_div(y1 - y0, BY * R), 65535));
        auto launch = [&](auto kern) {
          kern<<<cgrid, block, col_smem, stream>>>(ring_.get<Elem>(), ring_rows, ow, y0, y1, need,
                                                   sum, sum_stride, out.ptr<typename T::Store>(),
                                                   out.row_stride, a, kh, nf_.flag());
          TC_CUDA_LAUNCH_CHECK();
        };
        const bool first = q == 0, last = q == r_ - 1;
        if (first && last) launch(column_pass<P, true, true>);
        else if (first) launch(column_pass<P, true, false>);
        else if (last) launch(column_pass<P, false, true>);
        else launch(column_pass<P, false, false>);
      }
    }
    nf_.run(in, out, stream, true);
  }

 private:
  int r_ = 0;
  bool fused_ = false;
  int block_y_ = BY;  // warps per block of the fused kernel
  std::size_t smem_ = 0;
  std::int64_t seg_ = 0, band_ = 0, ring_rows_ = 0;
  DeviceBuffer a_, b_, ring_, sum_;
  typename FusedPtr<P>::type kern_ = nullptr;
  std::vector<FusedCoef<Elem>> coef_;  // one per term
  NonfiniteRepair nf_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Plan> make_separable_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return cuda::with_precision(r.precision, [&](auto tag) -> std::unique_ptr<Plan> {
    return std::make_unique<cuda::SeparablePlan<decltype(tag)::value>>(r);
  });
}

}  // namespace tc
