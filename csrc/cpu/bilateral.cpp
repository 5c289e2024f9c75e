// CPU bilateral filter (method "bilateral_cpu"): threads over output rows (parallel.hpp), the
// window walked tap by tap with one exp2 each (formula and non-finite rule: bilateral.hpp).
#include "bilateral.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "../core/factories.hpp"
#include "parallel.hpp"

namespace tc {

BilateralSetup bilateral_setup(const PlanRequest& r) {
  if (r.kh != r.kw || r.kh % 2 != 1)
    throw ValueError("bilateral: the spatial kernel must be square with an odd side, got " +
                     std::to_string(r.kh) + "x" + std::to_string(r.kw));
  if (!(std::isfinite(r.range_sigma) && r.range_sigma > 0))
    throw ValueError("bilateral: sigma_range must be finite and > 0, got " +
                     std::to_string(r.range_sigma));
  BilateralSetup s;
  s.radius = static_cast<int>(r.kh / 2);
  const std::size_t n = static_cast<std::size_t>(r.kh * r.kw);
  s.log2_ws.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double w = r.kernel[i];
    if (!(std::isfinite(w) && w >= 0))
      throw ValueError("bilateral: spatial weights must be finite and >= 0");
    s.log2_ws[i] = std::log2(w);  // -inf for 0: exp2 gives 0 again
  }
  if (!(r.kernel[n / 2] > 0)) throw ValueError("bilateral: the centre spatial weight must be > 0");
  s.cr = std::max(-std::log2(std::exp(1.0)) / (2.0 * r.range_sigma * r.range_sigma), -DBL_MAX);
  return s;
}

namespace {

template <class T>
void bilateral_rows(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t i0,
                    std::int64_t i1, std::int64_t ow, int k, const T* ls, T cr) {
  const int rad = k / 2;
  for (std::int64_t i = i0; i < i1; ++i) {
    for (std::int64_t j = 0; j < ow; ++j) {
      const T p = in[(i + rad) * is + j + rad];
      T num = 0, den = 0;
      for (int u = 0; u < k; ++u) {
        const T* row = in + (i + u) * is + j;
        const T* l = ls + u * k;
        for (int v = 0; v < k; ++v) {
          const T d = row[v] - p;
          const T w = std::exp2(std::fma(d, d * cr, l[v]));
          num = std::fma(w, d, num);
          den += w;
        }
      }
      out[i * os + j] = p + num / den;
    }
  }
}

class BilateralCpuPlan final : public Plan {
 public:
  explicit BilateralCpuPlan(const PlanRequest& r) : Plan(r) {
    const BilateralSetup s = bilateral_setup(r);
    ls64_ = s.log2_ws;
    ls32_.assign(ls64_.begin(), ls64_.end());
    cr_ = s.cr;
  }

 protected:
  void run(const Tensor2D& in, const Tensor2D& out, std::uintptr_t) override {
    if (in.on_device)
      throw ValueError("method 'bilateral_cpu' runs on the CPU; pass host (NumPy) arrays");
    if (precision_ == Precision::fp64)
      go(in.ptr<double>(), in.row_stride, out.ptr<double>(), out.row_stride, out.rows, out.cols,
         ls64_.data(), cr_);
    else
      go(in.ptr<float>(), in.row_stride, out.ptr<float>(), out.row_stride, out.rows, out.cols,
         ls32_.data(), static_cast<float>(std::max(cr_, -static_cast<double>(FLT_MAX))));
  }

 private:
  template <class T>
  void go(const T* in, std::int64_t is, T* out, std::int64_t os, std::int64_t oh,
          std::int64_t ow, const T* ls, T cr) {
    const int k = static_cast<int>(kh_);
    // Rows per chunk: about 64k taps, so small images still spread over the threads.
    const std::int64_t chunk = std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, ow * k * k));
    parallel_chunks(oh, 0, chunk, [&](std::int64_t b, std::int64_t e) {
      bilateral_rows(in, is, out, os, b, e, ow, k, ls, cr);
    });
  }
  std::vector<double> ls64_;
  std::vector<float> ls32_;
  double cr_ = 0;
};

}  // namespace

std::unique_ptr<Plan> make_bilateral_cpu_plan(const PlanRequest& r) {
  return std::make_unique<BilateralCpuPlan>(r);
}

}  // namespace tc
