// im2tensor (Seznec et al. 2022): valid correlation as P = K̂ᵀŜ on tensor cores, then Tr₊, the
// sums along the diagonals of every slice P[r] (paper eq. 5). This header holds what the five
// variants share: precision traits, block geometry (paper §4.2), the one P_block kernel (its
// template flags select the variant), the Tr₊ / recombination passes and the Plan class.
//
// Index map (paper §3, with x = column of K, y = row of K, c = image column, r = output row):
//   P[r][x][c] = sum_y K[y][x] * I[r+y][c]          (the GEMM  K̂ᵀ (x×y)  ·  S_r (y×c))
//   R[r][j]    = sum_x P[r][x][j+x]                 (Tr₊: diagonal j = c - x of slice r)
// A P_block (paper fig. 4) is (hB rows of x) × (Wc columns of c) × (dB rows of r); one thread
// block (CTA) computes one, each warp one r at a time, WMMA tiles of M×N×K inside.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>
#include <string>

#include "cuda/runtime/common.cuh"
#include "cuda/runtime/nonfinite.cuh"

namespace tc {
namespace cuda {
namespace i2t {

namespace wmma = nvcuda::wmma;

// ---------------------------------------------------------------------------------------------
// Precision traits. In: image/output storage; Stage: what the tensor cores read (shared memory
// and prepared K̂ᵀ); Frag: the WMMA element type; Acc: the tensor-core accumulator; Part: what
// partial diagonal sums are added in. M×N×K is the WMMA shape: M along x (kernel width), N along
// c (image columns), K along y (kernel height). M = 8 wherever the API offers it because x and y
// are the padded dimensions (paper §4.2.2: keep m_tc and k_tc small; n_tc pads only the image).
// SPLIT = 3: fp32 accuracy from tf32 tensor cores by a = a_hi + a_lo (3xTF32).
// ---------------------------------------------------------------------------------------------
struct TrFp16 {  // half accumulator requested from the tensor cores (the paper's "fp16")
  using In = __half; using Out = __half; using Stage = __half; using Frag = __half;
  using Acc = __half; using Part = float;
  static constexpr int M = 8, N = 32, K = 16, SPLIT = 1;
};
struct TrFp16Fp32 {
  using In = __half; using Out = __half; using Stage = __half; using Frag = __half;
  using Acc = float; using Part = float;
  static constexpr int M = 8, N = 32, K = 16, SPLIT = 1;
};
struct TrBf16 {
  using In = float; using Out = float; using Stage = __nv_bfloat16; using Frag = __nv_bfloat16;
  using Acc = float; using Part = float;
  static constexpr int M = 8, N = 32, K = 16, SPLIT = 1;
};
struct TrTf32 {  // only m16n16k8 exists for tf32
  using In = float; using Out = float; using Stage = float; using Frag = wmma::precision::tf32;
  using Acc = float; using Part = float;
  static constexpr int M = 16, N = 16, K = 8, SPLIT = 1;
};
struct TrFp32Split {
  using In = float; using Out = float; using Stage = float; using Frag = wmma::precision::tf32;
  using Acc = float; using Part = float;
  static constexpr int M = 16, N = 16, K = 8, SPLIT = 3;
};
struct TrFp64 {  // DMMA, m8n8k4
  using In = double; using Out = double; using Stage = double; using Frag = double;
  using Acc = double; using Part = double;
  static constexpr int M = 8, N = 8, K = 4, SPLIT = 1;
};

// Image value -> what the tensor cores read. tf32 is rounded once here (RNE), not truncated by
// the hardware; the split keeps full floats and splits per fragment.
template <class T> __device__ __forceinline__ typename T::Stage to_stage(typename T::In v);
template <> __device__ __forceinline__ __half to_stage<TrFp16>(__half v) { return v; }
template <> __device__ __forceinline__ __half to_stage<TrFp16Fp32>(__half v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 to_stage<TrBf16>(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ float to_stage<TrTf32>(float v) {
  return wmma::__float_to_tf32(v);
}
template <> __device__ __forceinline__ float to_stage<TrFp32Split>(float v) { return v; }
template <> __device__ __forceinline__ double to_stage<TrFp64>(double v) { return v; }

// Kernel coefficient (float64 on the host) -> Stage; `lo` gives the low part of a split.
template <class T> __device__ __forceinline__ typename T::Stage k_stage(double v, bool lo) {
  if constexpr (std::is_same_v<T, TrFp16> || std::is_same_v<T, TrFp16Fp32>) {
    return __double2half(v);
  } else if constexpr (std::is_same_v<T, TrBf16>) {
    return __double2bfloat16(v);
  } else if constexpr (std::is_same_v<T, TrTf32>) {
    return wmma::__float_to_tf32(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, TrFp32Split>) {
    const float f = static_cast<float>(v), hi = wmma::__float_to_tf32(f);
    return lo ? wmma::__float_to_tf32(f - hi) : hi;
  } else {
    return v;
  }
}

template <class X> __device__ __forceinline__ X zero_of() { return X(0); }
template <> __device__ __forceinline__ __half zero_of<__half>() { return __float2half(0.f); }
template <> __device__ __forceinline__ __nv_bfloat16 zero_of<__nv_bfloat16>() {
  return __float2bfloat16(0.f);
}

template <class P, class A> __device__ __forceinline__ P widen(A v) { return static_cast<P>(v); }
template <> __device__ __forceinline__ float widen<float, __half>(__half v) { return __half2float(v); }

template <class O, class P> __device__ __forceinline__ O narrow(P v) { return static_cast<O>(v); }
template <> __device__ __forceinline__ __half narrow<__half, float>(float v) {
  return __float2half_rn(v);
}

// ---------------------------------------------------------------------------------------------
// Geometry (host-computed, passed by value).
// ---------------------------------------------------------------------------------------------
enum class Epi : int { store_p, partial_c, atomic_r };

constexpr int kWarps = 8;      // warps per CTA; each takes rows r of the P_block in turn
constexpr int kXTilesMax = 8;  // accumulator fragments a warp holds: hB <= kXTilesMax * M

struct Geo {
  int ih, iw, kh, kw, hR, wR;
  int hKp;            // ĥ_K: kh padded to K (eq. 11)
  int hB, nI, nxt;    // P_block height along x, x-blocks, M-tiles per x-block
  int Wc, nJ, nct;    // P_block width along c, c-blocks, N-tiles per c-block
  int dB, nRB;        // P_block depth along r, r-blocks
  int NC;             // rows of the partial-sum buffer C (fused)
  long long wP;       // row length of the P workspace (non-fused)
  int PX;             // rows of P per r: nI * hB
  int ldA, ldS, rowsS;  // shared-memory leading dimensions (elements) and staged image rows
};

struct Args {
  const void* in; long long in_ld;
  void* out; long long out_ld;
  const void* kt;     // K̂ᵀ: [nI*hB][hKp] in Stage, zero padded
  const void* kt_lo;  // low half of the split (SPLIT == 3), else nullptr
  void* ws;           // P (store_p) or C (partial_c)
  Geo g;
  bool vec_ok;        // image rows 16-byte aligned: stage with 16-byte loads
  int* nf;            // NonfiniteRepair's flag, marked by the mma path's final stores
};

__host__ __device__ inline std::size_t align_up(std::size_t v, std::size_t a) {
  return (v + a - 1) / a * a;
}

// Image rows r0.. (rows of them) × columns c0..c0+W-1 into shared memory (ld ldd), converted to
// Stage, zero outside the image. Each thread issues UNR independent 16-byte loads before it
// stores anything (the loads' latency, not bandwidth, is what staging costs); misaligned images
// take the same path one element per load.
template <class T, int UNR = 4>  // UNR: vectors in flight per thread
__device__ __forceinline__ void stage_image(const typename T::In* img, long long ld, int ih,
                                            int iw, int r0, int rows, int c0, int W,
                                            typename T::Stage* dst, int ldd, bool vec_ok) {
  using In = typename T::In;
  constexpr int V = 16 / sizeof(In);
  struct alignas(16) Vec { In x[V]; };
  using St = typename T::Stage;
  struct alignas(sizeof(St) * V) SVec { St x[V]; };
  if (vec_ok) {
    const int vpr = W / V, total = rows * vpr;
    for (int base = threadIdx.x; base < total; base += UNR * blockDim.x) {
      Vec v[UNR];
#pragma unroll
      for (int u = 0; u < UNR; ++u) {
        const int e = base + u * blockDim.x;
        const int row = e / vpr, col = (e % vpr) * V, gr = r0 + row, gc = c0 + col;
        if (e < total && gr < ih && gc + V <= iw) {
          v[u] = *reinterpret_cast<const Vec*>(img + static_cast<std::size_t>(gr) * ld + gc);
        } else {
#pragma unroll
          for (int i = 0; i < V; ++i)
            v[u].x[i] = (e < total && gr < ih && gc + i < iw)
                            ? img[static_cast<std::size_t>(gr) * ld + gc + i] : In(0);
        }
      }
#pragma unroll
      for (int u = 0; u < UNR; ++u) {
        const int e = base + u * blockDim.x;
        if (e < total) {
          // One vector store per load: element-wise 2-byte stores cost 8 shared-memory
          // instructions with 4-way bank conflicts each (measured: ~15 % of the L1 wavefronts
          // of the mma.sync kernel at k = 15). Rows of dst are multiples of 16 bytes.
          SVec sv;
#pragma unroll
          for (int i = 0; i < V; ++i) sv.x[i] = to_stage<T>(v[u].x[i]);
          *reinterpret_cast<SVec*>(dst + (e / vpr) * ldd + (e % vpr) * V) = sv;
        }
      }
    }
  } else {
    const int total = rows * W;
    for (int base = threadIdx.x; base < total; base += UNR * blockDim.x) {
      In v[UNR];
#pragma unroll
      for (int u = 0; u < UNR; ++u) {
        const int e = base + u * blockDim.x, gr = r0 + e / W, gc = c0 + e % W;
        v[u] = (e < total && gr < ih && gc < iw) ? img[static_cast<std::size_t>(gr) * ld + gc]
                                                 : In(0);
      }
#pragma unroll
      for (int u = 0; u < UNR; ++u) {
        const int e = base + u * blockDim.x;
        if (e < total) dst[(e / W) * ldd + e % W] = to_stage<T>(v[u]);
      }
    }
  }
}

// Shared-memory carve-up, identical on host (sizing) and device (pointers).
template <class T, bool STAGED, Epi E>
struct Smem {
  using S = typename T::Stage;
  static constexpr int padS = 32 / sizeof(S);  // 32 B skew keeps WMMA's 256-bit alignment
  std::size_t a, s, bscr, escr, dacc, total;
  __host__ __device__ explicit Smem(const Geo& g) {
    std::size_t o = 0;
    a = o;
    if (STAGED) o = align_up(o + sizeof(S) * (T::SPLIT == 3 ? 2 : 1) * g.hB * g.ldA, 128);
    s = o;
    if (STAGED) o = align_up(o + sizeof(S) * g.rowsS * g.ldS, 128);
    bscr = o;  // per-warp K×N tile of S read from global (non-staged)
    if (!STAGED) o = align_up(o + sizeof(S) * kWarps * T::K * (T::N + padS), 128);
    escr = o;  // per-warp M×N accumulator tile for the diagonal sums
    if (E != Epi::store_p)
      o = align_up(o + sizeof(typename T::Acc) * kWarps * T::M * (T::N + 8), 128);
    dacc = o;  // per-warp partial diagonal sums of one P_block slice
    if (E != Epi::store_p)
      o = align_up(o + sizeof(typename T::Part) * kWarps * (g.hB + g.Wc), 128);
    total = o;
  }
};

// ---------------------------------------------------------------------------------------------
// The P_block kernel (Algorithms 1 and 2, lines 4-10).
//   STAGED: K_block and S_block staged in shared memory once per CTA and reused by all warps and
//           rows (im2tensor_shmem/_fused/_atomic); otherwise each warp reads the rows of I it
//           needs straight from global memory (through L1) into a K×N fragment tile.
//   E:      store_p   -> write the P_block to the P workspace (Tr₊ runs afterwards);
//           partial_c -> diagonal sums inside the P_block, written to the C buffer row of the
//                        block's antidiagonal (paper §4.2.4);
//           atomic_r  -> the same partial sums added atomically into R.
// ---------------------------------------------------------------------------------------------
// XT: accumulator fragments per warp (>= nxt), a template so small kernels hold fewer registers.
template <class T, bool STAGED, Epi E, int XT>
__global__ void __launch_bounds__(kWarps * 32) pblock_kernel(Args a) {
  using S = typename T::Stage;
  using In = typename T::In;
  using Acc = typename T::Acc;
  using Part = typename T::Part;
  constexpr int M = T::M, N = T::N, K = T::K;
  using FragA = wmma::fragment<wmma::matrix_a, M, N, K, typename T::Frag, wmma::row_major>;
  using FragB = wmma::fragment<wmma::matrix_b, M, N, K, typename T::Frag, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, M, N, K, Acc>;
  constexpr int padS = Smem<T, STAGED, E>::padS;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Geo& g = a.g;
  const Smem<T, STAGED, E> lay(g);
  const int jb = blockIdx.x, rb = blockIdx.y, ib = blockIdx.z;
  const int c0 = jb * g.Wc, r0 = rb * g.dB, x0 = ib * g.hB;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const In* img = static_cast<const In*>(a.in);
  const S* ktg = static_cast<const S*>(a.kt);
  const S* ktg_lo = static_cast<const S*>(a.kt_lo);

  S* sA = reinterpret_cast<S*>(smem_raw + lay.a);
  S* sS = reinterpret_cast<S*>(smem_raw + lay.s);
  if constexpr (STAGED) {
    // K_block: rows x0..x0+hB of K̂ᵀ (both halves of a split).
    for (int s = 0; s < T::SPLIT && s < 2; ++s) {
      const S* src = (s == 0 ? ktg : ktg_lo) + static_cast<std::size_t>(x0) * g.hKp;
      S* dst = sA + s * g.hB * g.ldA;
      for (int e = threadIdx.x; e < g.hB * g.hKp; e += blockDim.x)
        dst[(e / g.hKp) * g.ldA + e % g.hKp] = src[e];
    }
    // S_block: image rows r0 .. r0+dB+ĥK-2, columns c0 .. c0+Wc-1 (eq. 16: the duplicated rows
    // of S are read once); outside the image -> 0.
    stage_image<T>(img, a.in_ld, g.ih, g.iw, r0, g.rowsS, c0, g.Wc, sS, g.ldS, a.vec_ok);
    __syncthreads();
  }

  S* bscr = reinterpret_cast<S*>(smem_raw + lay.bscr) + warp * K * (N + padS);
  Acc* escr = reinterpret_cast<Acc*>(smem_raw + lay.escr) + warp * M * (N + 8);
  Part* dacc = reinterpret_cast<Part*>(smem_raw + lay.dacc) + warp * (g.hB + g.Wc);
  const int ndiag = g.hB + g.Wc - 1;  // diagonals crossing a hB×Wc slice

  for (int rr = warp; rr < g.dB; rr += kWarps) {
    const int r = r0 + rr;
    if (r >= g.hR) break;  // warp-uniform
    if constexpr (E != Epi::store_p) {
      for (int d = lane; d < ndiag; d += 32) dacc[d] = Part(0);
      __syncwarp();
    }
    for (int ct = 0; ct < g.nct; ++ct) {
      FragC acc[XT];
#pragma unroll
      for (int xt = 0; xt < XT; ++xt) wmma::fill_fragment(acc[xt], zero_of<Acc>());

      for (int kc = 0; kc < g.hKp / K; ++kc) {
        FragB b;
        if constexpr (STAGED) {
          wmma::load_matrix_sync(b, sS + (rr + kc * K) * g.ldS + ct * N, g.ldS);
        } else {
          // S_r rows kc*K.. of this N-wide column tile, read from I where the warp needs them.
          // All loads first, then the stores: K*N/32 independent loads in flight per lane.
          const int gc = c0 + ct * N;
          constexpr int PER = K * N / 32;
          In v[PER];
#pragma unroll
          for (int u = 0; u < PER; ++u) {
            const int e = lane + 32 * u, y = e / N, col = e % N, gr = r + kc * K + y;
            v[u] = (gr < g.ih && gc + col < g.iw)
                       ? img[static_cast<std::size_t>(gr) * a.in_ld + gc + col]
                       : In(0);
          }
#pragma unroll
          for (int u = 0; u < PER; ++u) {
            const int e = lane + 32 * u;
            bscr[(e / N) * (N + padS) + e % N] = to_stage<T>(v[u]);
          }
          __syncwarp();
          wmma::load_matrix_sync(b, bscr, N + padS);
          __syncwarp();
        }
        FragB b_lo;
        if constexpr (T::SPLIT == 3) {
          for (int t = 0; t < b.num_elements; ++t) {
            const float v = b.x[t], hi = wmma::__float_to_tf32(v);
            b.x[t] = hi;
            b_lo.x[t] = wmma::__float_to_tf32(v - hi);
          }
        }
#pragma unroll
        for (int xt = 0; xt < XT; ++xt) {
          if (xt < g.nxt) {
            FragA fa;
            if constexpr (STAGED)
              wmma::load_matrix_sync(fa, sA + xt * M * g.ldA + kc * K, g.ldA);
            else
              wmma::load_matrix_sync(
                  fa, ktg + static_cast<std::size_t>(x0 + xt * M) * g.hKp + kc * K, g.hKp);
            if constexpr (T::SPLIT == 3) {
              // Each K-chunk's three products go to a fresh fragment added to the running sum
              // with IEEE rounding: the tensor core's own accumulation truncates, and over
              // ĥK/8 chunks that bias grows with k (measured: MAPE 1.5e-5 % at k=15,
              // 7e-5 % at k=55 before this).
              FragC part;
              wmma::fill_fragment(part, zero_of<Acc>());
              FragA fa_lo;
              if constexpr (STAGED)
                wmma::load_matrix_sync(fa_lo, sA + (g.hB + xt * M) * g.ldA + kc * K, g.ldA);
              else
                wmma::load_matrix_sync(
                    fa_lo, ktg_lo + static_cast<std::size_t>(x0 + xt * M) * g.hKp + kc * K,
                    g.hKp);
              // small products first: they survive in the fp32 accumulator
              wmma::mma_sync(part, fa_lo, b, part);
              wmma::mma_sync(part, fa, b_lo, part);
              wmma::mma_sync(part, fa, b, part);
              for (int t = 0; t < part.num_elements; ++t) acc[xt].x[t] += part.x[t];
            } else {
              wmma::mma_sync(acc[xt], fa, b, acc[xt]);
            }
          }
        }
      }

      if constexpr (E == Epi::store_p) {
        Acc* P = static_cast<Acc*>(a.ws);
#pragma unroll
        for (int xt = 0; xt < XT; ++xt)
          if (xt < g.nxt)
            wmma::store_matrix_sync(
                P + (static_cast<std::size_t>(r) * g.PX + x0 + xt * M) * g.wP + c0 + ct * N,
                acc[xt], static_cast<unsigned>(g.wP), wmma::mem_row_major);
      } else {
        // Fused: diagonal sums of each M×N tile into the slice's diagonal accumulator. Local
        // diagonal of (x, c) in the slice: d = c - x + hB - 1; lane owns distinct d's per tile.
#pragma unroll
        for (int xt = 0; xt < XT; ++xt) {
          if (xt < g.nxt) {
            wmma::store_matrix_sync(escr, acc[xt], N + 8, wmma::mem_row_major);
            __syncwarp();
            const int dbase = ct * N - xt * M - (M - 1) + g.hB - 1;
            for (int t = lane; t < M + N - 1; t += 32) {
              Part s = Part(0);
#pragma unroll
              for (int xl = 0; xl < M; ++xl) {
                const int cl = t - (M - 1) + xl;
                if (cl >= 0 && cl < N) s += widen<Part>(escr[xl * (N + 8) + cl]);
              }
              dacc[dbase + t] += s;
            }
            __syncwarp();
          }
        }
      }
    }

    if constexpr (E != Epi::store_p) {
      // Output column of local diagonal d: j = c0 - x0 + d - (hB - 1).
      const int jofs = c0 - x0 - (g.hB - 1);
      if constexpr (E == Epi::partial_c) {
        Part* C = static_cast<Part*>(a.ws);
        const int row = (ib + jb) % g.NC;  // blocks of one block-antidiagonal share a row
        Part* dst = C + (static_cast<std::size_t>(r) * g.NC + row) * g.wR;
        for (int d = lane; d < ndiag; d += 32) {
          const int j = jofs + d;
          if (j >= 0 && j < g.wR) dst[j] = dacc[d];
        }
      } else {
        using Out = typename T::Out;
        Out* R = static_cast<Out*>(a.out) + static_cast<std::size_t>(r) * a.out_ld;
        for (int d = lane; d < ndiag; d += 32) {
          const int j = jofs + d;
          if (j >= 0 && j < g.wR) atomicAdd(R + j, narrow<Out>(dacc[d]));
        }
      }
      __syncwarp();
    }
  }
}

// K̂ᵀ[x][y] = K[y][x] for x < kw, y < kh, else 0 (eq. 12), rounded on the device to Stage.
template <class T>
__global__ void prep_kt_kernel(const double* k, int kh, int kw, int rows, int hKp,
                               typename T::Stage* kt, typename T::Stage* kt_lo) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= rows * hKp) return;
  const int x = e / hKp, y = e % hKp;
  const double v = (x < kw && y < kh) ? k[static_cast<std::size_t>(y) * kw + x] : 0.0;
  if constexpr (T::SPLIT == 3) {
    if (!kt_lo) {  // cuBLAS's exact fp32 path: the plain float
      kt[e] = static_cast<float>(v);
      return;
    }
  }
  kt[e] = k_stage<T>(v, false);
  if (kt_lo) kt_lo[e] = k_stage<T>(v, true);
}

// Tr₊ (Algorithm 1, lines 11-17): R[r][j] = sum_{x<kw} P[r][x][j+x]; P rows of length wP, PX
// rows per r. Shared with im2tensor_cublas.
template <class Acc, class Part, class Out>
__global__ void trplus_kernel(const Acc* P, long long wP, int PX, int kw, int hR, int wR,
                              Out* out, long long out_ld) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= wR) return;
  for (int r = blockIdx.y; r < hR; r += gridDim.y) {
    const Acc* p = P + static_cast<std::size_t>(r) * PX * wP + j;
    Part s = Part(0);
    for (int x = 0; x < kw; ++x) s += widen<Part>(p[static_cast<std::size_t>(x) * wP + x]);
    out[static_cast<std::size_t>(r) * out_ld + j] = narrow<Out>(s);
  }
}

// Recombination of the partial sums (Algorithm 2, lines 13-19): R[r][j] adds, for every P_block
// (i, jb) whose diagonals cross j, its partial in C row (i + jb) mod NC.
template <class Part, class Out>
__global__ void recombine_kernel(const Part* C, Geo g, Out* out, long long out_ld) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= g.wR) return;
  for (int r = blockIdx.y; r < g.hR; r += gridDim.y) {
    const Part* c = C + static_cast<std::size_t>(r) * g.NC * g.wR + j;
    Part s = Part(0);
    for (int i = 0; i < g.nI; ++i) {
      const int lo = (j + i * g.hB) / g.Wc;
      const int hi = min((j + i * g.hB + g.hB - 1) / g.Wc, g.nJ - 1);
      for (int jb = lo; jb <= hi; ++jb) s += c[static_cast<std::size_t>((i + jb) % g.NC) * g.wR];
    }
    out[static_cast<std::size_t>(r) * out_ld + j] = narrow<Out>(s);
  }
}

// The same for the mma path (nI = 1), which writes every diagonal inside a P_block final: only
// the kw-1 columns left of each block boundary remain, each the sum of the partials of blocks
// jb and jb+1 (C laid out by mma_edge_slot, mma_fused.cuh). A thread takes kRecRows rows of
// one column, its loads independent (the kernel is bound by their latency, not by bandwidth). Launched as a programmatic dependent of the
// P_block kernel: its blocks are scheduled during that grid's last wave and wait here.
constexpr int kRecRows = 8;
template <class Part, class Out>
__global__ void recombine_edges_kernel(const Part* __restrict__ C, Geo g, Out* __restrict__ out,
                                       long long out_ld, int* nf) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const int e = g.kw - 1, t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= g.nJ * e) return;
  const int jb = t / e, j = (jb + 1) * g.Wc - e + t % e;
  if (j >= g.wR) return;
  const std::size_t rs = static_cast<std::size_t>(g.nJ) * 2 * e;  // one output row's edges
  const Part* c0 = C + static_cast<std::size_t>(jb) * 2 * e + t % e;  // boundary jb + 1
  const Part* c1 = c0 + e;
  const bool two = jb + 1 < g.nJ;
  for (int r0 = blockIdx.y * kRecRows; r0 < g.hR; r0 += gridDim.y * kRecRows) {
    Part v[kRecRows];
#pragma unroll
    for (int u = 0; u < kRecRows; ++u) {
      const int r = r0 + u;
      v[u] = r < g.hR ? c0[r * rs] + (two ? c1[r * rs] : Part(0)) : Part(0);
    }
#pragma unroll
    for (int u = 0; u < kRecRows; ++u)
      if (r0 + u < g.hR) {
        out[static_cast<std::size_t>(r0 + u) * out_ld + j] = narrow<Out>(v[u]);
        mark_nonfinite(nf, v[u]);
      }
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.
// ---------------------------------------------------------------------------------------------
// Rows of C (paper §4.2.4): the smallest period p such that the P_blocks whose diagonals cross
// any one output column j lie on block-antidiagonals distinct mod p (blocks of one antidiagonal
// never share a diagonal, so they share a row; rows are reused once antidiagonals are far enough
// apart, eqs. 18-19). Shifting j by Wc shifts every covering block by one antidiagonal, so
// checking j < Wc (without clipping at the image edge, which only removes blocks) suffices.
inline int c_rows(const Geo& g) {
  for (int p = 1;; ++p) {
    bool ok = true;
    std::vector<char> seen(p);
    for (int j = 0; j < g.Wc && ok; ++j) {
      std::fill(seen.begin(), seen.end(), 0);
      for (int i = 0; i < g.nI && ok; ++i)
        for (int jb = (j + i * g.hB) / g.Wc; jb <= (j + i * g.hB + g.hB - 1) / g.Wc; ++jb) {
          char& s = seen[(i + jb) % p];
          if (s) { ok = false; break; }
          s = 1;
        }
    }
    if (ok) return p;
  }
}

inline int checked_int(std::int64_t v, const char* what) {
  if (v > 0x7fffffffLL) throw ValueError(std::string("im2tensor: ") + what + " exceeds 2^31-1");
  return static_cast<int>(v);
}

// Block geometry for one kernel size (paper §4.2.1-4.2.3): x padded to M and split into the
// fewest x-blocks of at most kXTilesMax tiles, balanced so the last one wastes the least; y
// padded to K; c-blocks of Wc columns; dB output rows per CTA.
inline Geo make_geo(int M, int N, int K, const PlanRequest& r, int Wc, int dB) {
  Geo g{};
  g.ih = checked_int(r.ih, "image height");
  g.iw = checked_int(r.iw, "image width");
  g.kh = static_cast<int>(r.kh);
  g.kw = static_cast<int>(r.kw);
  g.hR = g.ih - g.kh + 1;
  g.wR = g.iw - g.kw + 1;
  g.hKp = ceil_div(g.kh, K) * K;
  const int tiles = ceil_div(g.kw, M);
  g.nI = ceil_div(tiles, kXTilesMax);
  g.nxt = ceil_div(tiles, g.nI);
  g.hB = g.nxt * M;
  g.Wc = Wc;
  g.nct = Wc / N;
  g.nJ = ceil_div(g.iw, Wc);
  g.dB = dB;
  g.nRB = ceil_div(g.hR, dB);
  g.NC = 1;
  g.PX = g.nI * g.hB;
  g.wP = static_cast<long long>(g.nJ) * Wc;
  return g;
}

inline void check_launch_dims(const Geo& g) {
  if (g.nRB > 65535 || g.nI > 65535)
    throw ValueError("im2tensor: image or kernel too large for one launch (" +
                     std::to_string(g.nRB) + " row blocks, " + std::to_string(g.nI) +
                     " x-blocks; at most 65535 each)");
}

// Plan options im2tensor.wc / im2tensor.db override the P_block width / depth (tuning sweeps,
// and the tests' way to reach every geometry). A width the MMA tile (N) does not divide is a
// ValueError here, where N is known.
inline void tuning_override(int& Wc, int& dB, int N, const PlanOptions& o) {
  if (o.im2tensor_wc) {
    if (o.im2tensor_wc % N != 0)
      throw ValueError("plan option 'im2tensor.wc' = " + std::to_string(o.im2tensor_wc) +
                       " must be a multiple of this precision's MMA tile width " +
                       std::to_string(N));
    Wc = o.im2tensor_wc;
  }
  if (o.im2tensor_db) dB = o.im2tensor_db;
}

template <class T, bool STAGED, Epi E>
std::size_t smem_bytes(const Geo& g) { return Smem<T, STAGED, E>(g).total; }

constexpr std::size_t kSmemStagedMax = 160 * 1024;  // above this, read S from global instead
// Workspace ceiling (P of the Tr+ variants, C of the fused ones): taller images run in bands of
// output rows. 256 MB keeps 4096^2 images (fused, any kernel) and the mma path up to ~16384^2
// in one band.
constexpr std::size_t kWsCapBytes = std::size_t(256) << 20;

}  // namespace i2t
}  // namespace cuda
}  // namespace tc

#include "cuda/methods/im2tensor/mma_fused.cuh"

namespace tc {
namespace cuda {
namespace i2t {

// The plan of the four native variants. STAGED_PREF: stage in shared memory when it fits.
template <class T, bool STAGED_PREF, Epi E>
class Plan final : public CudaPlan {
 public:
  explicit Plan(const PlanRequest& r) : CudaPlan(r), nf_(r) {
    if constexpr (kHasMma<T> && STAGED_PREF && E != Epi::store_p) {
      if (r.kh <= 64 && r.kw <= 64 && !r.options.im2tensor_wmma) {
        // mma.sync path (mma_fused.cuh); plan option im2tensor.wmma keeps WMMA for comparisons.
        // x padded to 8 (the MMA's n), y to 16. dB output rows and nh 128-column passes per
        // CTA from the sweep (docs/design/im2tensor.md, 4096²): nh 4 with dB 32 for
        // kh <= 16, else nh 2 with dB 64; fewer passes where the staged rows would not let the
        // registers' CTAs per SM fit in shared memory or the grid would not fill the SMs.
        // Plan options (tuning, and the tests' way to reach every geometry): im2tensor.db,
        // im2tensor.passes.
        int Wc = kMmaWc, dB = r.kh <= 16 ? 32 : 64;
        tuning_override(Wc, dB, 16, r.options);
        const int nj = ceil_div(r.kw, 8), kc = ceil_div(r.kh, 16);
        const int minb = mma_min_blocks(nj, kc, MmaOp<T>::CREGS == 2);
        const bool nh_set = r.options.im2tensor_passes > 0;
        int nh = nh_set ? r.options.im2tensor_passes : r.kh <= 16 ? 4 : 2;
        for (;; nh /= 2) {
          g_ = make_geo(8, 8, 16, r, kMmaWc * nh, dB);
          g_.ldS = mma_lds(nh);
          g_.rowsS = g_.dB + g_.hKp - 1;
          if (nh_set) break;
          const std::size_t sm = MmaSmem(g_).total;
          const std::int64_t ctas = static_cast<std::int64_t>(g_.nJ) * g_.nRB;
          if (nh == 1 ||
              (sm * minb <= 220 * 1024 && ctas >= static_cast<std::int64_t>(sm_count()) * minb))
            break;
        }
        g_.ldA = 0;
        staged_ = true;
        threads_ = kMmaWarps * 32;
        mma_ = true;
        smem_ = MmaSmem(g_).total;
        kfn_ = pick_mma(g_.nxt, g_.hKp / 16);
      }
    }
    if (!kfn_) {
      constexpr int N = T::N;
      int Wc = (N == 8) ? 64 : 128;  // a few N-tiles per warp: fewer partials per output
      int dB = 32;
      tuning_override(Wc, dB, N, r.options);
      g_ = make_geo(T::M, N, T::K, r, Wc, dB);
      g_.ldA = g_.hKp + Smem<T, true, E>::padS;
      g_.ldS = g_.Wc + Smem<T, true, E>::padS;
      g_.rowsS = g_.dB + g_.hKp - 1;
      staged_ = STAGED_PREF && smem_bytes<T, true, E>(g_) <= kSmemStagedMax;
      smem_ = staged_ ? smem_bytes<T, true, E>(g_) : smem_bytes<T, false, E>(g_);
      kfn_ = staged_ ? pick<true>(g_.nxt) : pick<false>(g_.nxt);
    }
    check_launch_dims(g_);
    if (E == Epi::partial_c) g_.NC = c_rows(g_);

    // K̂ᵀ, prepared once on the device.
    const std::size_t ktn = static_cast<std::size_t>(g_.nI) * g_.hB * g_.hKp;
    DeviceBuffer k64;
    k64.upload(r.kernel, sizeof(double) * r.kh * r.kw);
    kt_.reset(sizeof(typename T::Stage) * ktn * (T::SPLIT == 3 ? 2 : 1));
    prep_kt(k64.get<double>(), nullptr);
    TC_CUDA_CHECK(cudaDeviceSynchronize());

    // Workspace per output row; the image is run in bands of band_ output rows so that it stays
    // within kWsCapBytes whatever the image height (a band is a whole number of row blocks).
    std::size_t per_row = 0;
    if (E == Epi::store_p)
      per_row = sizeof(typename T::Acc) * static_cast<std::size_t>(g_.PX) * g_.wP;
    else if (E == Epi::partial_c && mma_)
      per_row = sizeof(float) * 2 * g_.nJ * (g_.kw - 1);  // the CTA-edge columns only
    else if (E == Epi::partial_c)
      per_row = sizeof(typename T::Part) * static_cast<std::size_t>(g_.NC) * g_.wR;
    band_ = g_.hR;
    if (per_row > 0 && per_row * g_.hR > kWsCapBytes)
      band_ = std::min<std::int64_t>(
          g_.hR, std::max<std::int64_t>(1, kWsCapBytes / per_row / g_.dB) * g_.dB);
    ws_bytes_ = per_row * static_cast<std::size_t>(band_);
    ws_.reset(ws_bytes_);

    raise_dynamic_smem(kfn_, smem_);
  }

  std::size_t workspace_bytes() const override { return ws_bytes_; }

  // A new kernel: K̂ᵀ is remade on the device at the next call, on its stream.
  bool set_kernel(const double* k) override {
    kpending_.set(k, kh_ * kw_);
    k64_.ensure(kpending_.size() * sizeof(double));
    nf_.set_kernel(k);
    return true;
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t st) override {
    using Out = typename T::Out;
    if (kpending_.upload(k64_.get(), st)) prep_kt(k64_.get<double>(), st);
    // NaN/inf: the mma path's final stores flag the repair; the other paths (atomics, Tr+ and
    // recombination passes) have the repair test every output.
    const bool flagged = mma_ && E == Epi::partial_c;
    if (flagged) nf_.arm(st);
    Args a{in.data, in.row_stride, out.data, out.row_stride, kt_.get(), nullptr, ws_.get(), g_,
           false, flagged ? nf_.flag() : nullptr};
    a.vec_ok = reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 &&
               (in.row_stride * sizeof(typename T::In)) % 16 == 0;
    if (T::SPLIT == 3)
      a.kt_lo = kt_.get<typename T::Stage>() + static_cast<std::size_t>(g_.nI) * g_.hB * g_.hKp;
    if (E == Epi::atomic_r)
      TC_CUDA_CHECK(cudaMemset2DAsync(out.data, out.row_stride * sizeof(Out), 0,
                                      g_.wR * sizeof(Out), g_.hR, st));
    for (std::int64_t y0 = 0; y0 < g_.hR; y0 += band_) {
      // One band: output rows y0.. as a smaller image (the kernels index rows from a.in/a.out).
      Geo gb = g_;
      gb.hR = static_cast<int>(std::min<std::int64_t>(band_, g_.hR - y0));
      gb.ih = g_.ih - static_cast<int>(y0);
      gb.nRB = ceil_div(gb.hR, gb.dB);
      a.g = gb;
      a.in = in.ptr<typename T::In>() + y0 * in.row_stride;
      a.out = out.ptr<Out>() + y0 * out.row_stride;
      run_band(a, st);
    }
    nf_.run(in, out, st, flagged);
  }

 private:
  // K̂ᵀ from the float64 kernel `k64` on the device (the split formats' low part after it).
  void prep_kt(const double* k64, cudaStream_t st) {
    const std::size_t ktn = static_cast<std::size_t>(g_.nI) * g_.hB * g_.hKp;
    auto* kt = kt_.get<typename T::Stage>();
    prep_kt_kernel<T><<<ceil_div(ktn, 256), 256, 0, st>>>(k64, g_.kh, g_.kw, g_.nI * g_.hB,
                                                          g_.hKp, kt,
                                                          T::SPLIT == 3 ? kt + ktn : nullptr);
    TC_CUDA_LAUNCH_CHECK();
  }

  void run_band(const Args& a, cudaStream_t st) {
    using Out = typename T::Out;
    const Geo& g = a.g;
    Out* const out = static_cast<Out*>(a.out);
    const long long out_ld = a.out_ld;
    const dim3 grid(g.nJ, g.nRB, g.nI);
    kfn_<<<grid, threads_, smem_, st>>>(a);
    TC_CUDA_LAUNCH_CHECK();
    const dim3 g2(ceil_div(g.wR, 128), g.hR < 65535 ? g.hR : 65535);
    if (E == Epi::store_p) {
      trplus_kernel<typename T::Acc, typename T::Part, Out><<<g2, 128, 0, st>>>(
          ws_.get<typename T::Acc>(), g.wP, g.PX, g.kw, g.hR, g.wR, out, out_ld);
      TC_CUDA_LAUNCH_CHECK();
    } else if (E == Epi::partial_c) {
      if (mma_) {  // inner pixels written final: only the edge columns
        if (g.kw > 1) {
          const int rows = ceil_div(g.hR, kRecRows);
          cudaLaunchConfig_t cfg{};
          cfg.gridDim = dim3(ceil_div(static_cast<std::int64_t>(g.nJ) * (g.kw - 1), 128),
                             rows < 65535 ? rows : 65535);
          cfg.blockDim = dim3(128);
          cfg.stream = st;
          cudaLaunchAttribute at[1];
          at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
          at[0].val.programmaticStreamSerializationAllowed = 1;
          cfg.attrs = at;
          // only where the kernel's code waits (griddepcontrol, compiled for sm_90 on): code
          // from older PTX (e.g. compute_80 compiled by the driver for a Hopper) runs in order
          cfg.numAttrs = cuda_code_arch() >= 90 ? 1 : 0;
          TC_CUDA_CHECK(cudaLaunchKernelEx(&cfg, recombine_edges_kernel<typename T::Part, Out>,
                                           static_cast<const typename T::Part*>(ws_.get()), g,
                                           out, out_ld, a.nf));
        }
      } else {
        recombine_kernel<typename T::Part, Out><<<g2, 128, 0, st>>>(
            ws_.get<typename T::Part>(), g, out, out_ld);
      }
      TC_CUDA_LAUNCH_CHECK();
    }
  }

  using KernelFn = void (*)(Args);
  template <bool S> static KernelFn pick(int nxt) {
    if (nxt <= 2) return pblock_kernel<T, S, E, 2>;
    if (nxt <= 4) return pblock_kernel<T, S, E, 4>;
    return pblock_kernel<T, S, E, kXTilesMax>;
  }
  static KernelFn pick_mma(int nj, int kc) {
    if constexpr (kHasMma<T> && E != Epi::store_p) {
#define TC_I2T_MMA(N_, K_) \
  case N_ * 8 + K_: return pblock_mma_kernel<T, E, N_, K_>;
#define TC_I2T_MMA_K(N_) TC_I2T_MMA(N_, 1) TC_I2T_MMA(N_, 2) TC_I2T_MMA(N_, 3) TC_I2T_MMA(N_, 4)
      switch (nj * 8 + kc) {
        TC_I2T_MMA_K(1) TC_I2T_MMA_K(2) TC_I2T_MMA_K(3) TC_I2T_MMA_K(4)
        TC_I2T_MMA_K(5) TC_I2T_MMA_K(6) TC_I2T_MMA_K(7) TC_I2T_MMA_K(8)
      }
#undef TC_I2T_MMA_K
#undef TC_I2T_MMA
    }
    throw ValueError("im2tensor: no mma.sync kernel for this block shape");
  }
  KernelFn kfn_ = nullptr;
  int threads_ = kWarps * 32;
  bool mma_ = false;  // the mma.sync kernel (mma_fused.cuh) runs
  Geo g_{};
  bool staged_ = false;
  std::size_t smem_ = 0, ws_bytes_ = 0;
  std::int64_t band_ = 0;  // output rows per band (the workspace holds one band)
  DeviceBuffer kt_, ws_;
  DeviceBuffer k64_;        // set_kernel's float64 kernel on the device
  PendingKernel kpending_;  // set_kernel's kernel until the next call uploads it
  NonfiniteRepair nf_;
};

// Runtime precision -> traits.
template <bool STAGED_PREF, Epi E>
std::unique_ptr<tc::Plan> make_plan_for(const PlanRequest& r) {
  switch (r.precision) {
    case Precision::fp16: return std::make_unique<Plan<TrFp16, STAGED_PREF, E>>(r);
    case Precision::fp16fp32: return std::make_unique<Plan<TrFp16Fp32, STAGED_PREF, E>>(r);
    case Precision::bf16: return std::make_unique<Plan<TrBf16, STAGED_PREF, E>>(r);
    case Precision::tf32: return std::make_unique<Plan<TrTf32, STAGED_PREF, E>>(r);
    case Precision::fp32: return std::make_unique<Plan<TrFp32Split, STAGED_PREF, E>>(r);
    case Precision::fp64: return std::make_unique<Plan<TrFp64, STAGED_PREF, E>>(r);
  }
  throw ValueError("im2tensor: unknown precision");
}

}  // namespace i2t
}  // namespace cuda
}  // namespace tc
