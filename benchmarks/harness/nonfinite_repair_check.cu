// Standalone check and timing of NonfiniteRepair (csrc/cuda/runtime/nonfinite.*) without the package
// build: an output whose window holds NaN/±inf, plus a halo around it made NaN as a tensor-core
// method's zero padding would, is repaired and compared with a float64 host reference (NaN and
// inf masks, inf signs, finite values), for float16/32/64 storage; then the repair of a 4096²
// float output with three planted pixels is timed (CUDA events, median of 20; argument "check":
// no timing, e.g. under compute-sanitizer).
//   nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc benchmarks/harness/nonfinite_repair_check.cu \
//        csrc/cuda/runtime/nonfinite.cu csrc/cuda/runtime/common.cu csrc/core/types.cpp -o nonfinite_repair_check
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/runtime/nonfinite.cuh"

using namespace tc;

template <class S> double to_d(S v) { return static_cast<double>(v); }
template <> double to_d<__half>(__half v) { return __half2float(v); }
template <class S> S from_d(double v) { return static_cast<S>(v); }
template <> __half from_d<__half>(double v) { return __float2half(static_cast<float>(v)); }

template <class S>
bool check(DType dt, int ih, int iw, int kh, int kw, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0), K(0.25, 1.0);
  std::vector<double> k(static_cast<std::size_t>(kh) * kw);
  for (auto& c : k) c = (U(g) < 0.5 ? -1 : 1) * K(g);
  std::vector<S> img(static_cast<std::size_t>(ih) * iw);
  for (auto& v : img) v = from_d<S>(U(g));
  const double nan = std::nan(""), inf = INFINITY;
  const int pts[][2] = {{0, 0}, {ih - 1, iw - 1}, {ih / 2, iw / 2}, {ih / 2, iw / 2 + 2}, {ih / 3, 0}};
  const double val[] = {nan, inf, inf, -inf, -inf};
  for (int i = 0; i < 5; ++i) img[static_cast<std::size_t>(pts[i][0]) * iw + pts[i][1]] = from_d<S>(val[i]);
  const int oh = ih - kh + 1, ow = iw - kw + 1;
  std::vector<double> ref(static_cast<std::size_t>(oh) * ow);
  std::vector<S> out(ref.size());
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x) {
      double s = 0;
      for (int u = 0; u < kh; ++u)
        for (int v = 0; v < kw; ++v) s += to_d(img[static_cast<std::size_t>(y + u) * iw + x + v]) * k[u * kw + v];
      ref[static_cast<std::size_t>(y) * ow + x] = s;
    }
  // what a method with padding would store: NaN over the window and 15 more rows/columns
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x) {
      bool near = false;
      for (const auto& p : pts)
        near |= p[0] - y >= 0 && p[0] - y < kh + 15 && p[1] - x >= 0 && p[1] - x < kw + 15;
      const double r = ref[static_cast<std::size_t>(y) * ow + x];
      out[static_cast<std::size_t>(y) * ow + x] = from_d<S>(near ? nan : r);
    }
  PlanRequest r{};
  r.kernel = k.data();
  r.kh = kh; r.kw = kw; r.ih = ih; r.iw = iw;
  cuda::NonfiniteRepair rep(r);
  cuda::DeviceBuffer din(img.size() * sizeof(S)), dout(out.size() * sizeof(S));
  TC_CUDA_CHECK(cudaMemcpy(din.get(), img.data(), din.bytes(), cudaMemcpyHostToDevice));
  TC_CUDA_CHECK(cudaMemcpy(dout.get(), out.data(), dout.bytes(), cudaMemcpyHostToDevice));
  Tensor2D ti{}, to{};
  ti.data = din.get(); ti.rows = ih; ti.cols = iw; ti.row_stride = iw; ti.dtype = dt; ti.on_device = true;
  to.data = dout.get(); to.rows = oh; to.cols = ow; to.row_stride = ow; to.dtype = dt; to.on_device = true;
  const int one = 1;
  TC_CUDA_CHECK(cudaMemcpy(rep.flag(), &one, sizeof(int), cudaMemcpyHostToDevice));
  rep.run(ti, to, nullptr, true);
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  TC_CUDA_CHECK(cudaMemcpy(out.data(), dout.get(), dout.bytes(), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double a = to_d(out[i]), b = ref[i];
    const bool same = std::isnan(b) ? std::isnan(a)
                      : std::isinf(b) ? a == b
                      : std::isfinite(a) && std::fabs(a - b) <= 2e-3 * (std::fabs(b) + 1.0);
    bad += !same;
  }
  std::printf("dtype %d image %dx%d kernel %dx%d: %ld mismatches\n", static_cast<int>(dt), ih, iw,
              kh, kw, bad);
  return bad == 0;
}

int main(int argc, char** argv) {
  bool ok = true;
  ok &= check<float>(DType::f32, 90, 150, 9, 20, 1);
  ok &= check<double>(DType::f64, 100, 77, 33, 5, 2);
  ok &= check<__half>(DType::f16, 70, 300, 3, 67, 3);
  ok &= check<float>(DType::f32, 64, 64, 1, 1, 4);
  if (argc > 1) {  // "check": no timing (e.g. under compute-sanitizer)
    std::printf(ok ? "ALL OK\n" : "SOME FAILED\n");
    return ok ? 0 : 1;
  }
  // timing: 4096² float, 55x55 kernel, three planted pixels' windows NaN
  const int n = 4096, kk = 55, o = n - kk + 1;
  std::vector<double> k(kk * kk, 0.5);
  PlanRequest r{};
  r.kernel = k.data(); r.kh = kk; r.kw = kk; r.ih = n; r.iw = n;
  cuda::NonfiniteRepair rep(r);
  std::vector<float> img(static_cast<std::size_t>(n) * n, 0.5f), out(static_cast<std::size_t>(o) * o, 1.f);
  const int pts[3][2] = {{1000, 1000}, {2000, 3000}, {3000, 50}};
  for (const auto& p : pts) {
    img[static_cast<std::size_t>(p[0]) * n + p[1]] = NAN;
    for (int y = std::max(0, p[0] - kk + 1); y <= std::min(o - 1, p[0]); ++y)
      for (int x = std::max(0, p[1] - kk + 1); x <= std::min(o - 1, p[1]); ++x)
        out[static_cast<std::size_t>(y) * o + x] = NAN;
  }
  cuda::DeviceBuffer din(img.size() * 4), dout(out.size() * 4);
  TC_CUDA_CHECK(cudaMemcpy(din.get(), img.data(), din.bytes(), cudaMemcpyHostToDevice));
  Tensor2D ti{}, to{};
  ti.data = din.get(); ti.rows = n; ti.cols = n; ti.row_stride = n; ti.dtype = DType::f32; ti.on_device = true;
  to.data = dout.get(); to.rows = o; to.cols = o; to.row_stride = o; to.dtype = DType::f32; to.on_device = true;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto timed_run = [&]() {
    cudaEventRecord(a);
    rep.run(ti, to, nullptr, true);
    cudaEventRecord(b);
    TC_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    return t;
  };
  std::vector<float> ms;
  const int one = 1;
  for (int i = 0; i < 23; ++i) {
    TC_CUDA_CHECK(cudaMemcpy(dout.get(), out.data(), dout.bytes(), cudaMemcpyHostToDevice));
    TC_CUDA_CHECK(cudaMemcpy(rep.flag(), &one, sizeof(int), cudaMemcpyHostToDevice));
    const float t = timed_run();
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("repair 4096^2 fp32, 55x55, 3 NaN pixels (9075 outputs): median %.4f ms\n", ms[10]);
  rep.arm(nullptr);
  std::printf("repair with the flag clear: %.4f ms\n", timed_run());
  std::printf(ok ? "ALL OK\n" : "SOME FAILED\n");
  return ok ? 0 : 1;
}
