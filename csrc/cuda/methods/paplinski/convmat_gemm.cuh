// convmat's kernel (the GEMM of eq. 2; the plan is convmat.cu), in a header so that the
// standalone harness benchmarks/harness/convmat_tune.cu times the same code without the package.
//
// Template choices the plan makes (measured: docs/design/paplinski.md):
//   BK   — image columns β staged per K stage (32, 48 or 64). The band of a 32-column CTA is
//          31 + kw columns; at small kw one 48-column stage holds it all (k = 3: 34 columns, one
//          stage and no second 32-column stage of 2 useful columns).
//   FAST — the strip, the pair-table words and (second form) the transposed tile are staged
//          with every copy in flight at once (cp.async, or 16-byte loads batched before their
//          stores), and pairs of outputs are stored as one vector; false is the first version
//          (kept for the harness's baseline).
#pragma once
#include <initializer_list>

#include "cuda/methods/paplinski/convmat.cuh"

namespace tc {
namespace cuda {
namespace cm {
namespace gemm {

constexpr int kBM = 256;  // output rows per CTA (4 warps × 64)
constexpr int kWM = 64;   // output rows per warp: 4 m-tiles
constexpr int kMT = kWM / 16;
constexpr int kBN = 32;   // output columns per CTA: 4 n-tiles of 8
constexpr int kNT = kBN / 8;
constexpr int kRU = 16;   // kernel rows u per stage
constexpr int kStripRows = kBM + kRU - 1;
static_assert(kBN - 1 == kQOff, "the pair table's offset covers n - 8nt down to -(kBN - 1)");

template <int BK>
struct Shape {
  static constexpr int kLd = BK + 8;        // staged row: the 8 rows of an ldmatrix on distinct banks
  static constexpr int kTabW = kBN + BK;    // pair-table words per kernel row a stage reads
};

// The staging rule (measured on the H100, 4096², docs/design/paplinski.md): the BK of
// `allowed` that stages the fewest columns ⌈(kBN + kw - 1) / BK⌉·BK for the band, ties to the
// larger BK (fewer stages, barriers and table copies). It picked the fastest of 32 / 48 / 64 at
// k = 15, 25, 35, 55 and one within 5 % at k = 3.
inline int pick_bk(long long kw, std::initializer_list<int> allowed) {
  const long long n = kBN + kw - 1;
  int best = 0;
  long long staged = 0;
  for (int bk : allowed) {
    const long long st = (n + bk - 1) / bk * bk;
    if (best == 0 || st < staged || (st == staged && bk > best)) best = bk, staged = st;
  }
  return best;
}

// Pair-table words per kernel row the plan builds: up to the last stage's b0 + kTabW.
inline int table_width(int BK, long long kw) {
  return static_cast<int>((kBN + kw - 1 + BK - 1) / BK * BK + kBN);
}

struct Args {
  const void* in;
  long long in_ld;
  void* out;
  long long out_ld;
  const std::uint32_t* tab;  // kh rows × tabw words (kernel rows of the problem solved)
  int tabw;
  int ih, iw;          // the image as stored
  int kh, kw, oh, ow;  // the problem solved (transposed when TRANS)
  bool vec_ok;         // image rows 16-byte aligned
  bool out_pairs;      // out's base and stride allow paired stores (first form only)
};

// Does the 16-wide K step starting at β - j0 = qb touch the band of n-tile nt (q = β - j in
// [0, kw) for some of its columns j0 + 8nt .. + 7)?
__host__ __device__ inline bool band_hits(int qb, int nt, int kw) {
  return qb + 15 - 8 * nt >= 0 && qb - 8 * nt - 7 < kw;
}

template <class T, bool TRANS, int BK, bool FAST>
__global__ void __launch_bounds__(kThreads, 2) convmat_kernel(Args a) {
  using S = typename T::Stage;
  using In = typename T::In;
  using Out = typename T::Out;
  using Sh = Shape<BK>;
  __shared__ __align__(16) S sA[kStripRows * Sh::kLd];
  __shared__ std::uint32_t sB[kRU * Sh::kTabW];
  const int j0 = blockIdx.x * kBN, i0 = blockIdx.y * kBM;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const In* img = static_cast<const In*>(a.in);
  // the problem's image width (iw of F, or ih when transposed)
  const int pw = TRANS ? a.ih : a.iw;

  Tiles<T, kMT, kNT> acc;

  // ldmatrix x4 of an m16 × k16 A tile: lane l gives row (l & 7) + 8·((l >> 3) & 1), column
  // 8·(l >> 4) (matrices a0..a3 of the mma's A fragment).
  const S* a_lane = sA + (warp * kWM + (lane & 7) + 8 * ((lane >> 3) & 1)) * Sh::kLd +
                    8 * (lane >> 4);
  const int ncols = min(kBN + a.kw - 1, pw - j0);  // β this CTA needs (the band, clipped)
  for (int b0 = 0; b0 < ncols; b0 += BK) {
    for (int u0 = 0; u0 < a.kh; u0 += kRU) {
      const int ur = min(kRU, a.kh - u0), rows = kBM + ur - 1;
      __syncthreads();  // the previous stage's reads are done
      // lcm tile (eq. 8): image rows i0+u0 .. i0+u0+rows-1, columns j0+b0 .. +BK-1;
      // rcm (eq. 7): pair-table words of kernel rows u0.., taps q = b0 - 31 .. b0 + BK
      if constexpr (FAST) {
        if constexpr (TRANS) {
          if (a.vec_ok)
            stage_transposed_vec<T>(img, a.in_ld, a.ih, a.iw, j0 + b0, i0 + u0, rows, BK, sA,
                                    Sh::kLd);
          else
            stage_transposed<T>(img, a.in_ld, a.ih, a.iw, j0 + b0, i0 + u0, rows, BK, sA,
                                Sh::kLd);
        } else {
          stage_strip<T>(img, a.in_ld, a.ih, a.iw, i0 + u0, rows, j0 + b0, BK, sA, Sh::kLd,
                         a.vec_ok);
        }
        stage_table(a.tab, a.tabw, u0, b0, ur, Sh::kTabW, sB);
        cp_async_wait_all();
      } else {
        if constexpr (TRANS)
          stage_transposed<T>(img, a.in_ld, a.ih, a.iw, j0 + b0, i0 + u0, rows, BK, sA, Sh::kLd);
        else
          i2t::stage_image<T>(img, a.in_ld, a.ih, a.iw, i0 + u0, rows, j0 + b0, BK, sA, Sh::kLd,
                              a.vec_ok);
        for (int e = threadIdx.x; e < ur * Sh::kTabW; e += kThreads) {
          const int uu = e / Sh::kTabW, w = e % Sh::kTabW;
          sB[e] = a.tab[static_cast<std::size_t>(u0 + uu) * a.tabw + b0 + w];
        }
      }
      __syncthreads();

      for (int uu = 0; uu < ur; ++uu) {
#pragma unroll
        for (int s = 0; s < BK / 16; ++s) {
          const int qb = b0 + 16 * s;
          bool nz[kNT];
          if (!band_mask(nz, [&](int nt) { return band_hits(qb, nt, a.kw); })) continue;
          // B fragment of n-tile nt: k = 2t, 2t+1 (b[0]) and +8 (b[1]) at column n = g, i.e.
          // taps q = qb + 2t - 8nt - g: word 31 + 16s + 2t - 8nt - g of this stage's row.
          std::uint32_t bf[kNT][2];
          const std::uint32_t* brow = sB + uu * Sh::kTabW + kQOff + 16 * s + 2 * t - g;
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            bf[nt][0] = brow[-8 * nt];
            bf[nt][1] = brow[-8 * nt + 8];
          }
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            std::uint32_t af[4];
            ldmatrix_x4(af, a_lane + (16 * mt + uu) * Sh::kLd + 16 * s);
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
              if (nz[nt]) acc.mma(mt, nt, af, bf[nt]);
          }
        }
      }
      acc.flush();
    }
  }

  auto direct = [&](int r, int c) {
    return direct_sum<T>(
        i0 + warp * kWM + r, j0 + c, a.kh, a.kw,
        [&](int y, int x) {
          return TRANS ? img[static_cast<std::size_t>(x) * a.in_ld + y]
                       : img[static_cast<std::size_t>(y) * a.in_ld + x];
        },
        [&](int u, int v) { return table_tap<T>(a.tab, a.tabw, u, v); });
  };
  acc.store(
      static_cast<Out*>(a.out),
      [&](int r, int c) -> long long {
        const int i = i0 + warp * kWM + r, j = j0 + c;
        if (i >= a.oh || j >= a.ow) return -1;
        return TRANS ? static_cast<long long>(j) * a.out_ld + i
                     : static_cast<long long>(i) * a.out_ld + j;
      },
      direct, FAST && !TRANS && a.out_pairs);
}

// MMAs (m16n8k16) the kernel issues for the problem oh × ow, kernel kh × kw (a CTA clipped at
// the right edge counted as a full one): the plan's rule for the factorisation.
inline double mma_count(long long oh, long long ow, long long kh, long long kw) {
  long long steps = 0;  // per kernel row and m-tile, in one CTA
  for (long long qb = 0; qb < kBN + kw - 1; qb += 16)
    for (int nt = 0; nt < kNT; ++nt)
      steps += band_hits(static_cast<int>(qb), nt, static_cast<int>(kw));
  return static_cast<double>(steps) * ((ow + kBN - 1) / kBN) * ((oh + kBM - 1) / kBM) *
         (kBM / 16) * kh;
}

}  // namespace gemm
}  // namespace cm
}  // namespace cuda
}  // namespace tc
