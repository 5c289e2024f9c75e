// Experimental: naive_fixed's fp32 direct kernel along rows (harness benchmarks/naive_rows_harness.cu).
// A thread owns C consecutive outputs of one row; per kernel row u it loads the C + K - 1 image
// values of its window with 16-byte shared loads and does C K FFMAs whose coefficient is a
// uniform operand (K compiled in, the taps a launch parameter). Each run of RC kernel rows is
// summed apart, then the runs. Shared rows are padded by 4 floats per C columns so the 16-byte
// loads of a quarter warp hit distinct banks. Persistent CTAs, input tiles double-buffered by
// cp.async, outputs leave through a shared buffer in row-wise (coalesced) stores.
#pragma once
#include <cstdint>
#include <utility>

#include "async_copy.cuh"
#include "common.cuh"

namespace tc {
namespace cuda {
namespace nrows {

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

template <int K> struct Taps {
  float k[K * K];
};

template <int K, int C, int TX, int TY, int R = 1>
struct Shape {
  static constexpr int TW = TX * C, TH = TY * R, SH = TH + K - 1;
  static constexpr int NCH = (TW + K - 1 + 3) / 4;                // 16-byte chunks per tile row
  __host__ __device__ static constexpr int phys(int col) { return col + 4 * (col / C); }
  static constexpr int PW = phys(4 * (NCH - 1)) + 4;              // floats per staged row
  static constexpr int NV = (C + K - 1 + 3) / 4;                  // chunks per thread window
  static constexpr int OPW = phys(TW - 1) + 1;                    // floats per output row
  static constexpr int KP = (K + 3) / 4 * 4;                      // taps per shared kernel row
  static constexpr int in_floats = SH * PW, out_floats = TH * OPW;
  static constexpr std::size_t smem_bytes = 4u * (2 * in_floats + out_floats + K * KP);
};

// Work: the output's column strips (TW wide) laid end to end, oh rows each; CTA b walks rows
// [b W / G, (b + 1) W / G) of that W = strips * oh, TH rows a step (fewer at a strip's or its
// range's end), so CTAs finish together whatever oh is. LOOP (R = 1): the kernel rows are
// walked RC at a time by a loop (the taps read at a uniform index) instead of unrolled.
template <int K, int C, int TX, int TY, int R, int RC, int MINB, bool LOOP = false>
__global__ void __launch_bounds__(TX * TY, MINB)
    rows_kernel(const float* __restrict__ in, std::int64_t in_ld, int ih, int iw,
                float* __restrict__ out, std::int64_t out_ld, int oh, int ow, int strips,
                const __grid_constant__ Taps<K> t) {
  using S = Shape<K, C, TX, TY, R>;
  static_assert(!LOOP || R == 1, "the loop form takes one output row per thread");
  constexpr int NT = TX * TY, RPP = NT / S::NCH;  // staging: rows per pass of the thread map
  static_assert(RPP >= 1, "a tile row has more chunks than the block has threads");
  extern __shared__ float4 smem4[];
  float* const sm = reinterpret_cast<float*>(smem4);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  // staging map: thread tid copies chunk column ch of rows r0, r0 + RPP, ..
  const int ch = tid % S::NCH, r0 = tid / S::NCH;
  const bool stager = r0 < RPP;
  // LOOP: the taps in shared memory, one 16-byte broadcast load per 4 (read at a loop index
  // from the parameter bank, ptxas chose per-thread LDCs in one build and ULDCs in another)
  float* const wsm = sm + 2 * S::in_floats + S::out_floats;
  if constexpr (LOOP)
    for (int i = tid; i < K * S::KP; i += NT) {
      const int u = i / S::KP, v = i - u * S::KP;
      wsm[i] = v < K ? t.k[u * K + v] : 0.f;
    }

  const std::int64_t W = static_cast<std::int64_t>(strips) * oh;
  std::int64_t pos = W * blockIdx.x / gridDim.x;
  const std::int64_t end = W * (blockIdx.x + 1) / gridDim.x;
  // a step: its strip's first column, first row and rows (TH, fewer at a strip's or range's end)
  struct Step {
    int x0, y0, rows;
  };
  auto clip = [&](Step st, std::int64_t p) {
    std::int64_t n = oh - st.y0 < S::TH ? oh - st.y0 : S::TH;
    st.rows = static_cast<int>(n < end - p ? n : end - p);
    return st;
  };
  auto after = [&](Step st, std::int64_t p) {  // the step after st, which starts at p
    st.y0 += st.rows;
    if (st.y0 == oh) {
      st.y0 = 0;
      st.x0 += S::TW;
    }
    return clip(st, p + st.rows);
  };
  auto stage = [&](int x0, int y0, float* buf) {
    const int gx = x0 + 4 * ch;
    int bytes = 4 * (iw - gx);
    bytes = bytes < 0 ? 0 : (bytes > 16 ? 16 : bytes);
    if (stager) {
      const float* src = in + static_cast<std::int64_t>(y0 + r0) * in_ld + gx;
      float* dst = buf + r0 * S::PW + S::phys(4 * ch);
#pragma unroll 4
      for (int r = r0; r < S::SH; r += RPP, src += RPP * in_ld, dst += RPP * S::PW) {
        const int b = y0 + r < ih ? bytes : 0;
        cp_async_bytes(dst, b ? src : in, b);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };

  Step st{0, 0, 0};
  int cur = 0;
  if (pos < end) {
    const int strip = static_cast<int>(pos / oh);
    st = clip(Step{strip * S::TW, static_cast<int>(pos - static_cast<std::int64_t>(strip) * oh), 0}, pos);
    stage(st.x0, st.y0, sm);
  }
  while (pos < end) {
    const int x0 = st.x0, y0 = st.y0, rows = st.rows;
    if (pos + rows < end) {
      st = after(st, pos);
      stage(st.x0, st.y0, sm + (cur ^ 1) * S::in_floats);
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    }
    __syncthreads();  // this step is staged

    const float* sb = sm + cur * S::in_floats + ty * R * S::PW + tx * (C + 4);
    float acc[R][C], part[R][C];
    auto load_row = [&](const float* p, float* row) {
#pragma unroll
      for (int j = 0; j < S::NV; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(p + 4 * j + 4 * ((4 * j) / C));
        row[4 * j] = v.x;
        row[4 * j + 1] = v.y;
        row[4 * j + 2] = v.z;
        row[4 * j + 3] = v.w;
      }
    };
    if (ty * R < rows) {  // warps past the step's rows leave the issue slots to the others
      if constexpr (LOOP) {
#pragma unroll
        for (int c = 0; c < C; ++c) acc[0][c] = 0.f;
#pragma unroll 1
        for (int u0 = 0; u0 < K; u0 += RC) {
          static_for<RC>([&](auto du) {
            constexpr int d = decltype(du)::value;
            const int u = u0 + d;
            if (K % RC == 0 || u < K) {
              float row[4 * S::NV], w[S::KP];
              load_row(sb + u * S::PW, row);
#pragma unroll
              for (int j = 0; j < S::KP / 4; ++j) {
                const float4 q = *reinterpret_cast<const float4*>(wsm + u * S::KP + 4 * j);
                w[4 * j] = q.x;
                w[4 * j + 1] = q.y;
                w[4 * j + 2] = q.z;
                w[4 * j + 3] = q.w;
              }
#pragma unroll
              for (int c = 0; c < C; ++c) {
                float s = d == 0 ? row[c] * w[0] : fmaf(row[c], w[0], part[0][c]);
#pragma unroll
                for (int v = 1; v < K; ++v) s = fmaf(row[c + v], w[v], s);
                part[0][c] = s;
              }
            }
          });
#pragma unroll
          for (int c = 0; c < C; ++c) acc[0][c] += part[0][c];
        }
      } else {
        // image row i of the thread's window serves output row r with kernel row u = i - r
        static_for<K + R - 1>([&](auto ii) {
          constexpr int i = decltype(ii)::value;
          float row[4 * S::NV];
          load_row(sb + i * S::PW, row);
          static_for<R>([&](auto rr) {
            constexpr int r = decltype(rr)::value, u = i - r;
            if constexpr (u >= 0 && u < K) {
              constexpr bool first = u % RC == 0, last = u % RC == RC - 1 || u == K - 1;
#pragma unroll
              for (int c = 0; c < C; ++c) {
                float s = first ? row[c] * t.k[u * K] : fmaf(row[c], t.k[u * K], part[r][c]);
#pragma unroll
                for (int v = 1; v < K; ++v) s = fmaf(row[c + v], t.k[u * K + v], s);
                if constexpr (!last)
                  part[r][c] = s;
                else if constexpr (u < RC)
                  acc[r][c] = s;
                else
                  acc[r][c] += s;
              }
            }
          });
          asm volatile("" ::: "memory");  // keeps the next row's loads below these FFMAs
        });
      }
    }
    // outputs leave through shared memory in row-wise stores (direct 16-byte stores of a
    // thread's run were 1.6x slower at k = 3: a warp's stores then cover 2 KB at half sectors)
    float* const osm = sm + 2 * S::in_floats;
    if (ty * R < rows) {
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int c = 0; c < C; c += 4)
          *reinterpret_cast<float4*>(osm + (ty * R + r) * S::OPW + tx * (C + 4) + c) =
              make_float4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
    }
    __syncthreads();  // outputs in osm; this step's input is consumed (the next stage may land)
    static_assert(S::TW % NT == 0 || NT % S::TW == 0, "copy-out map");
    constexpr int CPR = S::TW < NT ? S::TW : NT, RPS = NT / CPR;  // columns, rows per pass
    const int col = tid % CPR, rr0 = tid / CPR;
#pragma unroll
    for (int cb = 0; cb < S::TW; cb += CPR) {
      if (x0 + cb + col < ow) {
        float* g = out + static_cast<std::int64_t>(y0 + rr0) * out_ld + x0 + cb + col;
        const float* o = osm + rr0 * S::OPW + S::phys(cb + col);
#pragma unroll
        for (int r = rr0; r < S::TH; r += RPS, g += RPS * out_ld, o += RPS * S::OPW)
          if (r < rows) *g = *o;
      }
    }
    pos += rows;
    cur ^= 1;
  }
}

}  // namespace nrows
}  // namespace cuda
}  // namespace tc
