// convmat: Papliński's G = lcm(F, r) · rcm(H, C) (eq. 2) as one GEMM on the tensor cores
// (mma.sync m16n8k16), neither matrix formed. For the valid correlation
//   out[i][j] = Σ_(u,β) A[i][(u,β)] · B[(u,β)][j],  A = lcm: F[i+u][β],  B = rcm: k[u][β-j],
// with K = (kernel row u, image column β). The operands' tiles come from the reference
// mechanisms of eqs. 7-8: an A tile of block u is image rows i0+u.. (a row shift of one staged
// strip, read by ldmatrix at row offset u), a B fragment is read from the kernel row's pair table
// at word β - j + 31 (convmat.cuh). rcm is banded: a CTA of output columns j0..j0+31 visits only
// β in [j0, j0+31+c-1) (the K blocks outside the band are all zero and are never visited), and
// inside it every 16-wide K step of every 8-column n-tile whose band misses the step is skipped.
//
// The second factorisation lcm(H, R) · rcm(F, c) puts the band along the rows instead (K =
// (image row, kernel column), the kernel block-shifted, the image Toeplitz). Its image operand
// would need element-shifted reads; the same K set is reached by running the first form on the
// transposed problem (Fᵀ ⊙ Hᵀ = Gᵀ): tiles are staged transposed and the output written
// transposed, no copy. The plan picks the form with fewer MMAs (counted, below): the one
// whose band runs along the kernel's longer side, and the one whose output tile fits narrow
// images (a 1-column output wastes 31 of 32 columns in the first form).
#include "convmat.cuh"

namespace tc {
namespace cuda {
namespace cm {
namespace {

constexpr int kBM = 256;  // output rows per CTA (4 warps × 64)
constexpr int kWM = 64;   // output rows per warp: 4 m-tiles
constexpr int kMT = kWM / 16;
constexpr int kBN = 32;   // output columns per CTA: 4 n-tiles of 8
constexpr int kNT = kBN / 8;
constexpr int kBK = 32;   // image columns β per stage: 2 K steps of 16
constexpr int kRU = 16;   // kernel rows u per stage
constexpr int kStripRows = kBM + kRU - 1;
constexpr int kTabW = kBN + kBK;  // pair-table words per kernel row a stage reads
static_assert(kBN - 1 == kQOff, "the pair table's offset covers n - 8nt down to -(kBN - 1)");

struct Args {
  const void* in;
  long long in_ld;
  void* out;
  long long out_ld;
  const std::uint32_t* tab;  // kh rows × tabw words (kernel rows of the problem solved)
  int tabw;
  int ih, iw;  // the image as stored
  int kh, kw, oh, ow;  // the problem solved (transposed when TRANS)
  bool vec_ok;
};

// Does the 16-wide K step starting at β - j0 = qb touch the band of n-tile nt (q = β - j in
// [0, kw) for some of its columns j0 + 8nt .. + 7)?
__host__ __device__ inline bool band_hits(int qb, int nt, int kw) {
  return qb + 15 - 8 * nt >= 0 && qb - 8 * nt - 7 < kw;
}

template <class T, bool TRANS>
__global__ void __launch_bounds__(kThreads, 2) convmat_kernel(Args a) {
  using S = typename T::Stage;
  using In = typename T::In;
  using Out = typename T::Out;
  __shared__ __align__(16) S sA[kStripRows * kStageLd];
  __shared__ std::uint32_t sB[kRU * kTabW];
  const int j0 = blockIdx.x * kBN, i0 = blockIdx.y * kBM;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const In* img = static_cast<const In*>(a.in);
  // the problem's image width (iw of F, or ih when transposed)
  const int pw = TRANS ? a.ih : a.iw;

  Tiles<T, kMT, kNT> acc;

  // ldmatrix x4 of an m16 × k16 A tile: lane l gives row (l & 7) + 8·((l >> 3) & 1), column
  // 8·(l >> 4) (matrices a0..a3 of the mma's A fragment).
  const S* a_lane = sA + (warp * kWM + (lane & 7) + 8 * ((lane >> 3) & 1)) * kStageLd +
                    8 * (lane >> 4);
  const int ncols = min(kBN + a.kw - 1, pw - j0);  // β this CTA needs (the band, clipped)
  for (int b0 = 0; b0 < ncols; b0 += kBK) {
    for (int u0 = 0; u0 < a.kh; u0 += kRU) {
      const int ur = min(kRU, a.kh - u0), rows = kBM + ur - 1;
      __syncthreads();  // the previous stage's reads are done
      // lcm tile (eq. 8): image rows i0+u0 .. i0+u0+rows-1, columns j0+b0 .. +31
      if constexpr (TRANS)
        stage_transposed<T>(img, a.in_ld, a.ih, a.iw, j0 + b0, i0 + u0, rows, kBK, sA, kStageLd);
      else
        i2t::stage_image<T>(img, a.in_ld, a.ih, a.iw, i0 + u0, rows, j0 + b0, kBK, sA, kStageLd,
                            a.vec_ok);
      // rcm (eq. 7): pair-table words of kernel rows u0.., taps q = b0 - 31 .. b0 + 32
      for (int e = threadIdx.x; e < ur * kTabW; e += kThreads) {
        const int uu = e / kTabW, w = e % kTabW;
        sB[e] = a.tab[static_cast<std::size_t>(u0 + uu) * a.tabw + b0 + w];
      }
      __syncthreads();

      for (int uu = 0; uu < ur; ++uu) {
#pragma unroll
        for (int s = 0; s < kBK / 16; ++s) {
          const int qb = b0 + 16 * s;
          bool nz[kNT];
          if (!band_mask(nz, [&](int nt) { return band_hits(qb, nt, a.kw); })) continue;
          // B fragment of n-tile nt: k = 2t, 2t+1 (b[0]) and +8 (b[1]) at column n = g, i.e.
          // taps q = qb + 2t - 8nt - g: word 31 + 16s + 2t - 8nt - g of this stage's row.
          std::uint32_t bf[kNT][2];
          const std::uint32_t* brow = sB + uu * kTabW + kQOff + 16 * s + 2 * t - g;
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            bf[nt][0] = brow[-8 * nt];
            bf[nt][1] = brow[-8 * nt + 8];
          }
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            std::uint32_t af[4];
            ldmatrix_x4(af, a_lane + (16 * mt + uu) * kStageLd + 16 * s);
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
              if (nz[nt]) acc.mma(mt, nt, af, bf[nt]);
          }
        }
      }
      acc.flush();
    }
  }

  acc.store(
      static_cast<Out*>(a.out),
      [&](int r, int c) -> long long {
        const int i = i0 + warp * kWM + r, j = j0 + c;
        if (i >= a.oh || j >= a.ow) return -1;
        return TRANS ? static_cast<long long>(j) * a.out_ld + i
                     : static_cast<long long>(i) * a.out_ld + j;
      },
      [&](int r, int c) {
        return direct_sum<T>(
            i0 + warp * kWM + r, j0 + c, a.kh, a.kw,
            [&](int y, int x) {
              return TRANS ? img[static_cast<std::size_t>(x) * a.in_ld + y]
                           : img[static_cast<std::size_t>(y) * a.in_ld + x];
            },
            [&](int u, int v) { return table_tap<T>(a.tab, a.tabw, u, v); });
      });
}

// MMAs (m16n8k16) the kernel issues for the problem oh × ow, kernel kh × kw (a CTA clipped at
// the right edge counted as a full one): the plan's rule.
double mma_count(long long oh, long long ow, long long kh, long long kw) {
  long long steps = 0;  // per kernel row and m-tile, in one CTA
  for (long long qb = 0; qb < kBN + kw - 1; qb += 16)
    for (int nt = 0; nt < kNT; ++nt) steps += band_hits(static_cast<int>(qb), nt, static_cast<int>(kw));
  return static_cast<double>(steps) * ((ow + kBN - 1) / kBN) * ((oh + kBM - 1) / kBM) *
         (kBM / 16) * kh;
}

template <class T>
class ConvmatPlan final : public CudaPlan {
 public:
  explicit ConvmatPlan(const PlanRequest& r) : CudaPlan(r) {
    const double first = mma_count(r.ih - r.kh + 1, r.iw - r.kw + 1, r.kh, r.kw);
    const double second = mma_count(r.iw - r.kw + 1, r.ih - r.kh + 1, r.kw, r.kh);
    // The transposed staging costs more per element (2-byte reads across rows): take the
    // second form only when it saves at least a tenth of the MMAs.
    trans_ = second < 0.9 * first;
    const long long kh = trans_ ? r.kw : r.kh, kw = trans_ ? r.kh : r.kw;
    const long long ow = trans_ ? r.ih - r.kh + 1 : r.iw - r.kw + 1;
    const long long oh = trans_ ? r.iw - r.kw + 1 : r.ih - r.kh + 1;
    if ((oh + kBM - 1) / kBM > 65535)
      throw ValueError("convmat: output too tall for the grid (" + std::to_string(oh) + " rows)");
    // words up to the last stage's b0 + 63
    tabw_ = static_cast<int>((kBN + kw - 1 + kBK - 1) / kBK * kBK + kBN);
    build_pair_table<T>(r, trans_, static_cast<int>(kh), tabw_, tab_);
    if (trans_) kern_ = convmat_kernel<T, true>;
    else kern_ = convmat_kernel<T, false>;
    grid_ = dim3(ceil_div(ow, kBN), ceil_div(oh, kBM));
  }
  std::size_t workspace_bytes() const override { return tab_.bytes(); }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t st) override {
    using In = typename T::In;
    Args a{};
    a.in = in.data;
    a.in_ld = in.row_stride;
    a.out = out.data;
    a.out_ld = out.row_stride;
    a.tab = tab_.get<std::uint32_t>();
    a.tabw = tabw_;
    a.ih = static_cast<int>(ih_);
    a.iw = static_cast<int>(iw_);
    a.kh = static_cast<int>(trans_ ? kw_ : kh_);
    a.kw = static_cast<int>(trans_ ? kh_ : kw_);
    a.oh = static_cast<int>(trans_ ? out_cols() : out_rows());
    a.ow = static_cast<int>(trans_ ? out_rows() : out_cols());
    a.vec_ok = reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 &&
               (in.row_stride * sizeof(In)) % 16 == 0;
    kern_<<<grid_, kThreads, 0, st>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  bool trans_ = false;
  int tabw_ = 0;
  DeviceBuffer tab_;
  void (*kern_)(Args) = nullptr;
  dim3 grid_;
};

}  // namespace
}  // namespace cm
}  // namespace cuda

std::unique_ptr<Plan> make_convmat_plan(const PlanRequest& r) {
  return cuda::cm::make_for<cuda::cm::ConvmatPlan>(r, "convmat");
}

}  // namespace tc
