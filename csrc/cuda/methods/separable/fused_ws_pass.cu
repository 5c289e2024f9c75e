// separable's warp-specialized fused pass (fp32 from 25 taps on sm_90): FFMA row pass and
// fp64-MMA column pass in separate warps.
#include "cuda/methods/separable/fused.cuh"

namespace tc {
namespace cuda {
namespace sep {

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
// staging after the set-up); this code in the benchmark: 0.074 / 0.084 / 0.098 (benchmarks/results/gpu_core_h100.md).
namespace ws {
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

namespace {
template <Precision P, class CM, int NC = 1>
auto fused_ws_kernel_nc(int nc) -> decltype(&fused_ws_pass<P, 1, CM>) {
  if constexpr (NC < FMAX / FCH) {
    if (nc > NC) return fused_ws_kernel_nc<P, CM, NC + 1>(nc);
  }
  return &fused_ws_pass<P, NC, CM>;
}
}  // namespace

template <Precision P, class CM>
typename FusedPtr<P>::type fused_ws_kernel(int nc) {
  return fused_ws_kernel_nc<P, CM>(nc);
}

template FusedPtr<Precision::fp32>::type fused_ws_kernel<Precision::fp32, BandF64>(int);

}  // namespace sep
}  // namespace cuda
}  // namespace tc
