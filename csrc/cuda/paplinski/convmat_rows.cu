// convmat_rows: Papliński's row-by-row algorithm (section 2), g(y,:) = h · gg_y, where h is the
// vertically scanned kernel (k = (v, u): column v, row u; the paper's flip cancels against the
// correlation's, convmat.cuh) and gg_y the r·c × (C - c + 1) strip re-arranged through the
// pointer matrix p: gg_y[(v, u)][j] = F[y + u][p[v][j]], p[v][j] = j + v.
//
// One output row is a GEMV (M = 1), which the tensor cores cannot use. MR = 32 rows per CTA
// share one gg, built from the taller strip F[y0 .. y0 + MR + r - 2] (K = (v, u') with
// u' = y - y0 + u): the row vectors h of the MR rows, each shifted down by its row, stack into an
// MR × c·(MR + r - 1) band whose element A[m][(v, u')] = k[u' - m][v] is read from the pair table
// of the kernel's columns (convmat.cuh: one 32-bit word per fragment register). The strip is
// staged transposed (image columns as shared-memory rows, u' contiguous), so the pointer matrix
// is the row address of ldmatrix: the B fragment of tap column v and output columns j is rows
// j + v of the staged strip, never gg itself. Per CTA: MR rows × 256 columns, 4 warps of 64
// columns; each stage is 8 kernel columns × 32 strip rows; the 16-row K steps that miss the band
// of an m-tile (u' - m outside [0, r)) are skipped.
#include "convmat.cuh"

namespace tc {
namespace cuda {
namespace cm {
namespace {

constexpr int kMR = 32;  // output rows per CTA (one gg): 2 m-tiles
constexpr int kMT = kMR / 16;
constexpr int kWN = 64;  // output columns per warp: 8 n-tiles
constexpr int kNT = kWN / 8;
constexpr int kBN = 4 * kWN;  // output columns per CTA
constexpr int kVC = 8;   // kernel columns v per stage
constexpr int kUC = 32;  // strip rows u' per stage: 2 K steps of 16
constexpr int kStripCols = kBN + kVC - 1;
constexpr int kTabW = 64;  // pair-table words per kernel column a stage reads (taps u0-31..u0+32)

struct Args {
  const void* in;
  long long in_ld;
  void* out;
  long long out_ld;
  const std::uint32_t* tab;  // kw rows (kernel columns) × tabw words
  int tabw;
  int ih, iw, kh, kw, oh, ow;
};

// Does the 16-wide K step at strip row u'0 = ub meet the band of m-tile mt (u' - m in [0, kh))?
__device__ __forceinline__ bool band_hits(int ub, int mt, int kh) {
  return ub + 15 - 16 * mt >= 0 && ub - 16 * mt - 15 < kh;
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2) convmat_rows_kernel(Args a) {
  using S = typename T::Stage;
  using In = typename T::In;
  using Out = typename T::Out;
  __shared__ __align__(16) S sT[kStripCols * kStageLd];  // sT[col][u'] = F[y0+u0+u'][j0+v0+col]
  __shared__ std::uint32_t sK[kVC * kTabW];
  const int j0 = blockIdx.x * kBN, y0 = blockIdx.y * kMR;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const bool active = j0 + warp * kWN < a.ow;  // warp-uniform: columns past the output idle

  Tiles<T, kMT, kNT> acc;

  // ldmatrix x4 of two n-tiles' B fragments (the pointer matrix p): lane l addresses strip
  // column 64w + (l & 7) + 8·(l >> 4) (+ 16 per pair of n-tiles, + v), strip row 8·((l >> 3) & 1).
  const S* b_lane = sT + (warp * kWN + (lane & 7) + 8 * (lane >> 4)) * kStageLd +
                    8 * ((lane >> 3) & 1);
  const int U = min(kMR + a.kh - 1, a.ih - y0);  // strip rows this CTA's gg needs
  for (int u0 = 0; u0 < U; u0 += kUC) {
    for (int v0 = 0; v0 < a.kw; v0 += kVC) {
      const int vc = min(kVC, a.kw - v0);
      __syncthreads();  // the previous stage's reads are done
      stage_transposed<T>(static_cast<const In*>(a.in), a.in_ld, a.ih, a.iw, y0 + u0, j0 + v0,
                          kBN + vc - 1, kUC, sT, kStageLd);
      for (int e = threadIdx.x; e < vc * kTabW; e += kThreads) {
        const int vv = e / kTabW, w = e % kTabW;
        sK[e] = a.tab[static_cast<std::size_t>(v0 + vv) * a.tabw + u0 + w];
      }
      __syncthreads();
      if (!active) continue;

      for (int vv = 0; vv < vc; ++vv) {
#pragma unroll
        for (int s = 0; s < kUC / 16; ++s) {
          const int ub = u0 + 16 * s;
          bool nz[kMT];
          if (!band_mask(nz, [&](int mt) { return band_hits(ub, mt, a.kh); })) continue;
          std::uint32_t bf[kNT][2];
#pragma unroll
          for (int p = 0; p < kNT / 2; ++p) {
            std::uint32_t r[4];
            ldmatrix_x4(r, b_lane + (16 * p + vv) * kStageLd + 16 * s);
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
            const std::uint32_t* krow = sK + vv * kTabW + kQOff + 16 * s + 2 * t - 16 * mt - g;
            const std::uint32_t af[4] = {krow[0], krow[-8], krow[8], krow[0]};
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt) acc.mma(mt, nt, af, bf[nt]);
          }
        }
      }
      acc.flush();
    }
  }
  if (!active) return;

  const In* img = static_cast<const In*>(a.in);
  acc.store(
      static_cast<Out*>(a.out),
      [&](int r, int c) -> long long {
        const int i = y0 + r, j = j0 + warp * kWN + c;
        return i < a.oh && j < a.ow ? static_cast<long long>(i) * a.out_ld + j : -1;
      },
      [&](int r, int c) {
        return direct_sum<T>(
            y0 + r, j0 + warp * kWN + c, a.kh, a.kw,
            [&](int y, int x) { return img[static_cast<std::size_t>(y) * a.in_ld + x]; },
            [&](int u, int v) { return table_tap<T>(a.tab, a.tabw, v, u); });
      });
}

template <class T>
class ConvmatRowsPlan final : public CudaPlan {
 public:
  explicit ConvmatRowsPlan(const PlanRequest& r) : CudaPlan(r) {
    if (ceil_div(out_rows(), kMR) > 65535)
      throw ValueError("convmat_rows: output too tall for the grid (" +
                       std::to_string(out_rows()) + " rows)");
    // strip rows of one gg, rounded to the stage, + the words a stage reads past its start
    tabw_ = ceil_div(kMR + r.kh - 1, kUC) * kUC + kTabW;
    build_pair_table<T>(r, true, static_cast<int>(r.kw), tabw_, tab_);
    grid_ = dim3(ceil_div(out_cols(), kBN), ceil_div(out_rows(), kMR));
  }
  std::size_t workspace_bytes() const override { return tab_.bytes(); }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t st) override {
    Args a{in.data,
           in.row_stride,
           out.data,
           out.row_stride,
           tab_.get<std::uint32_t>(),
           tabw_,
           static_cast<int>(ih_),
           static_cast<int>(iw_),
           static_cast<int>(kh_),
           static_cast<int>(kw_),
           static_cast<int>(out_rows()),
           static_cast<int>(out_cols())};
    convmat_rows_kernel<T><<<grid_, kThreads, 0, st>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  int tabw_ = 0;
  DeviceBuffer tab_;
  dim3 grid_;
};

}  // namespace
}  // namespace cm
}  // namespace cuda

std::unique_ptr<Plan> make_convmat_rows_plan(const PlanRequest& r) {
  return cuda::cm::make_for<cuda::cm::ConvmatRowsPlan>(r, "convmat_rows");
}

}  // namespace tc
