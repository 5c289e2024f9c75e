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
// Arithmetic: each thread R outputs of a column (axis 0) or of a row (axis 1) by the register
// sliding window of sliding.cuh (one shared load per tap for R FMAs; taps past the kernel are
// never multiplied, so NaN/inf reach exactly scipy's outputs); the weights ride in the launch
// parameters (constant bank). float32 sums in fp32, float64 in fp64.
//
// Large radii: the block's tile rows shrink (64 -> 32 -> 16) to fit shared memory; beyond what
// 16 rows fit (float32 r ~ 60, float64 r ~ 31: two staged tiles) or 384 weights, the function
// separable_boundary_supported() says no and the caller takes the strips + `separable` path.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "../common.cuh"
#include "../precision.cuh"
#include "../sliding.cuh"
#include "separable_boundary.hpp"

namespace tc {
namespace cuda {
namespace sepb {

constexpr int kTW = 64;       // output tile width
constexpr int kR = 8;         // outputs per thread and pass
constexpr int kMaxThreads = 512;  // block size: 256..512, chosen per tile shape (threads())

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
__device__ __forceinline__ void cp_async_16(void* s, const void* g) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(g) : "memory");
}

__host__ __device__ constexpr int round_up(int a, int b) { return (a + b - 1) / b * b; }

// Shared-memory plan of one block (element counts), the same on host and device. Two input
// buffers: the next tile is staged while this one is filtered.
template <class T>
struct Layout {
  static constexpr int VE = 16 / sizeof(T);  // elements per 16-byte copy
  int shift;              // staged column c holds image column x0 - r1 - shift + c (16-B aligned)
  int in_pitch;           // th + k0 - 1 rows x (16-B multiple >= shift + kTW + k1 - 1)
  int in_size;            // one buffer (the output tile reuses the current one)
  int mid_pitch;          // axis-0 result: th rows, odd pitch >= kTW + k1 - 1
  int mid_off, total;
  __host__ __device__ Layout(int th, int k0, int k1) {
    shift = (VE - (k1 / 2) % VE) % VE;
    in_pitch = round_up(shift + kTW + k1 - 1, VE);
    in_size = (th + k0 - 1) * in_pitch;
    const int out_sz = th * (kTW + 1);
    if (out_sz > in_size) in_size = out_sz;
    in_size = round_up(in_size, VE);
    mid_pitch = (kTW + k1 - 1) | 1;  // odd: the axis-1 pass puts a warp's lanes on 32 rows
    mid_off = 2 * in_size;
    total = mid_off + th * mid_pitch;
  }
};

// Weights travel in the launch's parameters (constant bank: warp-uniform operands, no shared
// memory traffic): w0 at [0, k0), w1 at [k0, k0 + k1).
constexpr int kMaxW = 384;

template <class T>
struct Params {
  const void* in;
  void* out;
  T wt[kMaxW];
  long long in_stride, out_stride;
  int h, w, k0, k1, mode0, mode1, th, lth, tiles_x, tiles;
  double cval;
  bool vec;  // 16-byte copies possible (aligned base and row stride)
};

// Stage tile `tile` (rows th + 2 r0, columns kTW + 2 r1 from the image, boundary modes applied)
// into buf with cp.async (one commit group), constant/pad values by plain stores.
template <class T>
__device__ __forceinline__ void stage(const Params<T>& p, const Layout<T>& L, int tile, T* buf) {
  constexpr int VE = Layout<T>::VE;
  const T* in = static_cast<const T*>(p.in);
  const int r0 = p.k0 / 2, r1 = p.k1 / 2;
  const int ty = tile / p.tiles_x, tx = tile - ty * p.tiles_x;
  const int y0 = ty * p.th, x0 = tx * kTW;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rows_data = p.th + 2 * r0;
  const int gs = x0 - r1 - L.shift;                      // image column of staged column 0
  const int nvec = (L.shift + kTW + 2 * r1 + VE - 1) / VE;
  const T cval = static_cast<T>(p.cval);
  const bool interior = p.vec && y0 - r0 >= 0 && y0 + rows_data - r0 <= p.h && gs >= 0 &&
                        gs + nvec * VE <= p.w;
  for (int i = warp; i < rows_data; i += blockDim.x / 32) {
    T* srow = buf + i * L.in_pitch;
    if (interior) {
      const T* grow = in + (y0 - r0 + i) * p.in_stride + gs;
      for (int v = lane; v < nvec; v += 32) cp_async_16(srow + v * VE, grow + v * VE);
      continue;
    }
    const int gi = map_index(y0 - r0 + i, p.h, p.mode0);
    if (gi < 0) {
      for (int j = lane; j < L.in_pitch; j += 32) srow[j] = cval;
      continue;
    }
    const T* grow = in + gi * p.in_stride;
    for (int j = L.shift + lane; j < L.shift + kTW + 2 * r1; j += 32) {
      const int gj = map_index(gs + j, p.w, p.mode1);
      if (gj >= 0)
        cp_async_elem(srow + j, grow + gj);
      else
        srow[j] = cval;
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <class T, class P>
__global__ void __launch_bounds__(kMaxThreads)
separable_boundary_kernel(const __grid_constant__ Params<T> p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const Layout<T> L(p.th, p.k0, p.k1);
  const T* ws0 = p.wt;
  const T* ws1 = p.wt + p.k0;
  T* mid_s = sm + L.mid_off;
  T* out = static_cast<T*>(p.out);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int th = p.th, k0 = p.k0, k1 = p.k1, r1 = k1 / 2;
  const int ncols = kTW + 2 * r1;  // staged columns (halo included)
  const T cval = static_cast<T>(p.cval);

  int tile = blockIdx.x;
  if (tile < p.tiles) stage<T>(p, L, tile, sm);
  // Axis-0 work split, stepped without divisions: item = rb * ncols + j.
  const int nt = blockDim.x;
  const int step_rb = nt / ncols, step_j = nt - step_rb * ncols;
  const int rb0 = tid / ncols, j0 = tid - rb0 * ncols;
  const int nrb = th / kR;
  for (int k = 0; tile < p.tiles; ++k, tile += gridDim.x) {
    T* in_s = sm + (k & 1) * L.in_size;
    const int next = tile + gridDim.x;
    if (next < p.tiles) {
      stage<T>(p, L, next, sm + ((k + 1) & 1) * L.in_size);
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    }
    __syncthreads();
    const int ty = tile / p.tiles_x, tx = tile - ty * p.tiles_x;
    const int y0 = ty * th, x0 = tx * kTW;

    // Axis 0: mid[i][j] = sum_t w0[t] in[i + t][j]; a thread takes kR rows of one column.
    // In constant mode, columns outside the image are cval for the axis-1 pass (scipy).
    for (int rb = rb0, j = j0; rb < nrb;) {
      T* mcol = mid_s + rb * kR * L.mid_pitch + j;
      const int gj = x0 - r1 + j;
      if (p.mode1 == 1 && (gj < 0 || gj >= p.w)) {
#pragma unroll
        for (int q = 0; q < kR; ++q) mcol[q * L.mid_pitch] = cval;
      } else {
        const T* col = in_s + rb * kR * L.in_pitch + L.shift + j;
        T acc[kR];
#pragma unroll
        for (int q = 0; q < kR; ++q) acc[q] = T(0);
        slide_column<P, kR>(acc, col, L.in_pitch, k0, [&](int t) { return ws0[t]; });
#pragma unroll
        for (int q = 0; q < kR; ++q) mcol[q * L.mid_pitch] = acc[q];
      }
      j += step_j;
      rb += step_rb;
      if (j >= ncols) {
        j -= ncols;
        ++rb;
      }
    }
    __syncthreads();

    // Axis 1: out[i][j] = sum_t w1[t] mid[i][j + t]; a thread takes kR columns of one row, a
    // warp's lanes 32 rows (odd pitch: no bank conflicts). Result into this tile's input buffer.
    T* out_s = in_s;
    constexpr int kOP = kTW + 1;
    for (int item = tid; item < th * (kTW / kR); item += nt) {
      const int cb = item >> p.lth, i = item & (th - 1);
      const T* row = mid_s + i * L.mid_pitch + cb * kR;
      T acc[kR];
#pragma unroll
      for (int q = 0; q < kR; ++q) acc[q] = T(0);
      slide_column<P, kR>(acc, row, 1, k1, [&](int t) { return ws1[t]; });
#pragma unroll
      for (int q = 0; q < kR; ++q) out_s[i * kOP + cb * kR + q] = acc[q];
    }
    __syncthreads();

    // The tile, coalesced.
    const int rows = min(th, p.h - y0), cols = min(kTW, p.w - x0);
    for (int i = warp; i < rows; i += nt / 32) {
      T* orow = out + (y0 + i) * p.out_stride + x0;
      for (int j = lane; j < cols; j += 32) orow[j] = out_s[i * kOP + j];
    }
    __syncthreads();  // out_s is the buffer the next iteration's prefetch fills
  }
}

// Tile rows: the tallest tile (least halo re-read) of which 4 blocks fit an SM (228 KB of shared
// memory: latency hiding), else 2, else 1; 16 rows only below 4 blocks (a 16-row tile leaves
// half of the threads idle in the axis-1 pass).
constexpr int kSmemPerSm = 228 * 1024, kSmemReservedPerBlock = 1024;

// Per device: limits, whether the kernels' attributes are set, and their occupancy per launch
// shape (a query costs microseconds: a repeated call should be the launch alone). Guarded by
// info_mutex() (calls may come from several host threads).
struct DeviceInfo {
  int optin = 0, sms = 0;
  bool attrs_set[2] = {false, false};              // per kernel instantiation
  std::map<std::tuple<int, std::size_t, int>, int> blocks_per_sm;  // (kernel, smem, threads)
};

std::mutex& info_mutex() {
  static std::mutex m;
  return m;
}

DeviceInfo& device_info() {
  static DeviceInfo info[64];
  int dev = 0;
  TC_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) throw ValueError("separable_boundary: device ordinal out of range");
  DeviceInfo& d = info[dev];
  std::lock_guard<std::mutex> lock(info_mutex());
  if (!d.optin) {
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev));
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&d.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  }
  return d;
}

template <class T>
std::size_t smem_bytes(int th, int k0, int k1) {
  return static_cast<std::size_t>(Layout<T>(th, k0, k1).total) * sizeof(T);
}

// Tile rows for these kernel lengths, 0 when none fits.
template <class T>
int choose_th(int k0, int k1, int optin) {
  for (int blocks : {4, 2, 1})
    for (int th : {64, 32, 16}) {
      if (th == 16 && blocks == 4) continue;
      const std::size_t bytes = smem_bytes<T>(th, k0, k1);
      if (bytes <= static_cast<std::size_t>(optin) &&
          blocks * (bytes + kSmemReservedPerBlock) <= static_cast<std::size_t>(kSmemPerSm))
        return th;
    }
  return 0;
}

// Block size: the axis-0 pass has (th / kR) * (kTW + k1 - 1) thread tasks, the axis-1 pass
// th * kTW / kR; the size (256..512, whole warps) that leaves the fewest threads idle over both.
int threads(int th, int k1) {
  const int v = th / kR * (kTW + k1 - 1), h = th * kTW / kR;
  int best = 256;
  double best_util = 0;
  for (int nt = 256; nt <= kMaxThreads; nt += 32) {
    const double util = double(v + h) / (double(nt) * ((v + nt - 1) / nt + (h + nt - 1) / nt));
    if (util > best_util + 1e-9) {
      best_util = util;
      best = nt;
    }
  }
  return best;
}

template <class T>
int pick_th(const SeparableBoundaryArgs& a, int optin) {
  const int t = a.tile_rows;
  if (t == 0) return choose_th<T>(a.k0, a.k1, optin);
  if ((t != 16 && t != 32 && t != 64) ||
      smem_bytes<T>(t, a.k0, a.k1) > static_cast<std::size_t>(optin))
    throw ValueError("separable_boundary: tile_rows must be 16, 32 or 64 and fit shared memory");
  return t;
}

template <class T, class P>
void launch(const SeparableBoundaryArgs& a, int th, DeviceInfo& dev, int which) {
  const std::size_t smem = smem_bytes<T>(th, a.k0, a.k1);
  auto kern = separable_boundary_kernel<T, P>;
  Params<T> p;
  p.in = a.in;
  p.out = a.out;
  for (int i = 0; i < kMaxW; ++i)
    p.wt[i] = i < a.k0 + a.k1 ? static_cast<T>(a.weights[i]) : T(0);
  p.in_stride = a.in_stride;
  p.out_stride = a.out_stride;
  p.h = static_cast<int>(a.rows);
  p.w = static_cast<int>(a.cols);
  p.k0 = a.k0;
  p.k1 = a.k1;
  p.mode0 = a.mode0;
  p.mode1 = a.mode1;
  p.th = th;
  p.lth = th == 64 ? 6 : th == 32 ? 5 : 4;
  p.tiles_x = ceil_div(a.cols, kTW);
  const std::int64_t tiles = static_cast<std::int64_t>(p.tiles_x) * ceil_div(a.rows, th);
  p.tiles = static_cast<int>(tiles);
  p.cval = a.cval;
  constexpr int VE = Layout<T>::VE;
  p.vec = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && a.in_stride % VE == 0;
  // Persistent blocks: as many as fit at once (each stages its next tile while it filters).
  const int nt = threads(th, a.k1);
  int per_sm = 0;
  {
    std::lock_guard<std::mutex> lock(info_mutex());
    if (!dev.attrs_set[which]) {
      TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         dev.optin));
      TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
      dev.attrs_set[which] = true;
    }
    const auto key = std::make_tuple(which, smem, nt);
    const auto it = dev.blocks_per_sm.find(key);
    if (it != dev.blocks_per_sm.end()) {
      per_sm = it->second;
    } else {
      TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, nt, smem));
      dev.blocks_per_sm[key] = per_sm;
    }
  }
  if (per_sm < 1) throw ValueError("separable_boundary: kernel does not fit the device");
  const std::int64_t grid =
      std::min<std::int64_t>(tiles, static_cast<std::int64_t>(per_sm) * dev.sms);
  kern<<<static_cast<unsigned>(grid), nt, smem, reinterpret_cast<cudaStream_t>(a.stream)>>>(p);
  TC_CUDA_LAUNCH_CHECK();
}

}  // namespace sepb
}  // namespace cuda

bool separable_boundary_supported(std::int64_t rows, std::int64_t cols, int k0, int k1,
                                  DType dtype) {
  using namespace cuda::sepb;
  if (dtype != DType::f32 && dtype != DType::f64) return false;
  if (k0 < 1 || k1 < 1 || k0 % 2 == 0 || k1 % 2 == 0 || rows < 1 || cols < 1) return false;
  if (rows > (1LL << 30) || cols > (1LL << 30) || k0 > 4096 || k1 > 4096)
    return false;  // index maps compute 2n in int
  if (rows * cols > 0x7fffffffLL * 32) return false;  // tile count fits an int
  if (k0 + k1 > kMaxW) return false;  // weights in the launch parameters
  const int optin = device_info().optin;
  const int th = dtype == DType::f32 ? choose_th<float>(k0, k1, optin)
                                     : choose_th<double>(k0, k1, optin);
  return th > 0;
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
  // The image's device runs the launch (the caller's current device comes back afterwards).
  cudaPointerAttributes attr{};
  TC_CUDA_CHECK(cudaPointerGetAttributes(&attr, a.in));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw ValueError("separable_boundary: the image is not CUDA device memory");
  int prev = 0;
  TC_CUDA_CHECK(cudaGetDevice(&prev));
  struct Restore {
    int dev;
    bool on;
    ~Restore() { if (on) cudaSetDevice(dev); }
  } restore{prev, attr.device != prev};
  if (restore.on) TC_CUDA_CHECK(cudaSetDevice(attr.device));
  DeviceInfo& dev = device_info();
  if (a.dtype == DType::f32)
    launch<float, cuda::Prec<Precision::fp32>>(a, pick_th<float>(a, dev.optin), dev, 0);
  else
    launch<double, cuda::Prec<Precision::fp64>>(a, pick_th<double>(a, dev.optin), dev, 1);
}

}  // namespace tc
