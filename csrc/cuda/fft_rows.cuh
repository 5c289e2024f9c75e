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
// The DC column (v = 0) carries almost all of an output's magnitude for positive data (the mean
// times the kernel sum) and, rounded in T, most of fp32's error. With dc given, it is summed in
// float64 (taps kdc[s] = sum_t k[s][t] / W), written to dc[y] instead of O, and O[y][0] = 0: the
// C2R then transforms only the small rest, and the crop adds dc[y] in float64. On the H100
// (benchmarks/fft_hybrid.cu, U[0, 1) image and kernel) fp32 MAPE 2.1-6.8e-6 % with it against
// 0.76-1.15e-5 % without; an R2C or C2R in fp64 instead, or rows centred before the R2C, gained
// nothing more.
#pragma once
#include <cstdint>

#include "common.cuh"
#include "nonfinite.cuh"

namespace tc {
namespace cuda {
namespace fftrows {

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
// not finite (the plan's repair then recomputes those outputs directly). kdc and dc: both or
// neither (above).
template <class T, int R, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) correlate_down(
    const typename Cx<T>::type* __restrict__ a, std::int64_t lda, int h_in, int mc,
    const typename Cx<T>::type* __restrict__ g, std::int64_t ldg, int kp,
    typename Cx<T>::type* __restrict__ o, std::int64_t ldo, int oh, int* nf,
    const double* __restrict__ kdc = nullptr, double* __restrict__ dc = nullptr) {
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
  if (dc != nullptr && blockIdx.x == 0) {
    if (lane < R) {  // lane r: the DC of output row j0 + r, in float64
      const int y = y0 + j0 + lane;
      double sum = 0;
      for (int t = 0; t < kp; ++t)  // kdc: kp taps, zeros past kh
        sum = fma(static_cast<double>(seg[(j0 + lane + t) * 32].x), kdc[t], sum);
      if (y < oh) dc[y] = sum;
    }
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] = C{0, 0};
    }
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

// out[y][x] = buf[y][x] + dc[y] (in float64, rounded once), the first `cols` values of each row.
template <class T>
__global__ void crop_dc(const T* __restrict__ buf, int w, const double* __restrict__ dc,
                        T* __restrict__ out, std::int64_t stride, int rows, int cols, int* nf) {
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    const double d = dc[y];
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < cols; x += gridDim.x * blockDim.x) {
      const T v = static_cast<T>(static_cast<double>(buf[static_cast<std::int64_t>(y) * w + x]) + d);
      out[y * stride + x] = v;
      mark_nonfinite(nf, v);
    }
  }
}

}  // namespace fftrows
}  // namespace cuda
}  // namespace tc
