// Device functions both fused passes share (fused_pass.cu, fused_ws_pass.cu): 16-byte unpacking,
// the unrolled tap loop, image staging by cp.async, term dispatch and the FFMA row pass.
#pragma once
#include <type_traits>

#include "cuda/runtime/async_copy.cuh"
#include "cuda/methods/separable/separable.cuh"

namespace tc {
namespace cuda {
namespace sep {

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

}  // namespace sep
}  // namespace cuda
}  // namespace tc
