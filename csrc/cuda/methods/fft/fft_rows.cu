// "fft" by rows, for real fp32 / fp64 images (make_fft_plan's choice where the width is a fast
// transform size and kh <= kFftRowsMaxTaps; plan option fft.layout): a 1-D R2C along every
// image row, the column-direction correlation done directly on the row spectra
// (fft_rows.cuh: kh complex taps per value), a 1-D C2R along every output row, and a crop that
// keeps each row's first W - kw + 1 values and adds back the lowest columns, summed in float64.
// Against the 2-D pair (fft.cu) it skips the column transforms both ways and the spectrum product
// pass: on the H100 at 4096^2 through a plan, fp32 0.25-0.32 ms and fp64 0.41-0.52 ms for
// k = 3..55, against 0.44 / 0.83 for the 2-D pair and 0.48 / 0.91 for torch.fft
// (benchmarks/harness/fft_hybrid.cu times the steps).
//
// The image is the R2C's input as it is (no staging copy) where its width is a fast transform
// size. Other widths (fft.layout='rows' only) are transformed at the next fast size: each band's
// rows are copied into rows of that length, zeros past the image. Valid outputs never read past
// the image's columns, so the circular transform of the longer rows gives them unchanged; the
// zeros only keep what the copy's tail would hold out of the spectra. A NaN or inf pixel makes
// its whole row spectrum non-finite, hence every output of the kh rows above it; the crop marks
// them and NonfiniteRepair::run recomputes every non-finite output by a direct float64 sum, so
// NaN/inf stay local (slow only for such images).
//
// Workspace: the image is cut into bands of output rows whose row spectra, product rows and
// cuFFT work area fit kRowsCapBytes (the last band overlaps the one before, so one plan pair
// serves all): the row spectra (also the C2R's output), the product rows, the float64 low
// columns per row, the taps, the twiddles and the work area.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/factories.hpp"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/cufft_util.cuh"
#include "cuda/methods/fft/fft_rows.cuh"
#include "cuda/runtime/nonfinite.cuh"

namespace tc {
namespace cuda {
namespace {

constexpr int kR = 8;  // output rows per thread of the product
constexpr std::int64_t kRowsCapBytes = std::int64_t(512) << 20;

// One thread per (tap row s, spectrum column v): the host loop's sums, unfused (see taps()).
template <class T, class C>
__global__ void fftrows_taps_kernel(const double* __restrict__ k, std::int64_t kw,
                                    const double2* __restrict__ cssn, std::int64_t w,
                                    std::int64_t mc, C* __restrict__ taps,
                                    double2* __restrict__ lo, int klow, int nl) {
  const std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t s = blockIdx.y;
  if (v >= mc) return;
  const double* row = k + s * kw;
  double re = 0, im = 0;
  std::int64_t j = 0;  // v t mod W
  for (std::int64_t t = 0; t < kw; ++t) {
    re = __dadd_rn(re, __dmul_rn(row[t], cssn[j].x));
    im = __dadd_rn(im, __dmul_rn(row[t], cssn[j].y));  // conj(e^{-i a}) = e^{+i a}
    j += v;
    if (j >= w) j -= w;
  }
  const double inv_w = 1.0 / static_cast<double>(w);
  const double a = __dmul_rn(re, inv_w), b = __dmul_rn(im, inv_w);
  taps[s * mc + v] = C{static_cast<T>(a), static_cast<T>(b)};
  if (v < nl) lo[s * klow + v] = double2{a, b};
}

template <Precision P>
class FftRowsPlan final : public CudaPlan {
  using T = std::conditional_t<P == Precision::fp64, double, float>;
  using C = typename fftrows::Cx<T>::type;
  static constexpr int kWarps = sizeof(T) == 4 ? 8 : 4;  // measured (fft_hybrid.cu)
  // Spectrum columns summed in float64 (fft_rows.cuh): fp32 the lowest 8, fp64 the DC alone.
  static constexpr int kLow = sizeof(T) == 4 ? 8 : 1;
  using G = fftrows::Geometry<T, kR, kWarps>;

 public:
  explicit FftRowsPlan(const PlanRequest& r) : CudaPlan(r), nf_(r) {
    w_ = next_fast_size(r.iw, false);  // the transform's length
    stage_ = w_ != r.iw;
    mc_ = w_ / 2 + 1;
    kh_ = r.kh;
    oh_ = r.ih - r.kh + 1;
    ow_ = r.iw - r.kw + 1;
    kp_ = (kh_ + kR - 1) / kR * kR;
    smem_ = G::smem_bytes(static_cast<int>(kp_));
    int optin = 0;
    TC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device()));
    if (smem_ > static_cast<std::size_t>(optin))
      throw ValueError("fft.layout='rows' takes kernels of at most " +
                       std::to_string((optin / (32 * sizeof(C)) - G::kRows) / 2 / kR * kR) +
                       " rows in " + precision_name(P) + "; this one has " + std::to_string(kh_) +
                       " (use fft.layout='2d')");
    if (w_ > 0x7fffffff / 2) throw ValueError("image too large for the fft method");
    // Rows per band: spectra + product rows + cuFFT's work area within kRowsCapBytes. The work
    // area is known once plans exist (1-D fp64 transforms of 8192 need about their data again):
    // plan for the data alone, then again with the work area's share per row if it was larger.
    const std::int64_t per_row = 2 * mc_ * static_cast<std::int64_t>(sizeof(C)) +
                                 (stage_ ? w_ * static_cast<std::int64_t>(sizeof(T)) : 0);
    set_band(kRowsCapBytes / per_row);
    const std::int64_t stride = stage_ ? w_ : r.iw;
    std::size_t work = make_plans(stride);
    const std::int64_t fit = kRowsCapBytes / (per_row + static_cast<std::int64_t>(work) / hb_ + 1);
    if (fit < hb_) {
      set_band(fit);
      make_plans(stride);
    }
    spec_.reset(hin_ * mc_ * sizeof(C));  // also the C2R's hb x w real output
    if (stage_) staged_.reset(hin_ * w_ * sizeof(T));
    o_.reset(hb_ * mc_ * sizeof(C));
    nl_ = static_cast<int>(std::min<std::int64_t>(kLow, (w_ + 1) / 2));  // below the Nyquist
    low_.reset(hb_ * kLow * sizeof(double2));
    TC_CUDA_CHECK(cudaMemset(low_.get(), 0, low_.bytes()));  // columns nl.. stay zero
    tables();
    khost_.assign(r.kernel, r.kernel + r.kh * r.kw);
    cgrid_ = fftrows::crop_grid(static_cast<int>(hb_), static_cast<int>(ow_),
                                fftrows::crop_blocks<T, kLow>(device()));
    raise_dynamic_smem(fftrows::correlate_down<T, kR, kWarps, kLow>, smem_);
  }

  std::size_t workspace_bytes() const override {
    // (the shared group's work area in full: an upper bound where plans share it)
    return plans_->work_bytes() + spec_.bytes() + o_.bytes() + low_.bytes() + taps_.bytes() +
           glo_.bytes() + tw_.bytes() + tab_.bytes() + kd_.bytes() + staged_.bytes();
  }

 protected:
  void run_device(const Tensor2D& in, const Tensor2D& out, cudaStream_t stream) override {
    if (!stage_ && in.row_stride != stride_) make_plans(in.row_stride);
    if (!taps_ready_) taps(stream);
    nf_.arm(stream);
    SharedCufft::Use fft(*plans_, stream);
    const dim3 pgrid = G::grid(static_cast<int>(mc_), static_cast<int>(hb_));
    const std::int64_t bands = (oh_ + hb_ - 1) / hb_;
    for (std::int64_t b = 0; b < bands; ++b) {
      const std::int64_t y0 = std::min(b * hb_, oh_ - hb_);  // the last band overlaps
      T* src = const_cast<T*>(in.ptr<T>()) + y0 * in.row_stride;
      if (stage_) {
        const dim3 sgrid(static_cast<unsigned>(std::min<std::int64_t>((w_ + 255) / 256, 64)),
                         static_cast<unsigned>(std::min<std::int64_t>(hin_, 65535)));
        pad_stack_kernel<P><<<sgrid, 256, 0, stream>>>(src, 0, in.row_stride,
                                                       static_cast<int>(hin_),
                                                       static_cast<int>(in.cols), staged_.get<T>(),
                                                       static_cast<int>(hin_),
                                                       static_cast<int>(w_));
        TC_CUDA_LAUNCH_CHECK();
        src = staged_.get<T>();
      }
      TC_CUFFT_CHECK(cufftXtExec(fft.first(), src, spec_.get(), CUFFT_FORWARD));
      fftrows::correlate_down<T, kR, kWarps, kLow><<<pgrid, G::kThreads, smem_, stream>>>(
          spec_.get<C>(), mc_, static_cast<int>(hin_), static_cast<int>(mc_), taps_.get<C>(),
          mc_, static_cast<int>(kp_), o_.get<C>(), mc_, static_cast<int>(hb_), nullptr,
          glo_.get<double2>(), low_.get<double2>(), nl_);
      TC_CUDA_LAUNCH_CHECK();
      TC_CUFFT_CHECK(cufftXtExec(fft.second(), o_.get(), spec_.get(), CUFFT_INVERSE));
      fftrows::crop_low<T, kLow><<<cgrid_, fftrows::kCropThreads, 0, stream>>>(
          spec_.get<T>(), static_cast<int>(w_), low_.get<double2>(), tw_.get<double2>(),
          out.ptr<T>() + y0 * out.row_stride,
          out.row_stride, static_cast<int>(hb_), static_cast<int>(ow_), nf_.flag());
      TC_CUDA_LAUNCH_CHECK();
    }
    nf_.run(in, out, stream, true);
  }

 private:
  // At most `rows` output rows per band, as few bands as that allows, all of one height (the
  // last overlaps the one before by less than one row per band: 16382 rows in bands of at most
  // 4095 are 5 of 3277, not 4 of 4095 and a fifth recomputing 4094 of them).
  void set_band(std::int64_t rows) {
    const std::int64_t most = std::min<std::int64_t>(oh_, std::max<std::int64_t>(1, rows));
    const std::int64_t bands = (oh_ + most - 1) / most;
    hb_ = (oh_ + bands - 1) / bands;
    hin_ = hb_ + kh_ - 1;
  }

  // The forward transform reads rows `stride` elements apart (the image's row stride, or w for
  // the staged rows); the inverse writes rows of w into the spectrum buffer. One shared group
  // (cufft_util.cuh: SharedCufft) of the two, with one work area (they run in turn); returns its bytes.
  std::size_t make_plans(std::int64_t stride) {
    plans_ = SharedCufft::get(
        device(), spec_rows(w_, stride, mc_, Fft<P>::rtype, Fft<P>::ctype, Fft<P>::ctype, hin_),
        spec_rows(w_, mc_, w_, Fft<P>::ctype, Fft<P>::rtype, Fft<P>::ctype, hb_));
    stride_ = stride;
    return plans_->work_bytes();
  }

  // A new kernel: its taps are made at the next call, on that call's stream (as a first call's).
  bool set_kernel(const double* k) override {
    khost_.assign(k, k + kh_ * kw_);
    nf_.set_kernel(k);
    taps_ready_ = false;
    return true;
  }

  // The cos / sin table cs[j] = e^{2 pi i j / W} (O(W), made on the host, kept for the taps),
  // and the crop's twiddles tw[x] = cs[x]; synchronous uploads, so any stream may read them.
  void tables() {
    std::vector<double2> cssn(static_cast<std::size_t>(w_));
    for (std::int64_t j = 0; j < w_; ++j) {
      const double a = 2.0 * M_PI * static_cast<double>(j) / static_cast<double>(w_);
      cssn[j] = double2{std::cos(a), std::sin(a)};
    }
    tab_.upload(cssn.data(), cssn.size() * sizeof(double2));
    if (kLow > 1) tw_.upload(cssn.data(), static_cast<std::size_t>(ow_) * sizeof(double2));
    taps_.reset(static_cast<std::size_t>(kp_ * mc_) * sizeof(C));
    glo_.reset(static_cast<std::size_t>(kp_ * kLow) * sizeof(double2));
    kd_.reset(static_cast<std::size_t>(kh_ * kw_) * sizeof(double));
  }

  // taps[s][v] = conj(sum_t k[s][t] e^{-2 pi i v t / W}) / W (kp rows, zeros past kh), the same
  // for v < kLow in float64 (glo), on `stream`: the O(kh W kw) sums run on the device
  // (taps_kernel: float64, unfused multiply-adds in the host loop's order, so the same bits).
  // The kernel's upload is from pageable memory the plan keeps (staged before the call returns).
  void taps(cudaStream_t s) {
    TC_CUDA_CHECK(cudaMemcpyAsync(kd_.get(), khost_.data(), kd_.bytes(), cudaMemcpyHostToDevice,
                                  s));
    TC_CUDA_CHECK(cudaMemsetAsync(taps_.get(), 0, taps_.bytes(), s));
    TC_CUDA_CHECK(cudaMemsetAsync(glo_.get(), 0, glo_.bytes(), s));
    const dim3 grid(static_cast<unsigned>((mc_ + 127) / 128), static_cast<unsigned>(kh_));
    fftrows_taps_kernel<T, C><<<grid, 128, 0, s>>>(kd_.get<double>(), kw_, tab_.get<double2>(),
                                                   w_, mc_, taps_.get<C>(), glo_.get<double2>(),
                                                   kLow, nl_);
    TC_CUDA_LAUNCH_CHECK();
    taps_ready_ = true;
  }

  std::int64_t w_ = 0, mc_ = 0, kh_ = 0, oh_ = 0, ow_ = 0, kp_ = 0, hb_ = 0, hin_ = 0;
  std::int64_t stride_ = -1;
  int nl_ = 1;
  dim3 cgrid_;
  std::size_t smem_ = 0;
  std::shared_ptr<SharedCufft> plans_;
  DeviceBuffer spec_, o_, low_, taps_, glo_, tw_, tab_, kd_;
  DeviceBuffer staged_;  // a band's rows at the transform's length (stage_)
  bool stage_ = false;   // the width is not a fast size: rows staged at w_
  std::vector<double> khost_;  // the kernel the taps are made from
  bool taps_ready_ = false;  // (a CUDA plan runs one call at a time: the plan cache's checkout)
  NonfiniteRepair nf_;
};

}  // namespace

bool fft_rows_applies(const PlanRequest& r) {
  const Tri want = r.options.fft_rows;
  const bool real32_64 = !r.complex_data &&
                         (r.precision == Precision::fp32 || r.precision == Precision::fp64);
  if (want == Tri::off) return false;
  if (want == Tri::on) {
    if (!real32_64)
      throw ValueError(std::string("fft.layout='rows' takes real fp32 / fp64 data, not ") +
                       (r.complex_data ? "complex data" : precision_name(r.precision)));
    return true;
  }
  return real32_64 && r.kh <= kFftRowsMaxTaps && next_fast_size(r.iw, false) == r.iw;
}

std::unique_ptr<Plan> make_fft_rows_plan(const PlanRequest& r) {
  if (r.precision == Precision::fp32) return std::make_unique<FftRowsPlan<Precision::fp32>>(r);
  return std::make_unique<FftRowsPlan<Precision::fp64>>(r);
}

}  // namespace cuda
}  // namespace tc
