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
#include <string>

#include "cuda/runtime/common.cuh"
#include "cuda/runtime/precision.cuh"
#include "cuda/runtime/sliding.cuh"
#include "cuda/methods/filters/separable_boundary.cuh"

namespace tc {
namespace cuda {
namespace sepb {

constexpr int kR = 8;  // outputs per thread and pass

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

template <class T>
std::size_t smem_bytes(int th, int k0, int k1) {
  return static_cast<std::size_t>(Layout<T>(th, k0, k1).total) * sizeof(T);
}

// Tile rows for these kernel lengths (fit_tile_rows' rule), 0 when none fits.
template <class T>
int choose_th(int k0, int k1, int optin) {
  return fit_tile_rows([&](int th) { return smem_bytes<T>(th, k0, k1); }, optin);
}

// Block size: the axis-0 pass has (th / kR) * (kTW + k1 - 1) thread tasks, the axis-1 pass
// th * kTW / kR; the size (256..512, whole warps) that leaves the fewest threads idle over both.
int threads(int th, int k1) { return pick_threads(th / kR * (kTW + k1 - 1), th * kTW / kR); }

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
void launch(const SeparableBoundaryArgs& a, int th, DeviceInfo& dev) {
  Params<T> p = make_params<T>(a, th);
  p.vec_out = false;  // (the generic kernel stores the tile by scalars)
  launch_persistent(separable_boundary_kernel<T, P>, p, threads(th, a.k1),
                    smem_bytes<T>(th, a.k0, a.k1), 1, a, dev);
}

// The default per radius for float32 with k0 == k1 = 2r + 1 <= 23 (filters.gaussian's case):
// {variant, tile rows (0: fit_tile_rows' rule)}, index r. Filled from the tuning harness's
// "default table" line (benchmarks/harness/separable_boundary_check.cu). H100 80GB HBM3, 4096^2
// (copy 0.0524 ms):
// r = 1..3 v11 (one block per tile, 256 threads) th32 0.0594 / 0.0597 / 0.0613 ms; r = 5, 7 v3
// th64 0.0620 / 0.0689; r = 9, 11 v10 (one block per tile) th64 0.0819 / 0.0867 (persistent v5:
// 0.0853 / 0.0979; the generic kernel 0.078-0.165). Radii between take the next timed one's
// choice (4 -> 5, 6 -> 7, 8 -> 9, 10 -> 11). Every one bit-identical to the generic kernel.
// Index 0 (one tap) and other shapes, dtypes and radii: generic.
struct DefaultChoice {
  int variant, tile_rows;
};
constexpr DefaultChoice kDefaultF32[12] = {{1, 0},   {11, 32}, {11, 32}, {11, 32},
                                           {3, 64},  {3, 64},  {3, 64},  {3, 64},
                                           {10, 64}, {10, 64}, {10, 64}, {10, 64}};

// The arguments a call runs with: a.variant / a.tile_rows if set (ValueError where the variant
// does not apply), else the default table's entry where it applies, else the generic kernel.
SeparableBoundaryArgs resolve_variant(const SeparableBoundaryArgs& a, int optin) {
  if (a.variant < 0 || a.variant > 1 + fixed_variant_count())
    throw ValueError("separable_boundary: variant out of range");
  if (a.variant >= 2 && !fixed_built(a.variant))
    throw ValueError("separable_boundary: this variant is built only with TC_TUNING_VARIANTS "
                     "(the tuning harness)");
  if (a.variant >= 2 &&
      !fixed_supported(a.variant, a.rows, a.cols, a.k0, a.k1, a.dtype, optin))
    throw ValueError("separable_boundary: this variant needs float32, k0 == k1 <= 23 and a "
                     "tile that fits shared memory");
  SeparableBoundaryArgs b = a;
  if (a.variant != 0) return b;
  b.variant = 1;
  if (a.dtype != DType::f32 || a.k0 != a.k1 || a.k0 > 23) return b;
  const DefaultChoice d = kDefaultF32[a.k0 / 2];
  const int th = a.tile_rows ? a.tile_rows : d.tile_rows;
  if (d.variant >= 2) {
    SeparableBoundaryArgs c = b;
    c.variant = d.variant;
    c.tile_rows = th;
    if (fixed_supported(d.variant, a.rows, a.cols, a.k0, a.k1, a.dtype, optin) &&
        (th == 0 || fixed_th_fits(d.variant, a.k0, th, optin)))
      return c;
  } else if (th == 0 || smem_bytes<float>(th, a.k0, a.k1) <= static_cast<std::size_t>(optin)) {
    b.tile_rows = th;
  }
  return b;
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
  const SeparableBoundaryArgs b = resolve_variant(a, dev.optin);
  if (b.variant >= 2)
    launch_fixed(b, b.variant, dev);
  else if (b.dtype == DType::f32)
    launch<float, cuda::Prec<Precision::fp32>>(b, pick_th<float>(b, dev.optin), dev);
  else
    launch<double, cuda::Prec<Precision::fp64>>(b, pick_th<double>(b, dev.optin), dev);
}

SeparableBoundaryLaunch separable_boundary_last_launch() { return cuda::sepb::last_launch(); }

int separable_boundary_variants() { return 2 + cuda::sepb::fixed_variant_count(); }

const char* separable_boundary_variant_name(int v) {
  if (v == 0) return "default";
  if (v == 1) return "generic";
  return cuda::sepb::fixed_variant_name(v);
}

}  // namespace tc
