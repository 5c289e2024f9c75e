// Papliński (1995), "Parallel computation of 2-D discrete convolutions": the convolution as one
// matrix product of a left and a right convolution matrix, G = lcm(F, r) · rcm(H, C) (eq. 2),
// and the row-by-row algorithm (section 2). What convmat.cu and convmat_rows.cu share: the
// traits (im2tensor's, for the mma.sync m16n8k16 formats fp16 / fp16fp32 / bf16), the kernel's
// pair table (the memory-reference mechanism of eqs. 6-7 for the Toeplitz operand), a transposed
// staging of image tiles, and the MMA wrappers.
//
// Valid correlation, not the paper's full convolution: out[i][j] = Σ_u Σ_v F[i+u][j+v] k[u][v].
// The correlation kernel is the convolution kernel flipped, so the paper's "flip" (h =
// fliplr(H(:)')) and ours cancel: the tables hold k as given. Only the valid rows of lcm are
// generated (its block shift runs upwards: row i of block u is image row i + u) and only the
// valid columns of rcm (column j of block u is k[u][β - j] at K index (u, β)).
#pragma once
#include "cuda/runtime/async_copy.cuh"
#include "cuda/methods/im2tensor/im2tensor.cuh"
#include "cuda/runtime/precision.cuh"

namespace tc {
namespace cuda {
namespace cm {

using i2t::MmaOp;
using i2t::TrBf16;
using i2t::TrFp16;
using i2t::TrFp16Fp32;

constexpr int kThreads = 128;  // 4 warps per CTA in both methods
constexpr int kStageLd = 40;   // staged rows of 32 (+8) 16-bit elements: 80 bytes, so the 8 rows
                               // of an ldmatrix 8x8 fall on distinct bank groups
constexpr int kQOff = 31;      // pair-table offset: word p holds the taps q = p - 31, p - 30

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t* r, const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// A warp's MT × NT accumulator tiles (m16n8): fp32 (fp16fp32, bf16) directly; fp16 asks the
// tensor cores for a half accumulator (the im2tensor paper's fp16) over one staged K chunk, then
// flush() adds that into fp32, as im2tensor's mma path does (a whole-K half sum would lose the
// small addends).
template <class T, int MT, int NT>
struct Tiles {
  static constexpr bool kHalf = MmaOp<T>::CREGS == 2;
  float f[MT][NT][4];
  std::uint32_t h[MT][NT][2];
  __device__ Tiles() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        f[mt][nt][0] = f[mt][nt][1] = f[mt][nt][2] = f[mt][nt][3] = 0.f;
        h[mt][nt][0] = h[mt][nt][1] = 0u;
      }
  }
  __device__ __forceinline__ void mma(int mt, int nt, const std::uint32_t* a,
                                      const std::uint32_t* b) {
    if constexpr (kHalf) MmaOp<T>::run(h[mt][nt], a, b);
    else MmaOp<T>::runf(f[mt][nt], a, b);
  }
  __device__ __forceinline__ void flush() {
    if constexpr (kHalf) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) f[mt][nt][e] += MmaOp<T>::get(h[mt][nt], e);
          h[mt][nt][0] = h[mt][nt][1] = 0u;
        }
    }
  }
  // Element e of tile (mt, nt) is row 16mt + g + 8(e/2), column 8nt + 2t + e%2 of the warp's
  // block; at(row, col) gives its offset in out, or -1 outside the output. A NaN or inf in the
  // image also reaches the sums of neighbouring outputs through the band's zero taps (0 × inf),
  // always as NaN: a finite sum had no non-finite operand, and a non-finite one is recomputed
  // over its own window by direct(row, col), so exactly scipy's outputs are non-finite.
  //
  // pairs: the two elements (e, e + 1) of a row, columns c and c + 1, are adjacent in out (the
  // caller checked that at() is row-major with an even stride and a pair-aligned base): one
  // vector store per pair, half the store instructions.
  template <class Out, class At, class Direct>
  __device__ __forceinline__ void store(Out* out, At at, Direct direct, bool pairs) const {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    struct alignas(2 * sizeof(Out)) Two { Out x[2]; };
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const int r = 16 * mt + g + 8 * (e >> 1), c = 8 * nt + 2 * t;
          const long long o = at(r, c);
          if (o < 0) continue;
          const float v0 = f[mt][nt][e], v1 = f[mt][nt][e + 1];
          if (pairs && isfinite(v0) && isfinite(v1) && at(r, c + 1) == o + 1) {
            *reinterpret_cast<Two*>(out + o) = Two{{i2t::narrow<Out>(v0), i2t::narrow<Out>(v1)}};
            continue;
          }
          out[o] = i2t::narrow<Out>(isfinite(v0) ? v0 : direct(r, c));
          const long long o1 = at(r, c + 1);
          if (o1 >= 0) out[o1] = i2t::narrow<Out>(isfinite(v1) ? v1 : direct(r, c + 1));
        }
  }
};

// Tap q of pair-table row w (the low half of word q + kQOff) as float, for the direct sums.
template <class T>
__device__ __forceinline__ float table_tap(const std::uint32_t* tab, int tabw, int w, int q) {
  using S = typename T::Stage;
  struct alignas(4) Pair { S lo, hi; };
  const std::uint32_t word = tab[static_cast<std::size_t>(w) * tabw + q + kQOff];
  return static_cast<float>(reinterpret_cast<const Pair*>(&word)->lo);
}

// Σ_u Σ_v F(i+u, j+v) k[u][v] by direct FMA in fp32, operands rounded as the tensor cores read
// them; F(y, x) and k[u][v] come from the caller's accessors (a transposed view, a table).
template <class T, class Img, class Tap>
__device__ float direct_sum(int i, int j, int kh, int kw, Img img, Tap tap) {
  float s = 0.f;
  for (int u = 0; u < kh; ++u)
    for (int v = 0; v < kw; ++v)
      s = fmaf(static_cast<float>(i2t::to_stage<T>(img(i + u, j + v))), tap(u, v), s);
  return s;
}

// Which of the N tiles along the band a 16-wide K step touches (hits(i)); false when none, so
// the block skips the step (the all-zero blocks of lcm / rcm are never multiplied).
template <int N, class Hits>
__device__ __forceinline__ bool band_mask(bool (&nz)[N], Hits hits) {
  bool any = false;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    nz[i] = hits(i);
    any |= nz[i];
  }
  return any;
}

// The memory-reference mechanism of eqs. 6-7 as a table: for each row w of the table (a kernel
// row, or a kernel column when by_column), word p packs the two Stage values of taps
// q = p - kQOff and q + 1 (zero outside the kernel). A Toeplitz fragment element D[m][n] =
// h[n - m] then is one aligned 32-bit read of word (n - m + kQOff) for any parity of n - m:
// the band of lcm/rcm is never formed, only these rows × width words (O(kernel)).
template <class T>
__global__ void pair_table_kernel(const double* k, int kh, int kw, bool by_column, int rows,
                                  int width, std::uint32_t* tab) {
  using S = typename T::Stage;
  const long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<long long>(rows) * width) return;
  const int w = static_cast<int>(idx / width), p = static_cast<int>(idx % width);
  auto tap = [&](int q) -> S {
    const int u = by_column ? q : w, v = by_column ? w : q;
    if (q < 0 || u >= kh || v >= kw) return i2t::zero_of<S>();
    return i2t::k_stage<T>(k[static_cast<std::size_t>(u) * kw + v], false);
  };
  struct alignas(4) Pair { S lo, hi; } pr{tap(p - kQOff), tap(p - kQOff + 1)};
  tab[idx] = *reinterpret_cast<const std::uint32_t*>(&pr);
}

// Builds the pair table of the (host, float64) kernel on the device: rows × width words.
template <class T>
void build_pair_table(const PlanRequest& r, bool by_column, int rows, int width,
                      DeviceBuffer& dst) {
  DeviceBuffer k64;
  k64.upload(r.kernel, sizeof(double) * r.kh * r.kw);
  const long long n = static_cast<long long>(rows) * width;
  dst.reset(sizeof(std::uint32_t) * n);
  pair_table_kernel<T><<<ceil_div(n, 256), 256>>>(k64.get<double>(), static_cast<int>(r.kh),
                                                  static_cast<int>(r.kw), by_column, rows, width,
                                                  dst.get<std::uint32_t>());
  TC_CUDA_LAUNCH_CHECK();
  TC_CUDA_CHECK(cudaDeviceSynchronize());
}

// Staging of a transposed tile: dst[a][b] (ld ldd, Stage) = img[r0 + b][c0 + a] for
// a < na, b < nb (nb even, ldd even), zero outside the ih × iw image. Threads run along the
// image row (coalesced reads); each loads the pair of image rows (b, b+1) at one column and
// stores them as one 32-bit word, which is how convmat_rows lays the strip out (the K index u
// contiguous) and how convmat reads the transposed image of its second factorisation.
template <class T>
__device__ __forceinline__ void stage_transposed(const typename T::In* img, long long ld, int ih,
                                                 int iw, int r0, int c0, int na, int nb,
                                                 typename T::Stage* dst, int ldd) {
  using In = typename T::In;
  using S = typename T::Stage;
  constexpr int UNR = 4;
  const int total = na * (nb / 2);
  for (int base = threadIdx.x; base < total; base += UNR * kThreads) {
    In v[UNR][2];
#pragma unroll
    for (int x = 0; x < UNR; ++x) {
      const int e = base + x * kThreads, a = e % na, b = 2 * (e / na);
      const int gr = r0 + b, gc = c0 + a;
      const bool ok = e < total && gc < iw;
      const In* p = img + static_cast<std::size_t>(gr) * ld + gc;
      v[x][0] = ok && gr < ih ? p[0] : In(0);
      v[x][1] = ok && gr + 1 < ih ? p[ld] : In(0);
    }
#pragma unroll
    for (int x = 0; x < UNR; ++x) {
      const int e = base + x * kThreads;
      if (e < total) {
        struct alignas(4) Pair { S lo, hi; } pr{i2t::to_stage<T>(v[x][0]),
                                                i2t::to_stage<T>(v[x][1])};
        *reinterpret_cast<std::uint32_t*>(dst + (e % na) * ldd + 2 * (e / na)) =
            *reinterpret_cast<const std::uint32_t*>(&pr);
      }
    }
  }
}

// The vectorised form of stage_transposed (same result): a thread loads V = 16 / sizeof(In)
// adjacent columns of image rows b and b + 1 as two 16-byte vectors and stores V pair words,
// UNR of them with all loads in flight first (stage_transposed's 2-byte loads took ~8 dependent
// round trips per 263 × 32 strip). Needs vec_ok (16-byte aligned rows) and c0 % V == 0; the lanes
// of a warp run along b (row pairs), so the stores of one warp meet at most 2-way bank conflicts.
template <class T, int UNR = 2>
__device__ __forceinline__ void stage_transposed_vec(const typename T::In* img, long long ld,
                                                     int ih, int iw, int r0, int c0, int na,
                                                     int nb, typename T::Stage* dst, int ldd) {
  using In = typename T::In;
  using S = typename T::Stage;
  constexpr int V = 16 / sizeof(In);
  struct alignas(16) Vec { In x[V]; };
  const int np = nb / 2, total = (na + V - 1) / V * np;
  for (int base = threadIdx.x; base < total; base += UNR * kThreads) {
    Vec v[UNR][2];
#pragma unroll
    for (int x = 0; x < UNR; ++x) {
      const int e = base + x * kThreads, b = 2 * (e % np), a = (e / np) * V;
      const int gr = r0 + b, gc = c0 + a;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const In* p = img + static_cast<std::size_t>(gr + h) * ld + gc;
        if (e < total && gr + h < ih && gc + V <= iw) {
          v[x][h] = *reinterpret_cast<const Vec*>(p);
        } else {
#pragma unroll
          for (int i = 0; i < V; ++i)
            v[x][h].x[i] = e < total && gr + h < ih && gc + i < iw ? p[i] : In(0);
        }
      }
    }
#pragma unroll
    for (int x = 0; x < UNR; ++x) {
      const int e = base + x * kThreads, b = 2 * (e % np), a = (e / np) * V;
      if (e >= total) continue;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (a + i >= na) break;
        struct alignas(4) Pair { S lo, hi; } pr{i2t::to_stage<T>(v[x][0].x[i]),
                                                i2t::to_stage<T>(v[x][1].x[i])};
        *reinterpret_cast<std::uint32_t*>(dst + (a + i) * ldd + b) =
            *reinterpret_cast<const std::uint32_t*>(&pr);
      }
    }
  }
}

// A strip of image rows r0 .. r0 + rows - 1, columns c0 .. c0 + W - 1 (W % 8 == 0) into dst
// (ld ldd): by cp.async when the image is already in the staged format (fp16: all 16-byte copies
// of the strip in flight at once, one wait, zero-filled past the image), else im2tensor's
// register path with 8 vectors in flight per thread (bf16 converts from fp32 as it stages).
// The caller waits (cp_async_wait_all) and synchronises.
template <class T>
__device__ __forceinline__ void stage_strip(const typename T::In* img, long long ld, int ih, int iw,
                                            int r0, int rows, int c0, int W,
                                            typename T::Stage* dst, int ldd, bool vec_ok) {
  using In = typename T::In;
  if constexpr (std::is_same_v<In, typename T::Stage>) {
    if (vec_ok) {
      constexpr int V = 16 / sizeof(In);
      const int vpr = W / V, total = rows * vpr;
      for (int e = threadIdx.x; e < total; e += kThreads) {
        const int row = e / vpr, col = (e % vpr) * V, gr = r0 + row, gc = c0 + col;
        const int n = gr < ih ? max(0, min(V, iw - gc)) : 0;
        cp_async_bytes(dst + row * ldd + col,
                       n > 0 ? img + static_cast<std::size_t>(gr) * ld + gc : img,
                       n * static_cast<int>(sizeof(In)));
      }
      return;
    }
  }
  i2t::stage_image<T, 8>(img, ld, ih, iw, r0, rows, c0, W, dst, ldd, vec_ok);
}

// rows × width words of a pair table (ld tabw, from word w0 of row r0) into dst, by 4-byte
// cp.async (issued beside the strip's copies: no extra round trip).
__device__ __forceinline__ void stage_table(const std::uint32_t* tab, int tabw, int r0, int w0,
                                            int rows, int width, std::uint32_t* dst) {
  for (int e = threadIdx.x; e < rows * width; e += kThreads)
    cp_async_4(dst + e, tab + static_cast<std::size_t>(r0 + e / width) * tabw + w0 + e % width);
}

// Runtime precision -> traits; the tensor-core formats both methods offer.
template <template <class> class PlanT>
std::unique_ptr<tc::Plan> make_for(const PlanRequest& r, const char* method) {
  check_int_extent(r);
  switch (r.precision) {
    case Precision::fp16: return std::make_unique<PlanT<TrFp16>>(r);
    case Precision::fp16fp32: return std::make_unique<PlanT<TrFp16Fp32>>(r);
    case Precision::bf16: return std::make_unique<PlanT<TrBf16>>(r);
    default: break;
  }
  throw ValueError(std::string(method) + ": precision '" + precision_name(r.precision) +
                   "' is not implemented (fp16, fp16fp32, bf16)");
}

}  // namespace cm
}  // namespace cuda
}  // namespace tc
