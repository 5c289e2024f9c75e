// separable's fused pass (scalar precisions, kh and kw <= 64): row and column passes in one
// kernel with T in shared memory; FFMA passes, or tf32's banded tensor-core passes.
#include "cuda/methods/separable/fused.cuh"

namespace tc {
namespace cuda {
namespace sep {

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

namespace {
// The fused kernel for NC = ceil(max(kh, kw) / 8) chunks of taps, picked at run time.
template <Precision P, class RM, class CM, int NC = 1>
auto fused_kernel_nc(int nc, bool su) -> typename FusedPtr<P>::type {
  if constexpr (NC < FMAX / FCH) {
    if (nc > NC) return fused_kernel_nc<P, RM, CM, NC + 1>(nc, su);
  }
  // Only 4-byte data need both forms: 2-byte rows always take the unrolled copies (su), fp64
  // rows never fit them (stage_group's units <= BX) at the taps where su is set.
  using S = typename Prec<P>::Store;
  if constexpr (sizeof(S) == 4)
    return su ? &fused_pass<P, NC, RM, CM, true> : &fused_pass<P, NC, RM, CM, false>;
  else
    return &fused_pass<P, NC, RM, CM, sizeof(S) == 2>;
}
}  // namespace

template <Precision P, class RM, class CM>
typename FusedPtr<P>::type fused_kernel(int nc, bool su) {
  return fused_kernel_nc<P, RM, CM>(nc, su);
}

// The kernels SeparablePlan launches: FFMA passes for every scalar precision (fp32's below 25
// taps or with separable.tensor_cores = False), tf32's tensor-core passes.
template FusedPtr<Precision::fp16fp32>::type fused_kernel<Precision::fp16fp32, void, void>(int, bool);
template FusedPtr<Precision::bf16>::type fused_kernel<Precision::bf16, void, void>(int, bool);
template FusedPtr<Precision::tf32>::type fused_kernel<Precision::tf32, void, void>(int, bool);
template FusedPtr<Precision::fp32>::type fused_kernel<Precision::fp32, void, void>(int, bool);
template FusedPtr<Precision::fp64>::type fused_kernel<Precision::fp64, void, void>(int, bool);
template FusedPtr<Precision::tf32>::type fused_kernel<Precision::tf32, BandTf32, BandTf32>(int,
                                                                                         bool);

}  // namespace sep
}  // namespace cuda
}  // namespace tc
