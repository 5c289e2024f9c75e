// naive_shmem's fp32 variant for small square kernels (naive_fixed.cu): the kernel's shape is
// compiled in and the taps travel by value as a launch parameter, so each tap is a uniform FFMA
// operand (ULDC + FFMA R, R, UR, R) and the inner loop is FFMAs and 16-byte shared loads only.
//
// A thread owns two rows of C = 16 consecutive outputs. Per kernel row u and output row it
// loads the C + K - 1 image values of its window (8 LDS.128) and does C K FFMAs. Each run of
// RC = 3 kernel rows is summed apart, then the runs: short sums, as accurate as the older
// per-column sums (H100, 4096^2, k = 15: mean relative error 4.7e-6 %, a single chain 1.7e-5 %).
//
// Shared rows are padded by 4 floats per 16 columns, so a quarter warp's 16-byte loads hit
// distinct banks. Input steps are double-buffered by cp.async. Outputs leave through the step's
// consumed input buffer in row-wise 16-byte stores. CTAs are persistent and walk steps of TH
// rows (the last of a strip shorter): a share of one strip (TW wide, of one image of a stack),
// or a contiguous range of the steps of all the strips laid end to end (launch_grid chooses);
// each step follows the last without a division.
//
// k = 9 and 15 run Winograd F(2, 3) down the columns instead (Geo::WINO): a third fewer products.
//
// H100, 4096^2, kernel time (benchmarks/harness/naive_fixed_harness.cu, results/
// naive_fixed_harness_h100.txt, run 23): 0.061 / 0.061 / 0.066 / 0.078 / 0.102 / 0.130 / 0.164
// / 0.201 ms at k = 3 / 5 / .. / 17 (k = 9 and 15 direct; by Winograd 0.077 and 0.146, run 27),
// where the first kernel (R = 16 outputs down a column, 4-byte loads) took 0.070 / 0.087 / 0.098
// / 0.117 / 0.145 / 0.176 / 0.219 / 0.273.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>

#include "core/naive_fixed_rule.hpp"
#include "core/registry.hpp"
#include "cuda/runtime/async_copy.cuh"
#include "cuda/runtime/common.cuh"

namespace tc {
namespace cuda {

// Whether a naive_shmem plan takes this variant (naive_shmem.fixed: None where it fits; True
// refuses a plan it does not fit, naming why; False never), and its factory (naive_fixed.cu).
bool naive_fixed_applies(const PlanRequest& r);
std::unique_ptr<Plan> make_naive_fixed_plan(const PlanRequest& r);

namespace nfix {

// Calls f(std::integral_constant<int, I>) for I = 0..N-1: unrolled however long the body is
// (#pragma unroll gave up on the 15 x 240-FFMA bodies and indexed the taps at run time).
template <class F, int... I>
__device__ __forceinline__ void static_for(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  static_for(f, std::make_integer_sequence<int, N>{});
}

struct Args {
  const float* in;
  std::int64_t in_ld, in_bstride;
  int ih, iw;
  float* out;
  std::int64_t out_ld, out_bstride;
  int oh, ow;
  int strips;          // column strips per image
  int sps;             // steps per strip: ceil(oh / TH), the last one short
  std::int64_t work;   // strips * sps * images: the steps all CTAs share
  int per_strip;       // > 0: CTA b takes share b / S of strip b % S (S strips in all), so the
                       // CTAs running at once read whole image rows; 0: contiguous ranges of work
  bool wino_off;       // Geo::WINO kernels: every step direct (a transformed tap not finite)
};

// The taps, each kernel row padded to an even length so a pair of them is one 8-byte uniform load
// (ULDC.64) at a run's loop index. W: also the kernel rows' Winograd transform (Geo::WINO): group
// j of rows a, b, c = 3j, 3j+1, 3j+2 gives the rows a, (a + b + c) / 2, (a - b + c) / 2, c, at
// g[(4 j + i) KP ..].
template <int K, bool W = false> struct alignas(16) Taps {
  static constexpr int KP = K + K % 2, NG = K / 3;
  float k[K * KP];
  float g[W ? 4 * NG * KP : 1];
};
template <int K, bool W>
inline void fill_taps(Taps<K, W>& t, const double* kernel, bool& wino_ok) {
  constexpr int KP = Taps<K, W>::KP;
  wino_ok = W;
  for (int u = 0; u < K; ++u)
    for (int v = 0; v < KP; ++v)
      t.k[u * KP + v] = v < K ? static_cast<float>(kernel[u * K + v]) : 0.f;
  if constexpr (W) {
    for (int j = 0; j < K / 3; ++j)
      for (int v = 0; v < KP; ++v) {
        const double a = t.k[3 * j * KP + v], b = t.k[(3 * j + 1) * KP + v],
                     c = t.k[(3 * j + 2) * KP + v];
        const double row[4] = {a, (a + b + c) / 2, (a - b + c) / 2, c};
        for (int i = 0; i < 4; ++i) {
          t.g[(4 * j + i) * KP + v] = static_cast<float>(row[i]);
          if (!std::isfinite(t.g[(4 * j + i) * KP + v])) wino_ok = false;  // NaN/inf taps: direct
        }
      }
  }
}

// Geometry. A thread owns R = 2 rows of C = 16 outputs, so each kernel row's taps are read once
// for both. Up to k = 7 the kernel rows are unrolled (taps at compile-time offsets), 16 x 8
// threads; from k = 9 a loop walks them RC at a time, 8 x 32 threads (the unrolled bodies grew
// to 70-140 KB and stalled on instruction fetch: k = 15 0.212 against 0.169 ms). RC: a looped
// run's taps sit in uniform registers (63 a warp), so k = 17 takes runs of 2.
//
// WINO (the default at k = 9 and 15): Winograd F(2, 3) down the columns. The thread's two output
// rows are one pair and the kernel rows go in groups of three: per group, four combinations of
// its four input rows (r0 - r2, r1 + r2, r2 - r1, r1 - r3) are correlated along the row with the
// four transformed tap rows (Taps::g): 4 K products for 2 K outputs instead of 6 K, plus ~4
// additions per input value. Each group's sums go to the two outputs at once (the kernel's
// `wino`), so the sums stay short: mean relative error 5.0-5.8e-6 % against 4.3-4.7e-6 % direct
// (H100, 4096^2; fp32's bound is 1e-5 %). Kernel ms, H100: k = 15 4096^2 0.166 -> 0.146,
// 16384^2 2.38 -> 2.09; k = 9 0.080 -> 0.077, 1.039 -> 1.000. A column pair whose Winograd
// outputs are not both finite (a NaN/inf input, or an overflow) is redone direct, so NaN/inf
// follow scipy. Pairs are rows 2i, 2i + 1 of the plan's output: the bits hold under even row
// translations (the registry's translation_period), which tensorconv.dask's chunks keep.
template <int K, int R_ = 2, bool LOOP_ = (K >= 9), int TX_ = (LOOP_ ? 8 : 16),
          int TY_ = (LOOP_ ? 32 : 8), int RC_ = (K >= 17 ? 2 : 3),
          bool WINO_ = (naive_fixed_winograd(K) && R_ == 2 && LOOP_)>
struct Geo {
  static constexpr bool LOOP = LOOP_;
  static constexpr bool WINO = WINO_;
  static_assert(!WINO || (LOOP && R_ == 2 && K % 3 == 0), "Winograd: pairs of rows, groups of 3");
  static constexpr int C = 16, RC = RC_, R = R_, TX = TX_, TY = TY_, MINB = 2;
  static constexpr int NT = TX * TY, TW = TX * C, TH = TY * R, SH = TH + K - 1;
  static constexpr int NCH = (TW + K - 1 + 3) / 4;                // 16-byte chunks per tile row
  __host__ __device__ static constexpr int phys(int col) { return col + 4 * (col / C); }
  static constexpr int PW = phys(4 * (NCH - 1)) + 4;              // floats per staged row
  static constexpr int OPW = phys(TW - 1) + 1;                    // floats per output row
  static constexpr int NV = (C + K - 1 + 3) / 4;                  // chunks per thread window
  static constexpr int in_floats = SH * PW;
  static_assert(TH * OPW <= in_floats, "outputs fit the consumed input buffer");
  static constexpr std::size_t smem_bytes = 4u * 2 * in_floats;
  static constexpr int RPP = NT / NCH;                // staging: rows per pass of the chunk map
  static constexpr int CPR = TW / 4, RPS = NT / CPR;  // copy-out: 4 columns a thread
  static_assert(RPP >= 1 && NT % CPR == 0, "staging and copy-out maps");
};

// The launch's CTA count and work map for `batch` images of `a` (strips and oh set): sets
// a.sps, a.work and a.per_strip. `ctas`: the CTAs the GPU holds at once. map: 1 a share of one
// strip per CTA (when there are no more strips than CTAs), 0 contiguous ranges of the steps of
// all strips laid end to end, -1 choose:
// - The unrolled (small-k, memory-bound) geometry takes shares of one strip, so the CTAs running
//   at once read whole image rows: 16384^2 k = 3 0.946 against 1.033 ms.
// - The looped (compute-bound) geometry takes them only where no CTA then walks more steps than
//   with contiguous ranges, which keep every CTA slot busy: 4096^2 k = 15 (8 steps a CTA either
//   way) 0.164-0.166 against 0.167-0.170 ms; 16384^2 (128 against 125 steps) 2.44 against 2.37.
//   (benchmarks/harness/naive_fixed_harness.cu.)
template <class G>
inline int launch_grid(Args& a, std::int64_t batch, int ctas, int map = -1) {
  a.sps = ceil_div(a.oh, G::TH);
  const std::int64_t S = static_cast<std::int64_t>(a.strips) * batch;
  a.work = S * a.sps;
  a.per_strip = 0;
  if (map != 0 && S <= ctas) {
    const int shares = static_cast<int>(std::min<std::int64_t>(ctas / S, a.sps));
    if (map == 1 || !G::LOOP || ceil_div(a.sps, shares) <= ceil_div(a.work, ctas)) {
      a.per_strip = shares;
      return static_cast<int>(shares * S);
    }
  }
  return static_cast<int>(std::min<std::int64_t>(a.work, ctas));
}

// One output of the direct sum from the staged rows (sb: the thread's window, as in the kernel),
// in the direct body's order: runs of RC kernel rows chained, the runs added. Not inlined: only
// Winograd column pairs with a non-finite output take it.
template <int K, class G>
__device__ __noinline__ float direct_one(const float* sb, const float* k, int r, int c) {
  constexpr int KP = Taps<K, G::WINO>::KP;
  static_assert(K % G::RC == 0, "whole runs");
  float acc = 0.f;
  for (int u0 = 0; u0 < K; u0 += G::RC) {
    float s = 0.f;
    for (int d = 0; d < G::RC; ++d) {
      const float* row = sb + (r + u0 + d) * G::PW;
      const float* w = k + (u0 + d) * KP;
      for (int v = 0; v < K; ++v) {
        const int i = c + v;
        const float x = row[i + 4 * (i / G::C)];
        s = (d == 0 && v == 0) ? x * w[0] : fmaf(x, w[v], s);
      }
    }
    acc += s;
  }
  return acc;
}

// VEC: image rows 16-byte aligned, staged by cp.async; else through registers. A template
// argument, not a flag: with both paths in one kernel ptxas read the looped taps by per-thread
// LDCs instead of ULDCs (k = 15: 0.187 against 0.175 ms). So did k = 9 when the step walk's
// image, column and row were initialised before the first step. Check the SASS after changes
// here: cuobjdump -sass, no LDC c[0x0][R..] in the kernel-row loop.
template <int K, bool VEC, class G = Geo<K>>
__global__ void __launch_bounds__(G::NT, G::MINB)
    fixed_kernel(const Args a, const __grid_constant__ Taps<K, G::WINO> t) {
  constexpr int KP = Taps<K, G::WINO>::KP;
  extern __shared__ float4 smem4[];
  float* const sm = reinterpret_cast<float*>(smem4);
  const int tx = threadIdx.x % G::TX, ty = threadIdx.x / G::TX, tid = threadIdx.x;
  const int ch = tid % G::NCH, r0 = tid / G::NCH;
  const bool stager = r0 < G::RPP;

  // this CTA's steps [pos, end) of the strips of every image laid end to end, each TH rows
  // (the last of a strip shorter)
  std::int64_t pos, end;
  if (a.per_strip > 0) {
    const int S = gridDim.x / a.per_strip, part = blockIdx.x / S;
    const std::int64_t s0 = static_cast<std::int64_t>(blockIdx.x % S) * a.sps;
    pos = s0 + static_cast<std::int64_t>(a.sps) * part / a.per_strip;
    end = s0 + static_cast<std::int64_t>(a.sps) * (part + 1) / a.per_strip;
  } else {
    pos = a.work * blockIdx.x / gridDim.x;
    end = a.work * (blockIdx.x + 1) / gridDim.x;
  }
  auto step_rows = [&](int y0) { return a.oh - y0 < G::TH ? a.oh - y0 : G::TH; };
  auto stage = [&](int img, int x0, int y0, float* buf) {
    const float* in = a.in + img * a.in_bstride;
    const int gx = x0 + 4 * ch;
    if (stager) {
      const float* src = in + static_cast<std::int64_t>(y0 + r0) * a.in_ld + gx;
      float* dst = buf + r0 * G::PW + G::phys(4 * ch);
      if constexpr (VEC) {
        int bytes = 4 * (a.iw - gx);
        bytes = bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
#pragma unroll 4
        for (int r = r0; r < G::SH; r += G::RPP, src += G::RPP * a.in_ld, dst += G::RPP * G::PW) {
          const int b = y0 + r < a.ih ? bytes : 0;
          cp_async_bytes(dst, b ? src : in, b);
        }
      } else {
        for (int r = r0; r < G::SH; r += G::RPP, src += G::RPP * a.in_ld, dst += G::RPP * G::PW) {
          float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
          if (y0 + r < a.ih) {
            if (gx < a.iw) v.x = src[0];
            if (gx + 1 < a.iw) v.y = src[1];
            if (gx + 2 < a.iw) v.z = src[2];
            if (gx + 3 < a.iw) v.w = src[3];
          }
          *reinterpret_cast<float4*>(dst) = v;
        }
      }
    }
  };

  // the step after (img, x0, y0): the next TH rows of the strip, the next strip, or the next
  // image's first strip. Applied twice a step (to stage the next step, then to move to it), so
  // its coordinates are not held through the step's sums.
  auto next = [&](int& im, int& xx, int& yy) {
    yy += step_rows(yy);
    if (yy == a.oh) {
      yy = 0;
      xx += G::TW;
      if (xx >= a.ow) {
        xx = 0;
        ++im;
      }
    }
  };
  int img, x0, y0, cur = 0;
  int left = static_cast<int>(end - pos);  // steps still to walk (TH x TW pixels each: < 2^31)
  if (left > 0) {  // the first step: divisions; then each step follows the last
    const std::int64_t st = pos / a.sps;
    img = static_cast<int>(st / a.strips);
    x0 = static_cast<int>(st % a.strips) * G::TW;
    y0 = static_cast<int>(pos - st * a.sps) * G::TH;
    stage(img, x0, y0, sm);
  }
  while (left > 0) {
    const int rows = step_rows(y0);
    cp_async_wait_all();
    float* const buf = sm + cur * G::in_floats;
    __syncthreads();  // this step is staged; the last step's outputs have left the other buffer
    const bool direct = !G::WINO || a.wino_off;
    if (left > 1) {
      int nimg = img, nx0 = x0, ny0 = y0;
      next(nimg, nx0, ny0);
      stage(nimg, nx0, ny0, sm + (cur ^ 1) * G::in_floats);
    }
    const float* sb = buf + ty * G::R * G::PW + tx * (G::C + 4);
    float acc[G::R][G::C], part[G::R][G::C];
    auto load_row = [&](const float* p, float* row) {
#pragma unroll
      for (int j = 0; j < G::NV; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(p + 4 * j + 4 * ((4 * j) / G::C));
        row[4 * j] = v.x;
        row[4 * j + 1] = v.y;
        row[4 * j + 2] = v.z;
        row[4 * j + 3] = v.w;
      }
    };
    auto kernel_row = [&](const float* row, const float* w, bool first, float* pr) {
#pragma unroll
      for (int c = 0; c < G::C; ++c) {
        float s = first ? row[c] * w[0] : fmaf(row[c], w[0], pr[c]);
#pragma unroll
        for (int v = 1; v < K; ++v) s = fmaf(row[c + v], w[v], s);
        pr[c] = s;
      }
    };
    // kernel row u for every output row of the thread (its taps read once)
    auto one_row = [&](int u, bool first) {
#pragma unroll
      for (int r = 0; r < G::R; ++r) {
        float row[4 * G::NV];
        load_row(sb + (r + u) * G::PW, row);
        kernel_row(row, t.k + u * KP, first, part[r]);
      }
    };
    auto add_run = [&] {
#pragma unroll
      for (int r = 0; r < G::R; ++r)
#pragma unroll
        for (int c = 0; c < G::C; ++c) acc[r][c] += part[r][c];
    };
    // Winograd F(2, 3) down the columns (Geo::WINO): per group of kernel rows, the sums s_i of
    // the four row combinations, added as acc0 += s0, acc1 -= s3, acc0 += s1 + s2,
    // acc1 += s1 - s2. Combinations 1 and 2 share their rows r1, r2 and are summed side by side.
    auto wino = [&] {
      auto chain = [&](const float* x, const float* w, int c) {
        float s = x[c] * w[0];
#pragma unroll
        for (int v = 1; v < K; ++v) s = fmaf(x[c + v], w[v], s);
        return s;
      };
      // x = row a - row b
      auto diff = [&](const float* pa, const float* pb, float* x) {
        load_row(pa, x);
#pragma unroll
        for (int q = 0; q < G::NV; ++q) {
          const float4 v = *reinterpret_cast<const float4*>(pb + 4 * q + 4 * ((4 * q) / G::C));
          x[4 * q] -= v.x, x[4 * q + 1] -= v.y, x[4 * q + 2] -= v.z, x[4 * q + 3] -= v.w;
        }
      };
#pragma unroll 1
      for (int j = 0; j < K / 3; ++j) {
        const float* p = sb + 3 * j * G::PW;
        const float* g = t.g + 4 * j * KP;
        {
          float x[4 * G::NV];
          diff(p, p + 2 * G::PW, x);  // r0 - r2
#pragma unroll
          for (int c = 0; c < G::C; ++c) acc[0][c] += chain(x, g, c);
          diff(p + G::PW, p + 3 * G::PW, x);  // r1 - r3
#pragma unroll
          for (int c = 0; c < G::C; ++c) acc[1][c] -= chain(x, g + 3 * KP, c);
        }
        float x1[4 * G::NV], x2[4 * G::NV];
        load_row(p + G::PW, x1);
        load_row(p + 2 * G::PW, x2);
#pragma unroll
        for (int q = 0; q < 4 * G::NV; ++q) {  // r1 + r2, r2 - r1
          const float r1 = x1[q];
          x1[q] = r1 + x2[q];
          x2[q] = x2[q] - r1;
        }
#pragma unroll
        for (int c = 0; c < G::C; ++c) {
          const float s1 = chain(x1, g + KP, c);
          float s12 = s1;  // s1 + s2 in one chain, and s1 - s2 = 2 s1 - (s1 + s2): one FADD less
#pragma unroll
          for (int v = 0; v < K; ++v) s12 = fmaf(x2[c + v], g[2 * KP + v], s12);
          acc[0][c] += s12;
          acc[1][c] += fmaf(2.f, s1, -s12);
        }
      }
    };
    const bool active = ty * G::R < rows;
    auto body = [&](bool dir) {
#pragma unroll
      for (int r = 0; r < G::R; ++r)
#pragma unroll
        for (int c = 0; c < G::C; ++c) acc[r][c] = 0.f;
      if (G::WINO && !dir) {
        wino();
      } else if constexpr (G::LOOP) {
        constexpr int NR = K / G::RC * G::RC;
#pragma unroll 1
        for (int u0 = 0; u0 < NR; u0 += G::RC) {
          static_for<G::RC>([&](auto du) {
            constexpr int d = decltype(du)::value;
            one_row(u0 + d, d == 0);
          });
          add_run();
        }
        if constexpr (NR < K) {
          static_for<K - NR>([&](auto du) {
            constexpr int u = NR + decltype(du)::value;
            one_row(u, u == NR);
          });
          add_run();
        }
      } else {
        static_for<K>([&](auto uu) {
          constexpr int u = decltype(uu)::value;
          one_row(u, u % G::RC == 0);
          if constexpr (u % G::RC == G::RC - 1 || u == K - 1) add_run();
          asm volatile("" ::: "memory");
        });
      }
    };
    if (active) body(direct);
    if constexpr (G::WINO) {
      // A NaN/inf in a column pair's window, or a Winograd sum that overflowed, leaves one of
      // its two outputs non-finite (NaN/inf pass through every FFMA); that pair alone is redone
      // direct, whose NaN/inf follow scipy (Winograd's would not: r1 + r2 and r2 - r1 turn one
      // inf into inf - inf in the pair's other output). Per pair, not per thread or step, so
      // the outputs do not depend on where the pair sits in the step (even row translations
      // keep every bit, tensorconv.dask's chunks among them). The input buffer is intact here.
      if (active && !direct) {
#pragma unroll
        for (int c = 0; c < G::C; ++c) {
          if (!(fabsf(acc[0][c]) <= FLT_MAX && fabsf(acc[1][c]) <= FLT_MAX)) {  // NaN: false
#pragma unroll
            for (int r = 0; r < G::R; ++r) acc[r][c] = direct_one<K, G>(sb, t.k, r, c);
          }
        }
      }
    }
    __syncthreads();  // this step's input is consumed: its buffer takes the outputs
    if (active) {
#pragma unroll
      for (int r = 0; r < G::R; ++r)
#pragma unroll
        for (int c = 0; c < G::C; c += 4)
          *reinterpret_cast<float4*>(buf + (ty * G::R + r) * G::OPW + tx * (G::C + 4) + c) =
              make_float4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
    }
    __syncthreads();  // outputs in the buffer
    {
      const int c4 = 4 * (tid % G::CPR), rr0 = tid / G::CPR, gx = x0 + c4;
      if (gx < a.ow) {
        float* g = a.out + img * a.out_bstride + static_cast<std::int64_t>(y0 + rr0) * a.out_ld + gx;
        const float* o = buf + rr0 * G::OPW + G::phys(c4);
        const bool whole = gx + 4 <= a.ow;
#pragma unroll 2
        for (int r = rr0; r < rows; r += G::RPS, g += G::RPS * a.out_ld, o += G::RPS * G::OPW) {
          const float4 v = *reinterpret_cast<const float4*>(o);
          const unsigned al = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(g)) & 15u;
          if (whole && al == 0) {
            *reinterpret_cast<float4*>(g) = v;
          } else if (whole && al == 8) {
            *reinterpret_cast<float2*>(g) = make_float2(v.x, v.y);
            *reinterpret_cast<float2*>(g + 2) = make_float2(v.z, v.w);
          } else {
            g[0] = v.x;
            if (gx + 1 < a.ow) g[1] = v.y;
            if (gx + 2 < a.ow) g[2] = v.z;
            if (gx + 3 < a.ow) g[3] = v.w;
          }
        }
      }
    }
    --left;
    next(img, x0, y0);
    cur ^= 1;
  }
}

}  // namespace nfix
}  // namespace cuda
}  // namespace tc
