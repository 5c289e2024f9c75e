// CPU `direct`: valid correlation by the definition, threads over output rows. On AVX-512 CPUs the
// 4-row x 6-vector register tiles of direct_avx512.cpp run, on AVX2/FMA CPUs the register-blocked
// kernels of direct_avx2.cpp (TENSORCONV_FORCE_AVX2=1 picks those on AVX-512 CPUs too);
// elsewhere (or with TENSORCONV_FORCE_PORTABLE=1) each thread keeps a block of output pixels in registers and streams
// kernel taps over it, a contiguous multiply-add the compiler vectorizes for the baseline ISA.
// fp16fp32 widens half storage to float once. Per-image kernels (PlanRequest::kernel_count):
// the plan keeps every kernel and a stack runs in one call, image b with kernel b % count.
#include <cmath>
#include <cstdint>
#include <vector>

#include "../core/factories.hpp"
#include "../core/half.hpp"
#include "cpu_features.hpp"
#include "direct_avx2.hpp"

namespace tc {
namespace {

// One multiply-add of the portable path, the same operation for every output (blocks and tails
// alike), so an output's bits never depend on where it sits: a fused multiply-add where the target
// has one (where the compiler could otherwise contract some sums and not others), else a product
// and a sum (no FMA instruction to contract into).
template <class T>
inline T madd(T c, T x, T acc) {
#if defined(FP_FAST_FMA) || defined(__FP_FAST_FMA)
  return std::fma(c, x, acc);
#else
  return acc + c * x;
#endif
}

bool use_avx512() { return cpu_use_avx2() && cpu_has_avx512bw() && !cpu_avx2_forced(); }

template <class T>
void correlate_valid(const T* in, std::int64_t in_stride, T* out, std::int64_t out_stride,
                     std::int64_t orows, std::int64_t ocols, const T* k, std::int64_t kh,
                     std::int64_t kw) {
  if (use_avx512()) {
    correlate_valid_avx512(in, in_stride, out, out_stride, orows, ocols, k, kh, kw);
    return;
  }
  if (cpu_use_avx2()) {
    correlate_valid_avx2(in, in_stride, out, out_stride, orows, ocols, k, kh, kw);
    return;
  }
  constexpr std::int64_t B = 64 / sizeof(T);  // 16 floats / 8 doubles: a few vector registers
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < orows; ++i) {
    T* o = out + i * out_stride;
    std::int64_t j = 0;
    for (; j + B <= ocols; j += B) {
      T acc[B] = {};
      for (std::int64_t u = 0; u < kh; ++u) {
        const T* r = in + (i + u) * in_stride + j;
        const T* kr = k + u * kw;
        for (std::int64_t v = 0; v < kw; ++v) {
          const T c = kr[v];
          for (std::int64_t b = 0; b < B; ++b) acc[b] = madd(c, r[v + b], acc[b]);
        }
      }
      for (std::int64_t b = 0; b < B; ++b) o[j + b] = acc[b];
    }
    for (; j < ocols; ++j) {
      T acc = 0;
      for (std::int64_t u = 0; u < kh; ++u) {
        const T* r = in + (i + u) * in_stride + j;
        const T* kr = k + u * kw;
        for (std::int64_t v = 0; v < kw; ++v) acc = madd(kr[v], r[v], acc);
      }
      o[j] = acc;
    }
  }
}

class DirectPlan final : public Plan {
 public:
  explicit DirectPlan(const PlanRequest& r) : Plan(r) {
    const std::size_t n = static_cast<std::size_t>(r.kernel_count * r.kh * r.kw);
    if (r.precision == Precision::fp64) {
      k64_.assign(r.kernel, r.kernel + n);
    } else {
      // fp32 rounds the kernel to float; fp16fp32 rounds it to half first (its storage).
      k32_.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        float v = static_cast<float>(r.kernel[i]);
        k32_[i] = r.precision == Precision::fp16fp32 ? half_to_float(float_to_half(v)) : v;
      }
    }
  }
  std::size_t workspace_bytes() const override {
    // fp16fp32 widens the image and output to float on the host.
    return precision_ == Precision::fp16fp32
               ? static_cast<std::size_t>(ih_ * iw_ + out_rows() * out_cols()) * sizeof(float)
               : 0;
  }

 protected:
  void run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t) override {
    run_one(in, out, 0);
  }

  // A stack: image b with kernel b % kernels_ (one kernel: the same for every image).
  void run_batch(const Tensor2D& in, std::int64_t in_batch_stride, const Tensor2D& out,
                 std::int64_t out_batch_stride, std::int64_t batch, std::uintptr_t) override {
    const std::size_t ies = dtype_size(in.dtype), oes = dtype_size(out.dtype);
    for (std::int64_t b = 0; b < batch; ++b) {
      Tensor2D i = in, o = out;
      i.data = static_cast<char*>(in.data) + b * in_batch_stride * ies;
      o.data = static_cast<char*>(out.data) + b * out_batch_stride * oes;
      run_one(i, o, b % kernels_);
    }
  }

 private:
  void run_one(const Tensor2D& in, const Tensor2D& out, std::int64_t kernel) {
    if (in.on_device) throw ValueError("method 'direct' runs on the CPU; pass host (NumPy) arrays");
    const std::int64_t ko = kernel * kh_ * kw_;
    if (precision_ == Precision::fp64) {
      correlate_valid(in.ptr<double>(), in.row_stride, out.ptr<double>(), out.row_stride,
                      out.rows, out.cols, k64_.data() + ko, kh_, kw_);
    } else if (precision_ == Precision::fp32) {
      correlate_valid(in.ptr<float>(), in.row_stride, out.ptr<float>(), out.row_stride, out.rows,
                      out.cols, k32_.data() + ko, kh_, kw_);
    } else {
      std::vector<float> a(static_cast<std::size_t>(in.rows * in.cols));
      std::vector<float> b(static_cast<std::size_t>(out.rows * out.cols));
      const auto* h = in.ptr<std::uint16_t>();
      for (std::int64_t i = 0; i < in.rows; ++i)
        for (std::int64_t j = 0; j < in.cols; ++j)
          a[i * in.cols + j] = half_to_float(h[i * in.row_stride + j]);
      correlate_valid(a.data(), in.cols, b.data(), out.cols, out.rows, out.cols,
                      k32_.data() + ko, kh_, kw_);
      auto* o = out.ptr<std::uint16_t>();
      for (std::int64_t i = 0; i < out.rows; ++i)
        for (std::int64_t j = 0; j < out.cols; ++j)
          o[i * out.row_stride + j] = float_to_half(b[i * out.cols + j]);
    }
  }

  std::vector<double> k64_;
  std::vector<float> k32_;
};

}  // namespace

std::string direct_note() {
  if (use_avx512()) return "AVX-512 register tiles";
  if (cpu_use_avx2()) return "AVX2/FMA register tiles";
  return cpu_portable_forced() ? "portable (TENSORCONV_FORCE_PORTABLE)" : "portable (no AVX2/FMA)";
}

std::unique_ptr<Plan> make_direct_plan(const PlanRequest& r) {
  return std::make_unique<DirectPlan>(r);
}

}  // namespace tc
