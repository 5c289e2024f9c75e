// The product step of "fft" by rows (fft.cu, FftRowsPlan): after a 1-D R2C along every image
// row, column v of the row spectra, A[y][v], is correlated down y with the kernel rows' spectra:
//   O[y][v] = sum_s A[y + s][v] G[s][v],  G[s][v] = conj(sum_t k[s][t] e^{-2 pi i v t / W}) / W.
// A 1-D C2R along every row of O then gives the valid correlation in each row's first
// W - kw + 1 values (the circular wrap only reaches the last kw - 1). kh complex taps per output
// instead of a second transform pair: A is read and O written once each.
//
// One block: 32 spectrum columns (the lanes: coalesced rows) x WARPS warps, each warp R
// consecutive output rows, so Y = WARPS R rows per block. The block's Y + kp input rows and its
// kp tap rows are staged in shared memory; a thread walks the taps R at a time with the 2R - 1
// inputs of a step in registers: 4 R^2 FMAs per 3R - 1 shared loads.
//
// The lowest columns carry almost all of an output's magnitude for natural images (the DC: the
// mean times the kernel sum; then the slow shading along a row), and, rounded in T through the
// product and the C2R, most of fp32's error. Columns v < nl (nl <= V, the template's bound) are
// therefore summed in float64 (taps glo[s][v] = G[s][v] in float64), written to low[y][v]
// instead of O, and O[y][v] = 0: the C2R transforms only the rest, and the crop adds
// low[y][0] + 2 Re sum_{0<v<nl} low[y][v] e^{2 pi i v x / W} in float64. fp32 keeps V = 8, fp64
// the DC alone (V = 1). USC-SIPI 4.1.01 resized to 2048^2, k = 25 (NumPy model of the steps,
// median relative error against float64): 1.09e-5 % with no column in float64, 6.6e-6 % with
// the DC, 4.1e-6 % with 4 columns, 3.4e-6 % with 8, 2.9e-6 % with 16 (fp32's own output
// rounding: 2.0e-6 %). On U[0, 1) data the DC alone reaches that floor.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cuda/runtime/common.cuh"
#include "cuda/runtime/nonfinite.cuh"

namespace tc {
namespace cuda {
namespace fftrows {

constexpr int kCropThreads = 256, kCropValues = 4;  // crop_low: block, values per thread

template <class T> struct Cx;
template <> struct Cx<float> { using type = float2; };
template <> struct Cx<double> { using type = double2; };

template <class C>
__device__ __forceinline__ void cmac(C& acc, C a, C g) {
  acc.x = fma(a.x, g.x, fma(-a.y, g.y, acc.x));
  acc.y = fma(a.x, g.y, fma(a.y, g.x, acc.y));
}

template <class T, int R, int WARPS>
struct Geometry {
  static constexpr int kRows = WARPS * R;  // output rows per block
  static constexpr int kThreads = WARPS * 32;
  // shared memory: (Y + kp) input rows and kp tap rows of 32 complex values
  static constexpr std::size_t smem_bytes(int kp) {
    return sizeof(typename Cx<T>::type) * 32 * std::size_t(kRows + 2 * kp);
  }
  static dim3 grid(int mc, int oh) { return dim3((mc + 31) / 32, (oh + kRows - 1) / kRows); }
};

// a: h_in rows of mc spectrum values (pitch lda); g: kp tap rows (pitch ldg; rows past kh are
// zeros, kp a multiple of R); o: oh rows (pitch ldo). nf (may be null): set when an output is
// not finite (the plan's repair then recomputes those outputs directly). glo, low and nl: all
// or none (above).
template <class T, int R, int WARPS, int V>
__global__ void __launch_bounds__(WARPS * 32) correlate_down(
    const typename Cx<T>::type* __restrict__ a, std::int64_t lda, int h_in, int mc,
    const typename Cx<T>::type* __restrict__ g, std::int64_t ldg, int kp,
    typename Cx<T>::type* __restrict__ o, std::int64_t ldo, int oh, int* nf,
    const double2* __restrict__ glo = nullptr, double2* __restrict__ low = nullptr, int nl = 0) {
  static_assert(V >= 1 && V <= 32, "the low columns are lanes of the first block column");
  static_assert(R % 2 == 0, "the low columns are summed two rows at a time");
  using C = typename Cx<T>::type;
  constexpr int Y = WARPS * R;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  C* seg = reinterpret_cast<C*>(smem_raw);
  C* taps = seg + (Y + kp) * 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int v = blockIdx.x * 32 + lane;
  const bool live = v < mc;
  const int y0 = blockIdx.y * Y;
  for (int r = warp; r < Y + kp; r += WARPS) {
    const int y = y0 + r;
    seg[r * 32 + lane] = live && y < h_in ? a[y * lda + v] : C{0, 0};
  }
  for (int t = warp; t < kp; t += WARPS) taps[t * 32 + lane] = live ? g[t * ldg + v] : C{0, 0};
  __syncthreads();
  C acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = C{0, 0};
  const int j0 = warp * R;
  for (int t0 = 0; t0 < kp; t0 += R) {
    C w[2 * R - 1];
#pragma unroll
    for (int c = 0; c < 2 * R - 1; ++c) w[c] = seg[(j0 + t0 + c) * 32 + lane];
#pragma unroll
    for (int s = 0; s < R; ++s) {
      const C gg = taps[(t0 + s) * 32 + lane];
#pragma unroll
      for (int r = 0; r < R; ++r) cmac(acc[r], w[r + s], gg);
    }
  }
  if (low != nullptr && blockIdx.x == 0 && lane < nl) {  // column v = lane, in float64
    // two rows at a time: R float64 accumulators would cost every thread registers
#pragma unroll 1
    for (int r = 0; r < R; r += 2) {
      double2 s0{0, 0}, s1{0, 0};
      for (int t = 0; t < kp; ++t) {  // glo: kp tap rows of V, zeros past kh
        const double2 gg = glo[t * V + lane];
        const C x0 = seg[(j0 + r + t) * 32 + lane], x1 = seg[(j0 + r + 1 + t) * 32 + lane];
        cmac(s0, double2{x0.x, x0.y}, gg);
        cmac(s1, double2{x1.x, x1.y}, gg);
      }
      const int y = y0 + j0 + r;
      if (y < oh) low[y * V + lane] = s0;
      if (y + 1 < oh) low[(y + 1) * V + lane] = s1;
    }
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = C{0, 0};
  }
  if (!live) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int y = y0 + j0 + r;
    if (y < oh) {
      o[y * ldo + v] = acc[r];
      if (nf != nullptr && (nonfinite(acc[r].x) || nonfinite(acc[r].y))) *nf = 1;
    }
  }
}

// out[y][x] = buf[y][x] + low[y][0] + 2 Re sum_{0<v<V} low[y][v] z^v, z = tw[x] = e^{2 pi i x / W}
// (Horner in float64, rounded once), the first `cols` values of each row. low's columns past the
// plan's nl are zeros. A thread takes P values of a row (independent Horner chains) and a block
// several rows, with the row's low terms loaded once: one value per thread in one-row blocks
// was latency-bound (H100, 4096^2 fp32: 0.18 ms with V = 8 where the DC alone took 0.07).
template <class T, int V, int P = kCropValues>
__global__ void __launch_bounds__(kCropThreads) crop_low(
    const T* __restrict__ buf, int w, const double2* __restrict__ low,
    const double2* __restrict__ tw, T* __restrict__ out, std::int64_t stride, int rows, int cols,
    int* nf) {
  constexpr int span = kCropThreads * P;
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    double2 L[V];
#pragma unroll
    for (int v = 0; v < V; ++v) L[v] = low[static_cast<std::int64_t>(y) * V + v];
    const T* src = buf + static_cast<std::int64_t>(y) * w;
    T* dst = out + y * stride;
    for (int x0 = blockIdx.x * span + threadIdx.x; x0 < cols; x0 += gridDim.x * span) {
      double b[P];
      double2 z[P];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const int x = x0 + p * kCropThreads;
        b[p] = x < cols ? static_cast<double>(src[x]) : 0.0;
        if constexpr (V > 1) z[p] = x < cols ? tw[x] : double2{0, 0};
      }
#pragma unroll
      for (int p = 0; p < P; ++p) {
        double s = L[0].x;
        if constexpr (V > 1) {
          double hx = L[V - 1].x, hy = L[V - 1].y;
#pragma unroll
          for (int v = V - 2; v >= 1; --v) {
            const double nx = fma(hx, z[p].x, fma(-hy, z[p].y, L[v].x));
            hy = fma(hx, z[p].y, fma(hy, z[p].x, L[v].y));
            hx = nx;
          }
          s = fma(2.0, fma(hx, z[p].x, -hy * z[p].y), s);
        }
        const int x = x0 + p * kCropThreads;
        if (x < cols) {
          const T v = static_cast<T>(b[p] + s);
          dst[x] = v;
          mark_nonfinite(nf, v);
        }
      }
    }
  }
}

// crop_low's grid: the columns of a row in blocks of kCropThreads * kCropValues, about `blocks` in
// all (what the GPU holds at once: the rows are then shared out evenly, with no tail wave).
inline dim3 crop_grid(int rows, int cols, int blocks) {
  constexpr int span = kCropThreads * kCropValues;
  const int gx = (cols + span - 1) / span;
  const int gy = std::min(rows, std::min(65535, std::max(1, blocks / gx)));
  return dim3(gx, gy);
}

// The blocks of crop_low<T, V> that `device` holds at once.
template <class T, int V>
int crop_blocks(int device) {
  int per_sm = 0, sms = 0;
  TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, crop_low<T, V>,
                                                              kCropThreads, 0));
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, per_sm) * std::max(1, sms);
}

}  // namespace fftrows
}  // namespace cuda
}  // namespace tc
