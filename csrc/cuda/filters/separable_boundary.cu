// A separable 2-D filter in one launch with scipy.ndimage's boundary modes built in: each block
// stages its output tile plus the halo straight from the unpadded image (boundary modes as index
// maps, cval for 'constant'), filters axis 0 (columns) into shared memory, then axis 1 (rows),
// and writes the tile once: one read and one write of the image, no padding buffer, no strips.
// tensorconv.filters.gaussian's GPU path (the registry's `separable` plan needs a padded input).
//
// scipy's semantics, reproduced: axis 0 first, then axis 1 on that result; in 'constant' mode
// the second pass sees cval outside the image (not the first pass applied to cval). For the other
// modes the second pass's extension of the intermediate equals the first pass over the extended
// columns, so the halo columns are filtered like the others. Tiny images repeat the reflection
// (period 2n for reflect, 2n - 2 for mirror), as scipy's line extension does.
//
// Arithmetic: taps in chunks of C (zero-padded weights), each thread R outputs of a column (axis
// 0) or of a row (axis 1) with the R + C - 1 inputs it needs in registers, so a shared-memory load
// feeds ~R*C/(R+C) FMAs. float32 sums in fp32, float64 in fp64.
//
// Large radii: the block's tile rows shrink (64 -> 32 -> 16) to fit shared memory; beyond what
// 16 rows fit (float32 r ~ 90, float64 r ~ 60), separable_boundary_supported() says no and the
// caller takes the strips + `separable` path.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "../common.cuh"
#include "separable_boundary.hpp"

namespace tc {
namespace cuda {
namespace sepb {

constexpr int kTW = 64;       // output tile width
constexpr int kR = 8;         // outputs per thread and pass
constexpr int kThreads = 256;

// Source index of position g along an axis of n, or -1 (constant mode, outside).
__device__ __forceinline__ int map_index(int g, int n, int mode) {
  if (static_cast<unsigned>(g) < static_cast<unsigned>(n)) return g;
  switch (mode) {
    case 1: return -1;                        // constant
    case 2: return g < 0 ? 0 : n - 1;         // nearest
    case 4: { int m = g % n; return m < 0 ? m + n : m; }  // wrap
    case 0: {                                 // reflect: d c b a | a b c d, period 2n
      const int p = 2 * n;
      int m = g % p;
      if (m < 0) m += p;
      return m < n ? m : p - 1 - m;
    }
    default: {                                // mirror: d c b | a b c d, period 2n - 2
      if (n == 1) return 0;
      const int p = 2 * n - 2;
      int m = g % p;
      if (m < 0) m += p;
      return m < n ? m : p - m;
    }
  }
}

__device__ __forceinline__ void cp_async_elem(float* s, const float* g) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_elem(double* s, const double* g) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(a), "l"(g) : "memory");
}

__host__ __device__ constexpr int round_up(int a, int b) { return (a + b - 1) / b * b; }

// Shared-memory plan of one block (element counts), the same on host and device.
struct Layout {
  int th, k0p, k1p;       // tile rows, padded tap counts
  int in_rows, in_pitch;  // staged input: th + k0p - 1 rows (pad rows zero) x (kTW + k1 - 1)
  int mid_pitch;          // axis-0 result: th rows, odd pitch >= kTW + k1p - 1 (pad cols zero)
  int w_off, in_off, mid_off, total;
  __host__ __device__ Layout(int th_, int k0, int k1, int c) {
    th = th_;
    k0p = round_up(k0, c);
    k1p = round_up(k1, c);
    in_rows = th + k0p - 1;
    in_pitch = kTW + k1 - 1;
    mid_pitch = (kTW + k1p - 1) | 1;  // odd: the axis-1 pass puts a warp's lanes on 32 rows
    w_off = 0;
    in_off = round_up(k0p + k1p, 4);
    int in_sz = in_rows * in_pitch;
    const int out_sz = th * (kTW + 1);  // the output tile reuses the input's space
    if (out_sz > in_sz) in_sz = out_sz;
    mid_off = in_off + round_up(in_sz, 4);
    total = mid_off + th * mid_pitch;
  }
};

template <class T, int C>
__global__ void __launch_bounds__(kThreads)
separable_boundary_kernel(const T* __restrict__ in, int h, int w, long long in_stride,
                          T* __restrict__ out, long long out_stride,
                          const T* __restrict__ w0g, const T* __restrict__ w1g, int k0, int k1,
                          int mode0, int mode1, T cval, int th) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const Layout L(th, k0, k1, C);
  T* ws0 = sm + L.w_off;
  T* ws1 = ws0 + L.k0p;
  T* in_s = sm + L.in_off;
  T* mid_s = sm + L.mid_off;
  const int tid = threadIdx.x;
  const int r0 = k0 / 2, r1 = k1 / 2;
  const int x0 = blockIdx.x * kTW, y0 = blockIdx.y * th;
  const int ncols = kTW + 2 * r1;  // staged columns (halo included)

  // 1. Stage the tile + halo (cp.async, boundary modes as index maps), weights, zero pads.
  for (int i = tid; i < L.k0p; i += kThreads) ws0[i] = i < k0 ? w0g[i] : T(0);
  for (int i = tid; i < L.k1p; i += kThreads) ws1[i] = i < k1 ? w1g[i] : T(0);
  const int rows_data = th + 2 * r0;
  const int lane = tid & 31, warp = tid >> 5;
  for (int i = warp; i < L.in_rows; i += kThreads / 32) {
    T* srow = in_s + i * L.in_pitch;
    if (i >= rows_data) {  // zero rows under the padded taps
      for (int j = lane; j < ncols; j += 32) srow[j] = T(0);
      continue;
    }
    const int gi = map_index(y0 - r0 + i, h, mode0);
    if (gi < 0) {
      for (int j = lane; j < ncols; j += 32) srow[j] = cval;
      continue;
    }
    const T* grow = in + gi * in_stride;
    for (int j = lane; j < ncols; j += 32) {
      const int gj = map_index(x0 - r1 + j, w, mode1);
      if (gj >= 0)
        cp_async_elem(srow + j, grow + gj);
      else
        srow[j] = cval;
    }
  }
  for (int i = warp; i < th; i += kThreads / 32)  // zero columns under the padded axis-1 taps
    for (int j = ncols + lane; j < L.mid_pitch; j += 32) mid_s[i * L.mid_pitch + j] = T(0);
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();

  // 2. Axis 0: mid[i][j] = sum_t w0[t] in[i + t][j]; a thread takes kR rows of one column.
  // In constant mode, columns outside the image are cval for the axis-1 pass (scipy).
  const int nrb = th / kR;
  for (int item = tid; item < nrb * ncols; item += kThreads) {
    const int rb = item / ncols, j = item - rb * ncols;
    T* mcol = mid_s + rb * kR * L.mid_pitch + j;
    const int gj = x0 - r1 + j;
    if (mode1 == 1 && (gj < 0 || gj >= w)) {
#pragma unroll
      for (int q = 0; q < kR; ++q) mcol[q * L.mid_pitch] = cval;
      continue;
    }
    const T* col = in_s + rb * kR * L.in_pitch + j;
    T acc[kR];
#pragma unroll
    for (int q = 0; q < kR; ++q) acc[q] = T(0);
    for (int c0 = 0; c0 < L.k0p; c0 += C) {
      T wv[C], v[kR + C - 1];
#pragma unroll
      for (int t = 0; t < C; ++t) wv[t] = ws0[c0 + t];
#pragma unroll
      for (int t = 0; t < kR + C - 1; ++t) v[t] = col[(c0 + t) * L.in_pitch];
#pragma unroll
      for (int t = 0; t < C; ++t)
#pragma unroll
        for (int q = 0; q < kR; ++q) acc[q] = fma(wv[t], v[q + t], acc[q]);
    }
#pragma unroll
    for (int q = 0; q < kR; ++q) mcol[q * L.mid_pitch] = acc[q];
  }
  __syncthreads();

  // 3. Axis 1: out[i][j] = sum_t w1[t] mid[i][j + t]; a thread takes kR columns of one row,
  // a warp's lanes 32 rows (odd pitch: no bank conflicts). Result into the input's space.
  T* out_s = in_s;
  constexpr int kOP = kTW + 1;
  constexpr int ncb = kTW / kR;
  for (int item = tid; item < th * ncb; item += kThreads) {
    const int cb = item / th, i = item - cb * th;
    const T* row = mid_s + i * L.mid_pitch + cb * kR;
    T acc[kR];
#pragma unroll
    for (int q = 0; q < kR; ++q) acc[q] = T(0);
    for (int c0 = 0; c0 < L.k1p; c0 += C) {
      T wv[C], v[kR + C - 1];
#pragma unroll
      for (int t = 0; t < C; ++t) wv[t] = ws1[c0 + t];
#pragma unroll
      for (int t = 0; t < kR + C - 1; ++t) v[t] = row[c0 + t];
#pragma unroll
      for (int t = 0; t < C; ++t)
#pragma unroll
        for (int q = 0; q < kR; ++q) acc[q] = fma(wv[t], v[q + t], acc[q]);
    }
#pragma unroll
    for (int q = 0; q < kR; ++q) out_s[i * kOP + cb * kR + q] = acc[q];
  }
  __syncthreads();

  // 4. The tile, coalesced.
  const int rows = min(th, h - y0), cols = min(kTW, w - x0);
  for (int i = warp; i < rows; i += kThreads / 32) {
    T* orow = out + (y0 + i) * out_stride + x0;
    for (int j = lane; j < cols; j += 32) orow[j] = out_s[i * kOP + j];
  }
}

// Shared memory per block: at most this much when a larger tile is possible (occupancy), and
// never past the device's opt-in limit.
constexpr int kPreferredSmem = 100 * 1024;

int max_smem_optin() {
  int dev = 0, v = 0;
  TC_CUDA_CHECK(cudaGetDevice(&dev));
  static int cache[64] = {0};
  if (dev >= 0 && dev < 64 && cache[dev]) return cache[dev];
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (dev >= 0 && dev < 64) cache[dev] = v;
  return v;
}

int chunk_for(int k0, int k1) { return (k0 <= 12 && k1 <= 12) ? 4 : 8; }

// Tile rows for these kernel lengths, 0 when none fits.
int choose_th(int k0, int k1, std::size_t es, int optin) {
  const int c = chunk_for(k0, k1);
  int fit = 0;
  for (int th : {64, 32, 16}) {
    const std::size_t bytes = static_cast<std::size_t>(Layout(th, k0, k1, c).total) * es;
    if (bytes <= static_cast<std::size_t>(optin) && !fit) fit = th;
    if (bytes <= kPreferredSmem) return th;
  }
  return fit;
}

template <class T, int C>
void launch(const SeparableBoundaryArgs& a, int th) {
  const Layout L(th, a.k0, a.k1, C);
  const std::size_t smem = static_cast<std::size_t>(L.total) * sizeof(T);
  auto kern = separable_boundary_kernel<T, C>;
  if (smem > 48 * 1024)
    TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem)));
  const dim3 grid(ceil_div(a.cols, kTW), ceil_div(a.rows, th));
  const T* wts = static_cast<const T*>(a.weights);
  kern<<<grid, kThreads, smem, reinterpret_cast<cudaStream_t>(a.stream)>>>(
      static_cast<const T*>(a.in), static_cast<int>(a.rows), static_cast<int>(a.cols),
      a.in_stride, static_cast<T*>(a.out), a.out_stride, wts, wts + a.k0, a.k0, a.k1, a.mode0,
      a.mode1, static_cast<T>(a.cval), th);
  TC_CUDA_LAUNCH_CHECK();
}

}  // namespace sepb
}  // namespace cuda

bool separable_boundary_supported(std::int64_t rows, std::int64_t cols, int k0, int k1,
                                  DType dtype) {
  using namespace cuda::sepb;
  if (dtype != DType::f32 && dtype != DType::f64) return false;
  if (k0 < 1 || k1 < 1 || k0 % 2 == 0 || k1 % 2 == 0 || rows < 1 || cols < 1) return false;
  if (rows > 0x7fffffffLL - 64 || cols > 0x7fffffffLL - 64 || k0 > 4096 || k1 > 4096)
    return false;
  const int th = choose_th(k0, k1, dtype == DType::f32 ? 4 : 8, max_smem_optin());
  return th > 0 && (rows + th - 1) / th <= 65535;
}

void separable_boundary(const SeparableBoundaryArgs& a) {
  using namespace cuda::sepb;
  if (!separable_boundary_supported(a.rows, a.cols, a.k0, a.k1, a.dtype))
    throw ValueError("separable_boundary: unsupported dtype, kernel lengths (odd, fitting shared "
                     "memory) or image shape");
  if (a.mode0 < 0 || a.mode0 > 4 || a.mode1 < 0 || a.mode1 > 4)
    throw ValueError("separable_boundary: mode must be 0..4 (reflect, constant, nearest, mirror, "
                     "wrap)");
  if (a.in_stride < a.cols || a.out_stride < a.cols)
    throw ValueError("separable_boundary: row strides must be >= cols");
  const bool f32 = a.dtype == DType::f32;
  const int th = choose_th(a.k0, a.k1, f32 ? 4 : 8, max_smem_optin());
  const int c = chunk_for(a.k0, a.k1);
  if (f32)
    c == 4 ? launch<float, 4>(a, th) : launch<float, 8>(a, th);
  else
    c == 4 ? launch<double, 4>(a, th) : launch<double, 8>(a, th);
}

}  // namespace tc
