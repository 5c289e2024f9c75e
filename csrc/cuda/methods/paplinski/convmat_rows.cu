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
#include "cuda/methods/paplinski/convmat_rows_gemm.cuh"

namespace tc {
namespace cuda {
namespace cm {
namespace {

using namespace rows;

// The kernel for the staging rule (pick_uc). bf16 stages fp32 images (4 per 16-byte load, twice
// the loads of fp16): where a CTA's whole K is one stage (kh <= 17, kw <= 8: nothing to overlap
// the staging with), 4 loads in flight per thread instead of 2 (k = 3: 0.142 vs 0.154 ms, H100;
// at k = 15 0.210 vs 0.206, at k >= 25 15-25 % slower: registers, 3 CTAs/SM).
template <class T>
void (*kernel_for(int uc, long long kh, long long kw))(Args) {
  if constexpr (!std::is_same_v<typename T::In, typename T::Stage>) {
    if (uc == 48 && kMR + kh - 1 <= 48 && kw <= kVC)
      return convmat_rows_kernel<T, 48, true, 4>;
  }
  return uc == 48 ? convmat_rows_kernel<T, 48, true> : convmat_rows_kernel<T, 32, true>;
}

template <class T>
class ConvmatRowsPlan final : public CudaPlan {
 public:
  explicit ConvmatRowsPlan(const PlanRequest& r) : CudaPlan(r) {
    if (ceil_div(out_rows(), kMR) > 65535)
      throw ValueError("convmat_rows: output too tall for the grid (" +
                       std::to_string(out_rows()) + " rows)");
    const int uc = pick_uc(r.kh);
    tabw_ = table_width(uc, r.kh);
    build_pair_table<T>(r, true, static_cast<int>(r.kw), tabw_, tab_);
    kern_ = kernel_for<T>(uc, r.kh, r.kw);
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
           static_cast<int>(out_cols()),
           reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 &&
               (in.row_stride * sizeof(typename T::In)) % 16 == 0,
           reinterpret_cast<std::uintptr_t>(out.data) % (2 * sizeof(typename T::Out)) == 0 &&
               out.row_stride % 2 == 0};
    kern_<<<grid_, kThreads, 0, st>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  }

 private:
  int tabw_ = 0;
  DeviceBuffer tab_;
  void (*kern_)(Args) = nullptr;
  dim3 grid_;
};

}  // namespace
}  // namespace cm
}  // namespace cuda

std::unique_ptr<Plan> make_convmat_rows_plan(const PlanRequest& r) {
  return cuda::cm::make_for<cuda::cm::ConvmatRowsPlan>(r, "convmat_rows");
}

}  // namespace tc
