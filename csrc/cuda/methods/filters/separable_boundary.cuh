// Device pieces shared by the two fused separable kernels (separable_boundary.cu: any tap
// count, fp32/fp64; separable_boundary_fixed.cu: fp32 with the tap count a template argument):
// the boundary index map, cp.async wrappers, the launch parameters, the tile staging, and the
// per-device launch bookkeeping. Internal to csrc/cuda/methods/filters/.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "cuda/runtime/common.cuh"
#include "cuda/methods/filters/separable_boundary.hpp"

namespace tc {
namespace cuda {
namespace sepb {

constexpr int kTW = 64;       // output tile width
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
  bool vec;      // 16-byte copies possible (aligned base and row stride)
  bool vec_out;  // 16-byte stores of the output possible (fixed-tap kernels)
};

// Stage tile `tile` (rows th + 2 r0, columns kTW + 2 r1 from the image, boundary modes applied)
// into buf with cp.async (one commit group), constant/pad values by plain stores.
// L: any layout with `shift` and `in_pitch` (both kernels' plans).
template <class T, class L_>
__device__ __forceinline__ void stage(const Params<T>& p, const L_& L, int tile, T* buf) {
  constexpr int VE = 16 / sizeof(T);
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

// Per device: limits, whether the kernels' attributes are set, and their occupancy per launch
// shape (a query costs microseconds: a repeated call should be the launch alone). Guarded by
// info_mutex() (calls may come from several host threads).
struct DeviceInfo {
  int optin = 0, sms = 0;
  std::set<const void*> attrs_set;  // kernels whose attributes are set
  std::map<std::tuple<const void*, std::size_t, int>, int> blocks_per_sm;  // (kernel, smem, threads)
};

inline std::mutex& info_mutex() {
  static std::mutex m;
  return m;
}

inline DeviceInfo& device_info() {
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


// Tile rows: the tallest tile (least halo re-read) of which 4 blocks fit an SM (228 KB of shared
// memory: latency hiding), else 2, else 1; 16 rows only below 4 blocks (a 16-row tile leaves
// half of the threads idle in the axis-1 pass). bytes(th): the block's shared memory; 0: none fits.
constexpr int kSmemPerSm = 228 * 1024, kSmemReservedPerBlock = 1024;
template <class Bytes>
int fit_tile_rows(Bytes bytes, int optin) {
  for (int blocks : {4, 2, 1})
    for (int th : {64, 32, 16}) {
      if (th == 16 && blocks == 4) continue;
      const std::size_t b = bytes(th);
      if (b <= static_cast<std::size_t>(optin) &&
          blocks * (b + kSmemReservedPerBlock) <= static_cast<std::size_t>(kSmemPerSm))
        return th;
    }
  return 0;
}

// Block size (whole warps in lo..kMaxThreads) that leaves the fewest threads idle over two
// passes of v and h thread tasks.
inline int pick_threads(int v, int h, int lo = 256) {
  int best = lo;
  double best_util = 0;
  for (int nt = lo; nt <= kMaxThreads; nt += 32) {
    const double util = double(v + h) / (double(nt) * ((v + nt - 1) / nt + (h + nt - 1) / nt));
    if (util > best_util + 1e-9) {
      best_util = util;
      best = nt;
    }
  }
  return best;
}

// Persistent blocks per SM of `kern` at this shape (sets its shared-memory attributes once;
// the occupancy query is cached: a repeated call is the launch alone).
template <class Kern>
int blocks_per_sm(Kern kern, std::size_t smem, int nt, DeviceInfo& dev) {
  const void* key_fn = reinterpret_cast<const void*>(kern);
  std::lock_guard<std::mutex> lock(info_mutex());
  if (!dev.attrs_set.count(key_fn)) {
    TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       dev.optin));
    TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    dev.attrs_set.insert(key_fn);
  }
  const auto key = std::make_tuple(key_fn, smem, nt);
  const auto it = dev.blocks_per_sm.find(key);
  if (it != dev.blocks_per_sm.end()) return it->second;
  int per_sm = 0;
  TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, nt, smem));
  dev.blocks_per_sm[key] = per_sm;
  return per_sm;
}

// What the calling host thread's last launch was (the tuning harness prints it).
inline SeparableBoundaryLaunch& last_launch() {
  thread_local SeparableBoundaryLaunch l;
  return l;
}
template <class Kern>
void note_launch(Kern kern, int variant, int th, int nt, int per_sm, std::size_t smem) {
  SeparableBoundaryLaunch& l = last_launch();
  if (l.kernel != reinterpret_cast<const void*>(kern)) {
    cudaFuncAttributes fa{};
    TC_CUDA_CHECK(cudaFuncGetAttributes(&fa, kern));
    l.regs = fa.numRegs;
    l.kernel = reinterpret_cast<const void*>(kern);
  }
  l.variant = variant;
  l.tile_rows = th;
  l.threads = nt;
  l.blocks_per_sm = per_sm;
  l.smem = static_cast<long long>(smem);
}

// The launch parameters of a tile height th (weights converted to T: k0 + k1 of them).
template <class T>
Params<T> make_params(const SeparableBoundaryArgs& a, int th) {
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
  p.tiles_x = static_cast<int>(ceil_div(a.cols, kTW));
  p.tiles = static_cast<int>(static_cast<std::int64_t>(p.tiles_x) * ceil_div(a.rows, th));
  p.cval = a.cval;
  constexpr int VE = 16 / sizeof(T);
  p.vec = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && a.in_stride % VE == 0;
  p.vec_out = reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0 && a.out_stride % VE == 0;
  return p;
}

// Persistent blocks: as many as fit at once (each stages its next tiles while it filters);
// all_tiles: one block per tile instead (the block scheduler staggers them; tuning).
template <class Kern, class T>
void launch_persistent(Kern kern, const Params<T>& p, int nt, std::size_t smem, int variant,
                       const SeparableBoundaryArgs& a, DeviceInfo& dev, bool all_tiles = false) {
  const int per_sm = blocks_per_sm(kern, smem, nt, dev);
  if (per_sm < 1) throw ValueError("separable_boundary: kernel does not fit the device");
  const std::int64_t grid =
      all_tiles ? p.tiles
                : std::min<std::int64_t>(p.tiles, static_cast<std::int64_t>(per_sm) * dev.sms);
  note_launch(kern, variant, p.th, nt, per_sm, smem);
  kern<<<static_cast<unsigned>(grid), nt, smem, reinterpret_cast<cudaStream_t>(a.stream)>>>(p);
  TC_CUDA_LAUNCH_CHECK();
}

// The fp32 fixed-tap kernels (separable_boundary_fixed.cu): variants 2.. of
// SeparableBoundaryArgs::variant. fixed_supported: whether variant v takes these arguments;
// launch_fixed launches it (tile rows a.tile_rows or chosen).
constexpr int kFixedMaxTaps = 23;
int fixed_variant_count();
const char* fixed_variant_name(int v);
bool fixed_supported(int v, std::int64_t rows, std::int64_t cols, int k0, int k1, DType dtype,
                     int optin);
bool fixed_th_fits(int v, int K, int th, int optin);  // th = 16, 32 or 64 rows fit shared memory
void launch_fixed(const SeparableBoundaryArgs& a, int v, DeviceInfo& dev);
// Whether variant v is compiled in (the package: the default table's; TC_TUNING_VARIANTS: all).
bool fixed_built(int v);

}  // namespace sepb
}  // namespace cuda
}  // namespace tc
