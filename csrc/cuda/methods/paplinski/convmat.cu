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
#include "cuda/methods/paplinski/convmat_gemm.cuh"

namespace tc {
namespace cuda {
namespace cm {
namespace {

using namespace gemm;

using Kern = void (*)(Args);

// The kernel for the staging rule (pick_bk; the second form was measured with BK 32 / 48 only).
// bf16 stages fp32 images through registers: its batched staging (FAST) holds more registers,
// 3 CTAs per SM instead of 4, which was faster only where one 48-column stage holds the band
// (k = 3: 0.142 vs 0.177 ms, k = 15: 0.161 vs 0.185; k = 25: 0.231 vs 0.220, k = 55: 0.62 vs
// 0.57, H100): wider bands keep the first staging.
template <class T, bool TRANS>
Kern kernel_for(long long kw) {
  constexpr bool kRegStaged = !std::is_same_v<typename T::In, typename T::Stage>;
  if constexpr (TRANS) {
    return pick_bk(kw, {32, 48}) == 48 ? convmat_kernel<T, true, 48, true>
                                       : convmat_kernel<T, true, 32, true>;
  } else {
    if constexpr (kRegStaged) {  // (instantiated only where it can be chosen)
      if (kBN + kw - 1 > 48) return convmat_kernel<T, false, 32, false>;
    }
    switch (pick_bk(kw, {32, 48, 64})) {
      case 48: return convmat_kernel<T, false, 48, true>;
      case 64: return convmat_kernel<T, false, 64, true>;
      default: return convmat_kernel<T, false, 32, true>;
    }
  }
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
    // the table covers the last stage of any BK kernel_for may choose
    tabw_ = std::max({table_width(32, kw), table_width(48, kw), table_width(64, kw)});
    build_pair_table<T>(r, trans_, static_cast<int>(kh), tabw_, tab_);
    kern_ = trans_ ? kernel_for<T, true>(kw) : kernel_for<T, false>(kw);
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
    a.out_pairs = reinterpret_cast<std::uintptr_t>(out.data) % (2 * sizeof(typename T::Out)) == 0 &&
                  out.row_stride % 2 == 0;
    kern_<<<grid_, kThreads, 0, st>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  bool trans_ = false;
  int tabw_ = 0;
  DeviceBuffer tab_;
  Kern kern_ = nullptr;
  dim3 grid_;
};

}  // namespace
}  // namespace cm
}  // namespace cuda

std::unique_ptr<Plan> make_convmat_plan(const PlanRequest& r) {
  return cuda::cm::make_for<cuda::cm::ConvmatPlan>(r, "convmat");
}

}  // namespace tc
