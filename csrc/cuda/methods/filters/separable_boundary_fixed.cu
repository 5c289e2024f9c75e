// The fused separable filter of separable_boundary.cu for float32 with the tap count K (= k0 =
// k1 <= 23, radius <= 11: filters.gaussian's common case) a template argument: every loop is
// unrolled, every weight an immediate constant-bank operand of its FMA (no per-tap weight load,
// index arithmetic or loop branch), and the passes read shared memory by float4 where the variant
// says so. Same staging (boundary modes, double buffer), same intermediate semantics and the
// same per-output sum order (taps in increasing order from 0, one fmaf each) as the generic
// kernel, hence bit-identical results; only the work split differs.
//
// Each thread streams its inputs once and scatters every value into the accumulators it feeds
// (acc[q] += w[e - q] * x[e]); no register window to rotate. The variants (chosen by
// SeparableBoundaryArgs::variant, timed against each other by benchmarks/harness/separable_boundary_check.cu):
//   R0 x V0  axis-0 outputs per thread: R0 rows of V0 columns (V0 = 4: float4 loads of the staged
//            rows and float4 stores of the intermediate: a quarter of the shared instructions);
//   R1       axis-1 outputs per thread (consecutive columns of one row, a warp's lanes on 32 rows);
//   VEC1     the axis-1 pass reads its row by float4 (intermediate pitch = 4 mod 32: the 8 lanes
//            of a float4 phase hit 8 distinct bank quads), writes its R1 outputs by float4, and
//            the tile leaves by float4 stores; without it, scalar reads of an odd-pitch row.
//   MINB     __launch_bounds__' minimum resident blocks (register cap: occupancy against ILP);
//   NSTAGE   staged tiles per block (2: one tile's loads in flight while one filters; 3: two;
//            1: none ahead, the block loads, filters and stores its tile in turn);
//   NT       the block size (0: pick_threads' choice) and __launch_bounds__' cap;
//   all_tiles one block per tile instead of persistent blocks (launch_persistent): the block
//            scheduler starts blocks as others retire, so an SM's blocks are in different
//            phases (loading, filtering, storing) and the loads overlap the FMAs. With one
//            staged tile (less shared memory: 4-6 blocks per SM) it is the default from r = 8
//            (r = 11: 0.0867 against the persistent 0.0979 ms) and at r = 1..3 (H100, gauss3).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/methods/filters/separable_boundary.cuh"

namespace tc {
namespace cuda {
namespace sepb {

// Shared-memory plan (floats) of one block, as separable_boundary.cu's Layout: staged column c
// holds image column x0 - r - shift + c (16-byte aligned rows); the intermediate keeps the staged
// column numbering; the output tile reuses the current input buffer.
__host__ __device__ constexpr int fx_shift(int K) { return (4 - (K / 2) % 4) % 4; }
__host__ __device__ constexpr int fx_in_pitch(int K) { return round_up(fx_shift(K) + kTW + K - 1, 4); }
__host__ __device__ constexpr int fx_mid_pitch(int K, bool vec1) {
  return vec1 ? fx_in_pitch(K) + (36 - fx_in_pitch(K) % 32) % 32 : (fx_in_pitch(K) | 1);
}
__host__ __device__ constexpr int fx_out_pitch(bool vec1) { return vec1 ? kTW + 4 : kTW + 1; }
__host__ __device__ constexpr int fx_in_size(int K, bool vec1, int th) {
  return round_up((th + K - 1) * fx_in_pitch(K) > th * fx_out_pitch(vec1)
                      ? (th + K - 1) * fx_in_pitch(K) : th * fx_out_pitch(vec1), 4);
}
// nstage staged tiles (2: the next one loads while this one is filtered; 3: two ahead);
// + 8: the float4 reads of the last intermediate row may pass its end by up to 3 floats.
__host__ __device__ constexpr int fx_total(int K, bool vec1, int th, int nstage) {
  return nstage * fx_in_size(K, vec1, th) + th * fx_mid_pitch(K, vec1) + 8;
}

struct StageGeom {  // what stage() reads of a layout
  int shift, in_pitch;
};

template <int K, int R0, int V0, int R1, bool VEC1, int MINB, int NSTAGE, int NT>
__global__ void __launch_bounds__(NT ? NT : kMaxThreads, MINB)
fixed_kernel(const __grid_constant__ Params<float> p) {
  static_assert(V0 == 1 || V0 == 4, "V0: 1 or 4 columns");
  static_assert(!VEC1 || R1 % 4 == 0, "float4 outputs need R1 % 4 == 0");
  static_assert(V0 == 1 || VEC1, "float4 stores of the intermediate need its 4 mod 32 pitch");
  static_assert(NSTAGE >= 1 && NSTAGE <= 3, "1 to 3 staged tiles");
  constexpr int r = K / 2, shift = fx_shift(K), in_pitch = fx_in_pitch(K);
  constexpr int mid_pitch = fx_mid_pitch(K, VEC1), out_pitch = fx_out_pitch(VEC1);
  constexpr int ncols = kTW + 2 * r;
  // Axis-0 tasks per R0 rows: each used column (V0 = 1) or each 16-byte group of the staged row.
  constexpr int G0 = V0 == 1 ? ncols : in_pitch / 4;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* sm = reinterpret_cast<float*>(smem_raw);
  const int th = p.th;
  const int in_size = fx_in_size(K, VEC1, th);
  float* mid_s = sm + NSTAGE * in_size;
  float* out = static_cast<float*>(p.out);
  const int tid = threadIdx.x, nt = blockDim.x;
  const float cval = static_cast<float>(p.cval);
  const bool cmode1 = p.mode1 == 1;
  const int items0 = (th / R0) * G0, items1 = th * (kTW / R1);
  const StageGeom geom{shift, in_pitch};

  // Tiles blockIdx.x + s * gridDim.x go to buffer s % NSTAGE; every step commits one cp.async
  // group (empty past the last tile), so "all but the newest NSTAGE - 1 groups done" is always
  // "this tile staged".
  int tile = blockIdx.x;
#pragma unroll
  for (int s = 0; s < NSTAGE - 1; ++s) {
    const int t = tile + s * gridDim.x;
    if (t < p.tiles)
      stage<float>(p, geom, t, sm + s * in_size);
    else
      asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  int buf = 0;  // this tile's buffer
  for (; tile < p.tiles; tile += gridDim.x, buf = buf + 1 == NSTAGE ? 0 : buf + 1) {
    float* in_s = sm + buf * in_size;
    const int ahead = tile + (NSTAGE - 1) * gridDim.x;
    const int abuf = buf == 0 ? NSTAGE - 1 : buf - 1;  // (buf + NSTAGE - 1) % NSTAGE
    if (ahead < p.tiles)
      stage<float>(p, geom, ahead, sm + abuf * in_size);
    else
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group %0;\n" ::"n"(NSTAGE - 1) : "memory");
    __syncthreads();
    const int ty = tile / p.tiles_x, tx = tile - ty * p.tiles_x;
    const int y0 = ty * th, x0 = tx * kTW;
    const int gcol0 = x0 - r - shift;  // image column of staged column 0

    // Axis 0: mid[i][c] = sum_t w0[t] in[i + t][c]. In constant mode, columns outside the
    // image are cval for the axis-1 pass (scipy).
    for (int it = tid; it < items0; it += nt) {
      const int rb = it / G0, g = it - rb * G0;
      if constexpr (V0 == 1) {
        const int c = shift + g;
        const float* col = in_s + rb * R0 * in_pitch + c;
        float acc[R0];
#pragma unroll
        for (int q = 0; q < R0; ++q) acc[q] = 0.f;
#pragma unroll
        for (int e = 0; e < R0 + K - 1; ++e) {
          const float x = col[e * in_pitch];
#pragma unroll
          for (int q = 0; q < R0; ++q)
            if (e - q >= 0 && e - q < K) acc[q] = fmaf(x, p.wt[e - q], acc[q]);
        }
        const bool outside = cmode1 && static_cast<unsigned>(gcol0 + c) >= static_cast<unsigned>(p.w);
        float* m = mid_s + rb * R0 * mid_pitch + c;
#pragma unroll
        for (int q = 0; q < R0; ++q) m[q * mid_pitch] = outside ? cval : acc[q];
      } else {
        // Columns 4g .. 4g + 3 (those outside the used range compute on whatever the buffer
        // holds and are never read).
        const int c = 4 * g;
        const float4* col = reinterpret_cast<const float4*>(in_s + rb * R0 * in_pitch + c);
        float4 acc[R0];
#pragma unroll
        for (int q = 0; q < R0; ++q) acc[q] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int e = 0; e < R0 + K - 1; ++e) {
          const float4 x = col[e * (in_pitch / 4)];
#pragma unroll
          for (int q = 0; q < R0; ++q)
            if (e - q >= 0 && e - q < K) {
              const float w = p.wt[e - q];
              acc[q].x = fmaf(x.x, w, acc[q].x);
              acc[q].y = fmaf(x.y, w, acc[q].y);
              acc[q].z = fmaf(x.z, w, acc[q].z);
              acc[q].w = fmaf(x.w, w, acc[q].w);
            }
        }
        bool o[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          o[u] = cmode1 && static_cast<unsigned>(gcol0 + c + u) >= static_cast<unsigned>(p.w);
        float* m = mid_s + rb * R0 * mid_pitch + c;
#pragma unroll
        for (int q = 0; q < R0; ++q)
          *reinterpret_cast<float4*>(m + q * mid_pitch) =
              make_float4(o[0] ? cval : acc[q].x, o[1] ? cval : acc[q].y,
                          o[2] ? cval : acc[q].z, o[3] ? cval : acc[q].w);
      }
    }
    __syncthreads();

    // Axis 1: out[i][j] = sum_t w1[t] mid[i][shift + j + t]; a thread takes R1 columns of one
    // row, a warp's lanes 32 rows. Result into this tile's input buffer.
    float* out_s = in_s;
    for (int it = tid; it < items1; it += nt) {
      const int cb = it >> p.lth, i = it & (th - 1);
      float acc[R1];
#pragma unroll
      for (int q = 0; q < R1; ++q) acc[q] = 0.f;
      if constexpr (VEC1) {
        // float4 reads from the aligned column cb * R1; element e of the R1 + K - 1 inputs is
        // column cb * R1 + shift + e.
        const float4* row = reinterpret_cast<const float4*>(mid_s + i * mid_pitch + cb * R1);
        constexpr int NV = (shift + R1 + K - 1 + 3) / 4;
#pragma unroll
        for (int v = 0; v < NV; ++v) {
          const float4 x4 = row[v];
          const float xs[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int e = 4 * v + u - shift;
#pragma unroll
            for (int q = 0; q < R1; ++q)
              if (e - q >= 0 && e - q < K) acc[q] = fmaf(xs[u], p.wt[K + e - q], acc[q]);
          }
        }
        float4* o = reinterpret_cast<float4*>(out_s + i * out_pitch + cb * R1);
#pragma unroll
        for (int q = 0; q < R1 / 4; ++q)
          o[q] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
      } else {
        const float* row = mid_s + i * mid_pitch + shift + cb * R1;
#pragma unroll
        for (int e = 0; e < R1 + K - 1; ++e) {
          const float x = row[e];
#pragma unroll
          for (int q = 0; q < R1; ++q)
            if (e - q >= 0 && e - q < K) acc[q] = fmaf(x, p.wt[K + e - q], acc[q]);
        }
#pragma unroll
        for (int q = 0; q < R1; ++q) out_s[i * out_pitch + cb * R1 + q] = acc[q];
      }
    }
    __syncthreads();

    // The tile: float4 stores (16 lanes per 64-float row) where the output allows.
    const int rows = min(th, p.h - y0), cols = min(kTW, p.w - x0);
    if (VEC1 && p.vec_out && cols == kTW) {
      const int j4 = tid & 15;
      for (int i = tid >> 4; i < rows; i += nt >> 4) {
        const float4 v = *reinterpret_cast<const float4*>(out_s + i * out_pitch + 4 * j4);
        *reinterpret_cast<float4*>(out + (y0 + i) * p.out_stride + x0 + 4 * j4) = v;
      }
    } else {
      const int lane = tid & 31;
      for (int i = tid >> 5; i < rows; i += nt >> 5) {
        float* orow = out + (y0 + i) * p.out_stride + x0;
        for (int j = lane; j < cols; j += 32) orow[j] = out_s[i * out_pitch + j];
      }
    }
    __syncthreads();  // out_s is the buffer the next iteration's prefetch fills
  }
}

// The variants 2 .. 1 + kNumFixed of SeparableBoundaryArgs::variant.
// minb: __launch_bounds__' minimum blocks of 512 threads per SM (1: ptxas free to use up to
// 128 registers for load hoisting / ILP; 3: capped at 40 registers, the generic kernel's
// occupancy); nstage: staged tiles per block (3: two tiles' loads in flight while one filters).
struct FixedCfg {
  int R0, V0, R1;
  bool vec1;
  int minb, nstage;
  const char* name;
  int nt = 0;               // NT
  bool all_tiles = false;   // one block per tile
};
constexpr FixedCfg kFixed[] = {
    {8, 1, 8, false, 1, 2, "fixK r8|r8"},        // 2: taps compiled in, generic's work split
    {8, 1, 8, true, 1, 2, "fixK r8|r8v"},        // 3: + float4 axis-1 reads, output stores
    {8, 4, 8, true, 1, 2, "fixK c4r8|r8v"},      // 4: + 4 columns per axis-0 thread (float4)
    {16, 1, 16, true, 1, 2, "fixK r16|r16v"},    // 5: 16 outputs per thread both ways
    {8, 4, 16, true, 1, 2, "fixK c4r8|r16v"},    // 6: float4 axis 0, 16 per axis-1 thread
    {8, 1, 8, true, 3, 2, "fixK r8|r8v occ3"},   // 7: variant 3 at <= 40 registers
    {8, 1, 8, true, 3, 3, "fixK r8|r8v occ3 s3"},  // 8: variant 7, 3 staged tiles
    {16, 1, 16, true, 1, 3, "fixK r16|r16v s3"},   // 9: variant 5, 3 staged tiles
    // one block per tile, one staged tile (the H100 sweep's v18 / v20)
    {8, 1, 8, true, 1, 1, "np r8|r8v", 0, true},             // 10: variant 3's work split
    {8, 1, 8, true, 4, 1, "np r8|r8v t256 m4", 256, true},   // 11: 256 threads, <= 64 regs
};
constexpr int kNumFixed = sizeof(kFixed) / sizeof(kFixed[0]);

// The variants the package builds: those separable_boundary.cu's default table picks (3, 10,
// 11). The others are timed only by the tuning harness (benchmarks/harness/
// separable_boundary_check.cu), whose build defines TC_TUNING_VARIANTS to compile all of them.
bool fixed_built(int v) {
#ifdef TC_TUNING_VARIANTS
  return v >= 2 && v < 2 + kNumFixed;
#else
  return v == 3 || v == 10 || v == 11;
#endif
}

int fixed_variant_count() { return kNumFixed; }
const char* fixed_variant_name(int v) {
  return v >= 2 && v < 2 + kNumFixed ? kFixed[v - 2].name : "?";
}

std::size_t fixed_smem(int v, int K, int th) {
  const FixedCfg& c = kFixed[v - 2];
  return static_cast<std::size_t>(fx_total(K, c.vec1, th, c.nstage)) * sizeof(float);
}

int fixed_th(int v, int K, int forced, int optin) {
  if (forced == 0) return fit_tile_rows([&](int th) { return fixed_smem(v, K, th); }, optin);
  if ((forced != 16 && forced != 32 && forced != 64) ||
      fixed_smem(v, K, forced) > static_cast<std::size_t>(optin))
    return 0;
  return forced;
}

bool fixed_th_fits(int v, int K, int th, int optin) {
  return fixed_built(v) && K >= 3 && K <= kFixedMaxTaps && K % 2 == 1 &&
         fixed_th(v, K, th, optin) == th;
}

bool fixed_supported(int v, std::int64_t rows, std::int64_t cols, int k0, int k1, DType dtype,
                     int optin) {
  (void)rows;
  (void)cols;
  return fixed_built(v) && dtype == DType::f32 && k0 == k1 && k0 % 2 == 1 &&
         k0 >= 3 && k0 <= kFixedMaxTaps && fixed_th(v, k0, 0, optin) > 0;
}

template <int K, int R0, int V0, int R1, bool VEC1, int MINB, int NSTAGE, int NT>
void launch_one(const SeparableBoundaryArgs& a, int v, DeviceInfo& dev, bool all_tiles) {
  const int th = fixed_th(v, K, a.tile_rows, dev.optin);
  if (th == 0)
    throw ValueError("separable_boundary: tile_rows must be 16, 32 or 64 and fit shared memory");
  constexpr int G0 = V0 == 1 ? kTW + K - 1 : fx_in_pitch(K) / 4;
  launch_persistent(fixed_kernel<K, R0, V0, R1, VEC1, MINB, NSTAGE, NT>,
                    make_params<float>(a, th),
                    NT ? NT : pick_threads(th / R0 * G0, th * kTW / R1), fixed_smem(v, K, th), v,
                    a, dev, all_tiles);
}

template <int C>
void launch_cfg(const SeparableBoundaryArgs& a, int v, DeviceInfo& dev) {
  constexpr FixedCfg c = kFixed[C];
  switch (a.k0) {
#define TC_SEPB_K(K)                                                                       \
  case K:                                                                                  \
    return launch_one<K, c.R0, c.V0, c.R1, c.vec1, c.minb, c.nstage, c.nt>(a, v, dev,     \
                                                                          c.all_tiles);
    TC_SEPB_K(3) TC_SEPB_K(5) TC_SEPB_K(7) TC_SEPB_K(9) TC_SEPB_K(11) TC_SEPB_K(13)
    TC_SEPB_K(15) TC_SEPB_K(17) TC_SEPB_K(19) TC_SEPB_K(21) TC_SEPB_K(23)
#undef TC_SEPB_K
    default: throw ValueError("separable_boundary: fixed-tap variant needs 3..23 taps");
  }
}

void launch_fixed(const SeparableBoundaryArgs& a, int v, DeviceInfo& dev) {
  static_assert(kNumFixed == 10, "one case per kFixed row");
  switch (v) {
    case 3: return launch_cfg<1>(a, v, dev);
    case 10: return launch_cfg<8>(a, v, dev);
    case 11: return launch_cfg<9>(a, v, dev);
#ifdef TC_TUNING_VARIANTS
    case 2: return launch_cfg<0>(a, v, dev);
    case 4: return launch_cfg<2>(a, v, dev);
    case 5: return launch_cfg<3>(a, v, dev);
    case 6: return launch_cfg<4>(a, v, dev);
    case 7: return launch_cfg<5>(a, v, dev);
    case 8: return launch_cfg<6>(a, v, dev);
    case 9: return launch_cfg<7>(a, v, dev);
#endif
    default: throw ValueError("separable_boundary: variant out of range");
  }
}

}  // namespace sepb
}  // namespace cuda
}  // namespace tc
