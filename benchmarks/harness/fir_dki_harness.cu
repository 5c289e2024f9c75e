// Standalone harness for fir_dki's kernels (csrc/cuda/methods/fir/fir_dki.cu, included for its kernels
// alone): checks every output of odd shapes (one kernel block, k <= 64) per precision against a
// float64 correlation of the rounded inputs on the host, and times Kondo's 4096^2 setting
// (Gaussian sigma = r/2 as a general 2-D kernel, data on the device, CUDA events, 3 warm-ups,
// median of 20) per CTA tile and B-fragment reuse on/off -- without building the package.
// Build here:  nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks/harness -o build/fir_dki_harness benchmarks/harness/fir_dki_harness.cu
// Run there:   build/fir_dki_harness
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#define TC_FIR_DKI_KERNELS_ONLY
#include "cuda/methods/fir/fir_dki.cu"
#include "harness.cuh"

using namespace tc;
using namespace tc::cuda;
using namespace tc::cuda::fir;

template <class X> double h2d(X x) {
  if constexpr (std::is_same_v<X, __half>) return __half2float(x);
  else if constexpr (std::is_same_v<X, __nv_bfloat16>) return __bfloat162float(x);
  else return static_cast<double>(x);
}
template <class X> X d2h(double x) {
  if constexpr (std::is_same_v<X, __half>) return __double2half(x);
  else if constexpr (std::is_same_v<X, __nv_bfloat16>) return __double2bfloat16(x);
  else return static_cast<X>(x);
}
template <class T> const char* tname() {
  if constexpr (std::is_same_v<T, TrFp16>) return "fp16";
  else if constexpr (std::is_same_v<T, TrFp16Fp32>) return "fp16fp32";
  else return "bf16";
}
using harness::Dev;

// One launch of the kernel (one kernel block); returns the output as doubles; *ms: median time.
template <class T>
std::vector<double> run(const std::vector<double>& img, int ih, int iw, const std::vector<double>& ker,
                        int kh, int kw, int Wc, int dB, bool reuse, float* ms) {
  using In = typename T::In;
  using Out = typename T::Out;
  using St = typename T::Stage;
  const int hR = ih - kh + 1, wR = iw - kw + 1;
  Geo g = make_geo(ih, iw, kh, kw, hR, wR, Wc, dB);
  std::vector<In> hin(img.size());
  for (std::size_t i = 0; i < img.size(); ++i) hin[i] = d2h<In>(img[i]);
  std::vector<St> kt(static_cast<std::size_t>(g.hWp) * g.hKp, d2h<St>(0.0));
  for (int x = 0; x < kw; ++x)
    for (int y = 0; y < kh; ++y) kt[static_cast<std::size_t>(x) * g.hKp + y] = d2h<St>(ker[y * kw + x]);
  Dev din(hin.size() * sizeof(In)), dout(static_cast<std::size_t>(hR) * wR * sizeof(Out)),
      dkt(kt.size() * sizeof(St)), dnf(sizeof(int));
  TC_CUDA_CHECK(cudaMemcpy(din.p, hin.data(), hin.size() * sizeof(In), cudaMemcpyHostToDevice));
  TC_CUDA_CHECK(cudaMemcpy(dkt.p, kt.data(), kt.size() * sizeof(St), cudaMemcpyHostToDevice));
  TC_CUDA_CHECK(cudaMemset(dnf.p, 0, sizeof(int)));
  TC_CUDA_CHECK(cudaMemset(dout.p, 0xff, static_cast<std::size_t>(hR) * wR * sizeof(Out)));
  Args a{din.p, iw, dout.p, wR, dkt.p, nullptr, g, epi_store,
         (iw * sizeof(In)) % 16 == 0, static_cast<int*>(dnf.p)};
  KernelFn fn = reuse ? dki_select<T, true>(g) : dki_select<T, false>(g);
  const std::size_t smem = stage_bytes(g);
  if (smem > 48 * 1024)
    TC_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem)));
  auto launch = [&] {
    fn<<<dim3(g.nJ, g.nRB), kWarps * 32, smem>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  };
  launch();
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  if (ms) *ms = harness::median_ms(launch);
  std::vector<Out> hout(static_cast<std::size_t>(hR) * wR);
  TC_CUDA_CHECK(cudaMemcpy(hout.data(), dout.p, hout.size() * sizeof(Out), cudaMemcpyDeviceToHost));
  std::vector<double> r(hout.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = h2d(hout[i]);
  return r;
}

int g_fail = 0;

// Every output against sum K~ I~ (inputs rounded as staged) in float64, normalized by
// sum |K~||I~| of the window: a misplaced or lost diagonal is O(1), rounding ~1e-3 at most.
template <class T>
void check(std::mt19937_64& rng) {
  using St = typename T::Stage;
  using In = typename T::In;
  const int shapes[][4] = {{67, 93, 3, 5},    {101, 317, 7, 7},   {61, 301, 15, 17},
                           {45, 700, 17, 31}, {90, 530, 33, 47},  {130, 257, 47, 33},
                           {150, 611, 64, 64}, {1, 200, 1, 9},    {150, 1, 17, 1},
                           {40, 40, 40, 40},  {77, 1029, 9, 23},  {300, 333, 49, 63}};
  std::uniform_real_distribution<double> U(-1, 1);
  const double tol = std::is_same_v<T, TrFp16> ? 2e-2 : 4e-3;
  for (auto& s : shapes) {
    const int ih = s[0], iw = s[1], kh = s[2], kw = s[3], hR = ih - kh + 1, wR = iw - kw + 1;
    std::vector<double> img(static_cast<std::size_t>(ih) * iw), ker(kh * kw);
    for (auto& x : img) x = U(rng);
    for (auto& x : ker) x = U(rng);
    std::vector<double> ri = img, rk = ker, ref(static_cast<std::size_t>(hR) * wR), ab(ref.size());
    for (auto& x : ri) x = h2d(d2h<St>(h2d(d2h<In>(x))));
    for (auto& x : rk) x = h2d(d2h<St>(x));
    for (int i = 0; i < hR; ++i)
      for (int j = 0; j < wR; ++j) {
        double sm = 0, sa = 0;
        for (int u = 0; u < kh; ++u)
          for (int v = 0; v < kw; ++v) {
            const double p = ri[static_cast<std::size_t>(i + u) * iw + j + v] * rk[u * kw + v];
            sm += p;
            sa += std::fabs(p);
          }
        ref[static_cast<std::size_t>(i) * wR + j] = sm;
        ab[static_cast<std::size_t>(i) * wR + j] = sa + 1e-30;
      }
    for (int reuse = 0; reuse < 2; ++reuse)
      for (int geo = 0; geo < 3; ++geo) {
        const int Wc = geo == 0 ? 256 : geo == 1 ? 32 : 512, dB = geo == 0 ? 32 : geo == 1 ? 5 : 64;
        auto out = run<T>(img, ih, iw, ker, kh, kw, Wc, dB, reuse, nullptr);
        double worst = 0;
        int bad = 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
          const double e = std::fabs(out[i] - ref[i]) / ab[i];
          if (!(e <= tol)) ++bad;
          worst = std::max(worst, std::isfinite(e) ? e : 1e30);
        }
        g_fail += bad != 0;
        std::printf("check %-8s %4dx%-4d k %2dx%-2d Wc %3d dB %2d reuse %d  max err %.2e  bad %d%s\n",
                    tname<T>(), ih, iw, kh, kw, Wc, dB, reuse, worst, bad, bad ? "  FAIL" : "");
      }
  }
}

template <class T>
void time_all(const std::vector<double>& img, int n, const std::vector<int>& ks, bool sweep) {
  for (int k : ks) {
    const int r = k / 2;
    const double sigma = r / 2.0;
    std::vector<double> ker(k * k);
    double sum = 0;
    for (int y = 0; y < k; ++y)
      for (int x = 0; x < k; ++x)
        sum += ker[y * k + x] = std::exp(-((y - r) * (y - r) + (x - r) * (x - r)) / (2 * sigma * sigma));
    for (auto& v : ker) v /= sum;
    const int geos[][2] = {{256, 32}, {256, 64}, {512, 32}, {512, 64}, {128, 32}, {1024, 32}};
    for (int gi = 0; gi < (sweep ? 6 : 1); ++gi)
      for (int reuse = 1; reuse >= (k > 16 ? 0 : 1); --reuse) {
        float ms = 0;
        run<T>(img, n, n, ker, k, k, geos[gi][0], geos[gi][1], reuse, &ms);
        std::printf("time %-8s %d^2 k %2d  Wc %4d dB %2d reuse %d  %.4f ms\n", tname<T>(), n, k,
                    geos[gi][0], geos[gi][1], reuse, ms);
      }
  }
}

int main(int argc, char** argv) {
  std::mt19937_64 rng(7);
  check<TrFp16Fp32>(rng);
  check<TrFp16>(rng);
  check<TrBf16>(rng);
  std::printf("checks failed: %d\n", g_fail);
  const int n = 4096;
  std::vector<double> img(static_cast<std::size_t>(n) * n);
  std::uniform_real_distribution<double> U(0, 1);
  for (auto& x : img) x = U(rng);
  time_all<TrFp16Fp32>(img, n, {3, 7, 15, 17, 31, 33, 47, 63}, true);
  time_all<TrFp16>(img, n, {7, 31, 47}, false);
  time_all<TrBf16>(img, n, {7, 31, 47}, false);
  return g_fail ? 1 : 0;
}
