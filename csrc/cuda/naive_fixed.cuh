// naive_shmem's fp32 variant for small square kernels (naive_fixed.cu): the kernel's shape is
// compiled in and the taps travel by value as a launch parameter, so each tap is a uniform FFMA
// operand (ULDC + FFMA R, R, UR, R) and the inner loop is FFMAs and 16-byte shared loads only.
//
// A thread owns C = 16 consecutive outputs of one row. Per kernel row u it loads the C + K - 1
// image values of its window (8 LDS.128) and does C K FFMAs. Each run of RC = 3 kernel rows is
// summed apart, then the runs: short sums, as accurate as the old per-column sums (H100, 4096^2,
// k = 15: mean relative error 4.7e-6 % against a single chain's 1.7e-5 %).
//
// Shared rows are padded by 4 floats per 16 columns, so a quarter warp's 16-byte loads hit
// distinct banks. Input tiles are double-buffered by cp.async. Outputs leave through a shared
// buffer in row-wise stores. CTAs are persistent: the output's column strips (TW wide, of every
// image of a stack) are laid end to end, oh rows each, and CTA b walks its share of those rows
// TH at a time, so all CTAs finish together whatever the image height.
//
// H100, 4096^2, kernel time (benchmarks/naive_fixed_harness.cu, results/
// naive_fixed_harness_h100.txt, run 9): 0.070 / 0.082 / 0.109 / 0.143 / 0.177 / 0.220 ms at
// k = 3 / 9 / 11 / 13 / 15 / 17, where the column kernel before it (R = 16 outputs down a
// column, 4-byte loads) took 0.070 / 0.117 / 0.145 / 0.176 / 0.219 / 0.273.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>

#include "../core/registry.hpp"
#include "async_copy.cuh"
#include "common.cuh"

namespace tc {
namespace cuda {

constexpr int kNaiveFixedMaxTaps = 17;  // beyond, fft (rows) is the faster fp32 method
// Whether a naive_shmem plan takes this variant (naive_shmem.fixed: None where it fits; True
// refuses a plan it does not fit, naming why; False never), and its factory (naive_fixed.cu).
bool naive_fixed_applies(const PlanRequest& r);
std::unique_ptr<Plan> make_naive_fixed_plan(const PlanRequest& r);

namespace nfix {

template <int K> struct Taps {
  float k[K * K];
};

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

// Geometry. Up to k = 13 the kernel rows are unrolled (taps at compile-time offsets), 16 x 16
// threads; from k = 15 a loop walks them RC at a time (~5x less code: the unrolled k = 15 body
// is 72 KB and stalled on instruction fetch, 0.192 against 0.175 ms), 8 x 32 threads.
template <int K>
struct Geo {
  static constexpr bool LOOP = K >= 15;
  // RC: a looped run's taps are read into uniform registers (63 a warp): 3 runs of 17 spilled
  // to per-thread LDCs, so k = 17 takes runs of 2
  static constexpr int C = 16, RC = K >= 17 ? 2 : 3, TX = LOOP ? 8 : 16, TY = LOOP ? 32 : 16;
  static constexpr int MINB = 2;
  static constexpr int NT = TX * TY, TW = TX * C, TH = TY, SH = TH + K - 1;
  static constexpr int NCH = (TW + K - 1 + 3) / 4;                // 16-byte chunks per tile row
  __host__ __device__ static constexpr int phys(int col) { return col + 4 * (col / C); }
  static constexpr int PW = phys(4 * (NCH - 1)) + 4;              // floats per staged row
  static constexpr int OPW = phys(TW - 1) + 1;                    // floats per output row
  static constexpr int NV = (C + K - 1 + 3) / 4;                  // chunks per thread window
  static constexpr int in_floats = SH * PW, out_floats = TH * OPW;
  static constexpr std::size_t smem_bytes = 4u * (2 * in_floats + out_floats);
  static constexpr int RPP = NT / NCH;  // staging: rows per pass of the thread -> chunk map
  static_assert(RPP >= 1 && NT % TW == 0, "staging and copy-out maps");
};

struct Args {
  const float* in;
  std::int64_t in_ld, in_bstride;
  int ih, iw;
  float* out;
  std::int64_t out_ld, out_bstride;
  int oh, ow;
  int strips;          // column strips per image
  std::int64_t work;   // strips * oh * images: the rows all CTAs share
};

// VEC: image rows 16-byte aligned, staged by cp.async; else through registers. A template
// argument, not a flag: with both paths in one kernel ptxas read the looped taps by per-thread
// LDC instead of ULDC (k = 15: 0.187 against 0.175 ms).
template <int K, bool VEC, class G = Geo<K>>
__global__ void __launch_bounds__(G::NT, G::MINB)
    fixed_kernel(const Args a, const __grid_constant__ Taps<K> t) {
  extern __shared__ float4 smem4[];
  float* const sm = reinterpret_cast<float*>(smem4);
  const int tx = threadIdx.x % G::TX, ty = threadIdx.x / G::TX, tid = threadIdx.x;
  const int ch = tid % G::NCH, r0 = tid / G::NCH;  // staging: chunk column ch of rows r0 + RPP j
  const bool stager = r0 < G::RPP;

  std::int64_t pos = a.work * blockIdx.x / gridDim.x;
  const std::int64_t end = a.work * (blockIdx.x + 1) / gridDim.x;
  // the step at p: its image, first column and row, and rows (TH, fewer at a strip's or the
  // CTA's range's end)
  auto step_at = [&](std::int64_t p, int& img, int& x0, int& y0) {
    const std::int64_t st = p / a.oh;
    const int strip = static_cast<int>(st % a.strips);
    img = static_cast<int>(st / a.strips);
    y0 = static_cast<int>(p - st * a.oh);
    x0 = strip * G::TW;
    std::int64_t n = a.oh - y0;
    n = n < G::TH ? n : G::TH;
    return static_cast<int>(n < end - p ? n : end - p);
  };
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
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };

  int img, x0, y0, rows = 0, cur = 0;
  if (pos < end) {
    rows = step_at(pos, img, x0, y0);
    stage(img, x0, y0, sm);
  }
  while (pos < end) {
    int nimg, nx0, ny0, nrows = 0;
    if (pos + rows < end) {
      nrows = step_at(pos + rows, nimg, nx0, ny0);
      stage(nimg, nx0, ny0, sm + (cur ^ 1) * G::in_floats);
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    }
    __syncthreads();  // this step is staged; the last step's outputs have left osm

    const float* sb = sm + cur * G::in_floats + ty * G::PW + tx * (G::C + 4);
    float acc[G::C], part[G::C];
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
    // one run of kernel rows u = u0 + d, d < RC: part holds its sums
    auto kernel_row = [&](const float* row, const float* w, bool first) {
#pragma unroll
      for (int c = 0; c < G::C; ++c) {
        float s = first ? row[c] * w[0] : fmaf(row[c], w[0], part[c]);
#pragma unroll
        for (int v = 1; v < K; ++v) s = fmaf(row[c + v], w[v], s);
        part[c] = s;
      }
    };
    if (ty < rows) {  // warps past the step's rows leave the issue slots to the others
#pragma unroll
      for (int c = 0; c < G::C; ++c) acc[c] = 0.f;
      if constexpr (G::LOOP) {
        constexpr int NR = K / G::RC * G::RC;  // rows in whole runs, walked by the loop
#pragma unroll 1
        for (int u0 = 0; u0 < NR; u0 += G::RC) {
          static_for<G::RC>([&](auto du) {
            constexpr int d = decltype(du)::value;
            float row[4 * G::NV];
            load_row(sb + (u0 + d) * G::PW, row);
            kernel_row(row, t.k + (u0 + d) * K, d == 0);
          });
#pragma unroll
          for (int c = 0; c < G::C; ++c) acc[c] += part[c];
        }
        if constexpr (NR < K) {  // the last, shorter run
          static_for<K - NR>([&](auto du) {
            constexpr int u = NR + decltype(du)::value;
            float row[4 * G::NV];
            load_row(sb + u * G::PW, row);
            kernel_row(row, t.k + u * K, u == NR);
          });
#pragma unroll
          for (int c = 0; c < G::C; ++c) acc[c] += part[c];
        }
      } else {
        static_for<K>([&](auto uu) {
          constexpr int u = decltype(uu)::value;
          float row[4 * G::NV];
          load_row(sb + u * G::PW, row);
          kernel_row(row, t.k + u * K, u % G::RC == 0);
          if constexpr (u % G::RC == G::RC - 1 || u == K - 1) {
#pragma unroll
            for (int c = 0; c < G::C; ++c) acc[c] += part[c];
          }
          asm volatile("" ::: "memory");  // keeps the next row's loads below these FFMAs
        });
      }
    }
    // outputs leave through shared memory in row-wise stores (a thread's 16-byte stores of its
    // own run were 1.6x slower at k = 3: a warp's stores then cover 2 KB in half sectors)
    float* const osm = sm + 2 * G::in_floats;
    if (ty < rows) {
#pragma unroll
      for (int c = 0; c < G::C; c += 4)
        *reinterpret_cast<float4*>(osm + ty * G::OPW + tx * (G::C + 4) + c) =
            make_float4(acc[c], acc[c + 1], acc[c + 2], acc[c + 3]);
    }
    __syncthreads();  // outputs in osm; this step's input is consumed (the next stage may land)
    constexpr int RPS = G::NT / G::TW;  // copy-out: thread tid takes column tid % TW
    const int col = tid % G::TW, rr0 = tid / G::TW;
    if (x0 + col < a.ow) {
      float* g = a.out + img * a.out_bstride + static_cast<std::int64_t>(y0 + rr0) * a.out_ld +
                 x0 + col;
      const float* o = osm + rr0 * G::OPW + G::phys(col);
#pragma unroll
      for (int r = rr0; r < G::TH; r += RPS, g += RPS * a.out_ld, o += RPS * G::OPW)
        if (r < rows) *g = *o;
    }
    pos += rows;
    rows = nrows;
    img = nimg;
    x0 = nx0;
    y0 = ny0;
    cur ^= 1;
  }
}

}  // namespace nfix
}  // namespace cuda
}  // namespace tc
