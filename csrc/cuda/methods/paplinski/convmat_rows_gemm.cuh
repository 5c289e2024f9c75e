// convmat_rows' kernel (section 2's row-by-row products, 32 rows per GEMM; the plan is
// convmat_rows.cu), in a header so that benchmarks/harness/convmat_tune.cu times the same code.
//
// Template choices the plan makes (measured: docs/design/paplinski.md):
//   UC   — strip rows u' staged per K stage (32 or 48). One gg needs 31 + kh strip rows; at
//          small kh one 48-row stage holds them (k = 3: 34 rows, no second stage of 2 rows).
//   FAST — the transposed strip is staged by 16-byte loads batched before their stores
//          (stage_transposed_vec), the kernel columns' table words by cp.async, and pairs of
//          outputs stored as one vector; false is the first version (the harness's baseline).
#pragma once
#include "cuda/methods/paplinski/convmat.cuh"

namespace tc {
namespace cuda {
namespace cm {
namespace rows {

constexpr int kMR = 32;  // output rows per CTA (one gg): 2 m-tiles
constexpr int kMT = kMR / 16;
constexpr int kWN = 64;  // output columns per warp: 8 n-tiles
constexpr int kNT = kWN / 8;
constexpr int kBN = 4 * kWN;  // output columns per CTA
constexpr int kVC = 8;        // kernel columns v per stage
constexpr int kStripCols = kBN + kVC;  // staged image columns (kBN + vc - 1, rounded to 8)

template <int UC>
struct Shape {
  static constexpr int kLd = UC + 8;        // staged column of UC strip rows, + 8: ldmatrix rows
                                            // on distinct banks
  static constexpr int kTabW = kMR + UC;    // table words per kernel column a stage reads
                                            // (taps u0 - 31 .. u0 + UC)
};

// The staging rule (measured on the H100, 4096²): the UC of 32 / 48 that stages the fewest strip
// rows ⌈(kMR + kh - 1) / UC⌉·UC, ties to 48 (fewer stages). It picked the fastest at every k of
// 3, 15, 25, 35, 55 in fp16fp32 and fp16.
inline int pick_uc(long long kh) {
  const long long n = kMR + kh - 1;
  return (n + 47) / 48 * 48 <= (n + 31) / 32 * 32 ? 48 : 32;
}

// Table words per kernel column the plan builds: the strip rows of one gg rounded to the
// stage, + the words a stage reads past its start.
inline int table_width(int UC, long long kh) {
  return static_cast<int>((kMR + kh - 1 + UC - 1) / UC * UC + kMR + UC);
}

struct Args {
  const void* in;
  long long in_ld;
  void* out;
  long long out_ld;
  const std::uint32_t* tab;  // kw rows (kernel columns) × tabw words
  int tabw;
  int ih, iw, kh, kw, oh, ow;
  bool vec_ok;     // image rows 16-byte aligned
  bool out_pairs;  // out's base and stride allow paired stores
};

// Does the 16-wide K step at strip row u'0 = ub meet the band of m-tile mt (u' - m in [0, kh))?
__device__ __forceinline__ bool band_hits(int ub, int mt, int kh) {
  return ub + 15 - 16 * mt >= 0 && ub - 16 * mt - 15 < kh;
}

// TUNR: vectors in flight per thread in the transposed staging.
template <class T, int UC, bool FAST, int TUNR = 2>
__global__ void __launch_bounds__(kThreads, 2) convmat_rows_kernel(Args a) {
  using S = typename T::Stage;
  using In = typename T::In;
  using Out = typename T::Out;
  using Sh = Shape<UC>;
  __shared__ __align__(16) S sT[kStripCols * Sh::kLd];  // sT[col][u'] = F[y0+u0+u'][j0+v0+col]
  __shared__ std::uint32_t sK[kVC * Sh::kTabW];
  const int j0 = blockIdx.x * kBN, y0 = blockIdx.y * kMR;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const bool active = j0 + warp * kWN < a.ow;  // warp-uniform: columns past the output idle
  const In* img = static_cast<const In*>(a.in);

  Tiles<T, kMT, kNT> acc;

  // ldmatrix x4 of two n-tiles' B fragments (the pointer matrix p): lane l addresses strip
  // column 64w + (l & 7) + 8·(l >> 4) (+ 16 per pair of n-tiles, + v), strip row 8·((l >> 3) & 1).
  const S* b_lane = sT + (warp * kWN + (lane & 7) + 8 * (lane >> 4)) * Sh::kLd +
                    8 * ((lane >> 3) & 1);
  const int U = min(kMR + a.kh - 1, a.ih - y0);  // strip rows this CTA's gg needs
  for (int u0 = 0; u0 < U; u0 += UC) {
    for (int v0 = 0; v0 < a.kw; v0 += kVC) {
      const int vc = min(kVC, a.kw - v0);
      __syncthreads();  // the previous stage's reads are done
      if constexpr (FAST) {
        if (a.vec_ok)
          stage_transposed_vec<T, TUNR>(img, a.in_ld, a.ih, a.iw, y0 + u0, j0 + v0,
                                        kBN + vc - 1, UC, sT, Sh::kLd);
        else
          stage_transposed<T>(img, a.in_ld, a.ih, a.iw, y0 + u0, j0 + v0, kBN + vc - 1, UC, sT,
                              Sh::kLd);
        stage_table(a.tab, a.tabw, v0, u0, vc, Sh::kTabW, sK);
        cp_async_wait_all();
      } else {
        stage_transposed<T>(img, a.in_ld, a.ih, a.iw, y0 + u0, j0 + v0, kBN + vc - 1, UC, sT,
                            Sh::kLd);
        for (int e = threadIdx.x; e < vc * Sh::kTabW; e += kThreads) {
          const int vv = e / Sh::kTabW, w = e % Sh::kTabW;
          sK[e] = a.tab[static_cast<std::size_t>(v0 + vv) * a.tabw + u0 + w];
        }
      }
      __syncthreads();
      if (!active) continue;

      for (int vv = 0; vv < vc; ++vv) {
#pragma unroll
        for (int s = 0; s < UC / 16; ++s) {
          const int ub = u0 + 16 * s;
          bool nz[kMT];
          if (!band_mask(nz, [&](int mt) { return band_hits(ub, mt, a.kh); })) continue;
          std::uint32_t bf[kNT][2];
#pragma unroll
          for (int p = 0; p < kNT / 2; ++p) {
            std::uint32_t r[4];
            ldmatrix_x4(r, b_lane + (16 * p + vv) * Sh::kLd + 16 * s);
            bf[2 * p][0] = r[0];
            bf[2 * p][1] = r[1];
            bf[2 * p + 1][0] = r[2];
            bf[2 * p + 1][1] = r[3];
          }
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            if (!nz[mt]) continue;
            // A fragment (h shifted by row m): a0 = (m = g, k = 2t), a1 = (g + 8, 2t),
            // a2 = (g, 2t + 8), a3 = (g + 8, 2t + 8) = a0 (Toeplitz); tap u = u' - m at word
            // 31 + 16s + 2t - 16mt - g of this stage's row of column v.
            const std::uint32_t* krow =
                sK + vv * Sh::kTabW + kQOff + 16 * s + 2 * t - 16 * mt - g;
            const std::uint32_t af[4] = {krow[0], krow[-8], krow[8], krow[0]};
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt) acc.mma(mt, nt, af, bf[nt]);
          }
        }
      }
      acc.flush();
    }
  }
  auto direct = [&](int r, int c) {
    return direct_sum<T>(
        y0 + r, j0 + warp * kWN + c, a.kh, a.kw,
        [&](int y, int x) { return img[static_cast<std::size_t>(y) * a.in_ld + x]; },
        [&](int u, int v) { return table_tap<T>(a.tab, a.tabw, v, u); });
  };
  if (!active) return;
  acc.store(
      static_cast<Out*>(a.out),
      [&](int r, int c) -> long long {
        const int i = y0 + r, j = j0 + warp * kWN + c;
        return i < a.oh && j < a.ow ? static_cast<long long>(i) * a.out_ld + j : -1;
      },
      direct, FAST && a.out_pairs);
}

}  // namespace rows
}  // namespace cm
}  // namespace cuda
}  // namespace tc
