// "separable" (Podlozhnyuk 2007): a row pass then a column pass, each staging a tile with its apron
// in shared memory with coalesced loads. The kernel K (kh x kw) is written as a sum of r outer
// products a_i b_i^T: r = 1 for separable kernels (Gaussian, box, Sobel's factors). The factors
// come down in PlanRequest from LAPACK's SVD (python/tensorconv/_factors.py: rank tolerance by
// precision; the exact row decomposition K = sum_u e_u K[u,:] where the SVD finds full rank).
// This file: the plan. The passes: row_pass.cuh, column_pass.cuh, fused_pass.cu, fused_ws_pass.cu.
//
// Row pass: T[t, x] = sum_v b[v] in[t, x + v]; column pass: out[y, x] (+)= sum_u a[u] T[y + u, x].
// For kh, kw <= 64 and scalar precisions both run fused in one kernel with T in shared memory;
// fp16 (half2 lanes) and larger kernels use a row-pass kernel and a column-pass kernel. The fused
// passes run as banded products on the tensor cores (band_mma.cuh): both on tf32 MMAs for tf32
// from 13 taps, and for fp32 from 25 taps the column pass on fp64 MMAs (DMMA).
// T (and the running sum over the r terms) is held in the precision's compute type. T is a ring
// of rows processed in bands when it would pass 1 GiB (plan option separable.band_mb sets the
// size: bands small enough to keep T in L2 were measured slower on the H100, 2026-11-22).
#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/factories.hpp"
#include "cuda/methods/separable/column_pass.cuh"
#include "cuda/methods/separable/row_pass.cuh"
#include "cuda/methods/separable/separable.cuh"

namespace tc {
namespace cuda {
namespace sep {
namespace {

// Rows of T per band: the ring of T plus the band's input and output should fit in L2.
std::int64_t band_bytes(const PlanOptions& o) {
  // one band unless T passes 1 GiB (the default): bands were measured slower
  return o.separable_band_mb << 20;
}

template <Precision P>
class SeparablePlan final : public CudaPlan {
  using T = Prec<P>;
  using Elem = typename T::Elem;
  using Vec = typename T::Vec;
  static constexpr bool kSumInOut = std::is_same<typename T::Store, Elem>::value;

 public:
  explicit SeparablePlan(const PlanRequest& r) : CudaPlan(r), opts_(r.options), nf_(r) {
    r_ = static_cast<int>(r.rank);  // make_plan checked the factors are there
    upload_coefficients<P>(r.factor_col, r.rank * r.kh, a_);
    upload_coefficients<P>(r.factor_row, r.rank * r.kw, b_);
    const std::int64_t oh = out_rows(), ow = out_cols();
    if (r_ > 1 && !kSumInOut) sum_.reset(oh * ow * sizeof(Elem));
    if constexpr (T::W == 1) {
      if (use_fused(r.kh, r.kw, opts_) && setup_fused()) return;
    }
    constexpr int OH = BY * rows_per_thread<P>();
    std::int64_t rows = band_bytes(opts_) / (ow * static_cast<std::int64_t>(sizeof(Elem)));
    band_ = std::max<std::int64_t>(OH, rows / OH * OH);
    if (band_ >= oh) band_ = oh;
    ring_rows_ = std::min<std::int64_t>(ih_, band_ + kh_ - 1);
    ring_.reset(ring_rows_ * ow * sizeof(Elem));
  }
  std::size_t workspace_bytes() const override {
    return ring_.bytes() + sum_.bytes() + a_.bytes() + b_.bytes();
  }
  int rank() const { return r_; }

 private:
  // The fused pass (default for scalar precisions with kh, kw <= 64; separable.fused = False
  // selects the two-pass form, kept for fp16's half2 lanes and larger kernels).
  static bool use_fused(std::int64_t kh, std::int64_t kw, const PlanOptions& o) {
    return kh <= FMAX && kw <= FMAX && o.separable_fused;
  }

  using Mma = FusedMma<P>;
  // The tensor-core passes (FusedMma) from min_taps() taps on (H100, Gaussians at 4096^2; tf32:
  // k = 15 0.074 vs 0.075 ms with FFMAs, 25 0.070 vs 0.091, 55 0.082 vs 0.141, same MAPE; fp32:
  // k = 25 0.074 vs 0.077, 35 0.084 vs 0.090, 55 0.098 vs 0.119, MAPE 2.4-2.8e-6 vs
  // 5.8-8.3e-6 %).
  // Plan option separable.tensor_cores = False / True forces either form. The tensor-core passes run nd band chunks
  // (the longer side's), so a much shorter filtered side would waste them.
  static constexpr int min_taps() { return P == Precision::tf32 ? 13 : 25; }
  bool use_tc(int kh, int kw, int nd) const {
    if (!kMma<typename Mma::Col>) return false;
    if (!kMma<typename Mma::Row>) {  // fp64 MMAs: code compiled for sm_90 on
      if (cuda_code_arch() < 90) return false;
    }
    const int side = kMma<typename Mma::Row> ? std::min(kh, kw) : kh;
    if (band_chunks(side) < nd - 1) return false;
    if (opts_.separable_tensor_cores != Tri::automatic)
      return opts_.separable_tensor_cores == Tri::on;
    return std::max(kh, kw) >= min_taps();
  }

  // False (two-pass form instead) where the fused pass's shared memory does not fit the device
  // (it needs up to ~136 KB in fp64 at 64 taps; consumer GPUs offer ~100 KB per block).
  bool setup_fused() {
    int optin = 0;
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device()));
    const int nc = static_cast<int>((std::max(kh_, kw_) + FCH - 1) / FCH);
    const int kh = static_cast<int>(kh_), kw = static_cast<int>(kw_);
    using Row = typename Mma::Row;
    using Col = typename Mma::Col;
    constexpr bool kWs = !kMma<Row> && kMma<Col>;  // fp32: the warp-specialized kernel
    const std::size_t tc_smem =
        kWs ? fused_ws_smem<P, Col>(kw, nc + 1) : fused_smem<P, Row, Col>(kh, kw, nc + 1);
    // Not for the exact row decomposition (r = min(kh, kw) terms): its unit-vector factors
    // would fill whole bands with zeros (tf32 random k = 55: 15.4 against 11.9 ms).
    const bool low_rank = r_ == 1 || r_ < std::min(kh, kw);
    const bool tc =
        low_rank && use_tc(kh, kw, nc + 1) && tc_smem <= static_cast<std::size_t>(optin);
    smem_ = tc ? tc_smem : fused_smem<P, void, void>(kh, kw, 0);
    if (smem_ > static_cast<std::size_t>(optin)) return false;
    // The unrolled staging copies (stage_group) measured faster for 2-byte data at every k and
    // for 4-byte data from 25 taps (-3 to -12 %), slower for 4-byte data below (k = 3, 15: +3 %
    // fp32, +11 % tf32's tensor-core passes at 15; H100, 4096^2, Gaussians; benchmark notes).
    const bool su = sizeof(typename T::Store) == 2 || kw >= 25;
    if (!tc) {
      kern_ = fused_kernel<P, void, void>(nc, su);
    } else if constexpr (kWs) {
      kern_ = fused_ws_kernel<P, Col>(nc);
      block_y_ = ws::kWarpsY;
    } else {
      kern_ = fused_kernel<P, Row, Col>(nc, su);
    }
    // The rounded coefficients (as the device rounds operands) go to the launch parameters.
    std::vector<Elem> a(a_.bytes() / sizeof(Elem)), b(b_.bytes() / sizeof(Elem));
    TC_CUDA_CHECK(cudaMemcpy(a.data(), a_.get(), a_.bytes(), cudaMemcpyDeviceToHost));
    TC_CUDA_CHECK(cudaMemcpy(b.data(), b_.get(), b_.bytes(), cudaMemcpyDeviceToHost));
    coef_.assign(r_, FusedCoef<Elem>{});
    for (int q = 0; q < r_; ++q) {
      std::copy_n(a.data() + static_cast<std::size_t>(q) * kh_, kh_, coef_[q].a);
      std::copy_n(b.data() + static_cast<std::size_t>(q) * kw_, kw_, coef_[q].b);
    }
    int per_sm = 0;
    raise_dynamic_smem(kern_, smem_);
    TC_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern_, BX * block_y_, smem_));
    if (per_sm < 1) return false;
    // One wave of blocks (never more, or a second partial wave doubles the time): strips of FW
    // columns x segments of `seg_` rows (each segment recomputes kh - 1 rows of T, so segments
    // are as long as the wave allows).
    const std::int64_t strips = (out_cols() + FW - 1) / FW;
    const std::int64_t slots = static_cast<std::int64_t>(per_sm) * sm_count();
    const std::int64_t splits = std::max<std::int64_t>(1, slots / strips);
    std::int64_t seg = (out_rows() + splits - 1) / splits;
    seg = std::max(seg, opts_.separable_min_segment_rows);  // tests: longer walks
    seg_ = std::max<std::int64_t>(FOH, (seg + FOH - 1) / FOH * FOH);
    fused_ = true;
    return true;
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    constexpr int R = rows_per_thread<P>();
    const int oh = static_cast<int>(out.rows), ow = static_cast<int>(out.cols);
    const int kh = static_cast<int>(kh_), kw = static_cast<int>(kw_);
    const int ring_rows = static_cast<int>(ring_rows_);
    Elem* sum = kSumInOut ? reinterpret_cast<Elem*>(out.data) : sum_.get<Elem>();
    const std::int64_t sum_stride = kSumInOut ? out.row_stride : ow;
    nf_.arm(stream);
    if constexpr (T::W == 1) {
      if (fused_) {
        const int seg = static_cast<int>(
            std::max<std::int64_t>(seg_, (ceil_div(oh, 65535) + FOH - 1) / FOH * FOH));
        const dim3 grid(ceil_div(ow, FW), ceil_div(oh, seg));
        // 16-byte cp.async needs 16-byte aligned rows; other inputs are staged with plain loads.
        const bool async = reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 &&
                           in.row_stride * sizeof(typename T::Store) % 16 == 0;
        for (int q = 0; q < r_; ++q) {
          const FusedArgs<P> args{in.ptr<typename T::Store>(), in.row_stride,
                                  static_cast<int>(in.rows), static_cast<int>(in.cols), oh, ow,
                                  seg, sum, sum_stride, out.ptr<typename T::Store>(),
                                  out.row_stride, kh, kw, q == 0, q == r_ - 1, async, nf_.flag()};
          kern_<<<grid, dim3(BX, block_y_), smem_, stream>>>(args, coef_[q]);
          TC_CUDA_LAUNCH_CHECK();
        }
        nf_.run(in, out, stream, true);
        return;
      }
    }
    const std::size_t row_smem = (CT + (BY * R + std::min(CT, kw) - 1) * PITCH_T) * sizeof(Vec);
    const std::size_t col_smem = (CT + (BY * R + std::min(CT, kh) - 1) * BX) * sizeof(Vec);
    const dim3 block(BX, BY);
    for (int q = 0; q < r_; ++q) {
      const Vec* a = a_.get<Vec>() + static_cast<std::size_t>(q) * kh;
      const Vec* b = b_.get<Vec>() + static_cast<std::size_t>(q) * kw;
      int done = 0;  // rows of T computed for this term
      for (int y0 = 0; y0 < oh; y0 += static_cast<int>(band_)) {
        const int y1 = static_cast<int>(std::min<std::int64_t>(oh, y0 + band_));
        const int need = y1 + kh - 1;
        const dim3 rgrid(ceil_div(ow, BY * R), std::min(ceil_div(need - done, BX * T::W), 65535));
        row_pass<P><<<rgrid, block, row_smem, stream>>>(
            in.ptr<typename T::Store>(), in.row_stride, done, need, static_cast<int>(in.cols),
            ring_.get<Elem>(), ring_rows, ow, b, kw);
        TC_CUDA_LAUNCH_CHECK();
        done = need;
        const dim3 cgrid(ceil_div(ow, BX * T::W), std::min(ceil_div(y1 - y0, BY * R), 65535));
        auto launch = [&](auto kern) {
          kern<<<cgrid, block, col_smem, stream>>>(ring_.get<Elem>(), ring_rows, ow, y0, y1, need,
                                                   sum, sum_stride, out.ptr<typename T::Store>(),
                                                   out.row_stride, a, kh, nf_.flag());
          TC_CUDA_LAUNCH_CHECK();
        };
        const bool first = q == 0, last = q == r_ - 1;
        if (first && last) launch(column_pass<P, true, true>);
        else if (first) launch(column_pass<P, true, false>);
        else if (last) launch(column_pass<P, false, true>);
        else launch(column_pass<P, false, false>);
      }
    }
    nf_.run(in, out, stream, true);
  }

 private:
  PlanOptions opts_;
  int r_ = 0;
  bool fused_ = false;
  int block_y_ = BY;  // warps per block of the fused kernel
  std::size_t smem_ = 0;
  std::int64_t seg_ = 0, band_ = 0, ring_rows_ = 0;
  DeviceBuffer a_, b_, ring_, sum_;
  typename FusedPtr<P>::type kern_ = nullptr;
  std::vector<FusedCoef<Elem>> coef_;  // one per term
  NonfiniteRepair nf_;
};
}  // namespace
}  // namespace sep
}  // namespace cuda

std::unique_ptr<Plan> make_separable_plan(const PlanRequest& r) {
  cuda::check_int_extent(r);
  return cuda::with_precision(r.precision, [&](auto tag) -> std::unique_ptr<Plan> {
    return std::make_unique<cuda::sep::SeparablePlan<decltype(tag)::value>>(r);
  });
}

}  // namespace tc
