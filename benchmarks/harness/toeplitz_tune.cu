// Standalone tuning harness for toeplitz_tc (csrc/cuda/methods/paplinski/toeplitz_tc.cuh): times the
// kernel's CTA geometries per precision at 4096^2 (median of 20, CUDA events, data on the
// device) and checks every output of a few odd shapes, and NaN/inf locality, against a float64
// direct correlation on the host — without building the package (the device build takes ~100 s).
// Build here:  nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks/harness -o tunebin/toeplitz_tune benchmarks/harness/toeplitz_tune.cu
// Run there:   tunebin/toeplitz_tune [--quick | --round4 | --tf32 | --round7 | --round8 | --round9 | --round10 | --round11 | --round12 | --round13 | --round14 | --round15 | --round16 | --round17 | --one PREC K]
// (default: every precision's checks, then the default geometries' times; --roundN: one
// tuning sweep, each described above its function below; tunebin/ is not committed)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>

#include "cuda/methods/paplinski/toeplitz_tc.cuh"
#include "harness.cuh"

using namespace tc;
using namespace tc::cuda;
using namespace tc::cuda::tz;

static const char* pname(Precision p) {
  const char* n[] = {"fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"};
  return n[static_cast<int>(p)];
}

template <class T> T host_store(double x) {
  if constexpr (std::is_same_v<T, __half>) return __double2half(x);
  else return static_cast<T>(x);
}
template <class T> double host_load(T x) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else return static_cast<double>(x);
}

static bool g_nocarry = false;  // time the one-row-block-per-CTA form
static bool g_unaligned = false;  // image 4 bytes off 16-byte alignment: no cp.async staging
static std::size_t g_budget = kSmemBudget;  // shared memory per CTA (three CTAs per SM: less)
static bool g_pad_out = false;  // output rows padded to 8 elements (32-byte aligned rows)

using harness::Dev;

// Runs (and optionally times) one geometry on an ih x iw image; returns the output as doubles.
template <Precision P, class Gm>
std::vector<double> run(const std::vector<double>& img, int ih, int iw,
                        const std::vector<double>& ker, int kh, int kw, float* ms) {
  using In = typename CfgOf<P, Gm>::In;
  using Out = typename Prec<P>::Store;
  const int oh = ih - kh + 1, ow = iw - kw + 1, old = g_pad_out ? (ow + 7) / 8 * 8 : ow;
  std::vector<In> hin(img.size());
  for (std::size_t i = 0; i < img.size(); ++i) hin[i] = host_store<In>(img[i]);
  auto st = prepare<P, Gm>(ker.data(), kh, kw, g_budget);
  if (g_nocarry) st.carry = false;
  Dev din((hin.size() + 4) * sizeof(In)), dout(static_cast<std::size_t>(oh) * old * sizeof(Out));
  Dev dband(st.band.size() * sizeof(st.band[0])), dkd(st.kd.size() * sizeof(st.kd[0]));
  In* dimg = static_cast<In*>(din.p) + (g_unaligned ? 1 : 0);
  TC_CUDA_CHECK(cudaMemcpy(dimg, hin.data(), hin.size() * sizeof(In), cudaMemcpyHostToDevice));
  TC_CUDA_CHECK(cudaMemcpy(dband.p, st.band.data(), st.band.size() * sizeof(st.band[0]),
                           cudaMemcpyHostToDevice));
  TC_CUDA_CHECK(cudaMemcpy(dkd.p, st.kd.data(), st.kd.size() * sizeof(st.kd[0]),
                           cudaMemcpyHostToDevice));
  Args a{};
  a.in = dimg;
  a.in_ld = iw;
  a.out = dout.p;
  a.out_ld = old;
  a.ih = ih; a.iw = iw; a.oh = oh; a.ow = ow; a.kh = kh; a.kw = kw;
  launch<P, Gm>(a, st, dband.p, dkd.p, nullptr);
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  if (ms) *ms = harness::median_ms([&] { launch<P, Gm>(a, st, dband.p, dkd.p, nullptr); });
  std::vector<Out> hout(static_cast<std::size_t>(oh) * ow);
  TC_CUDA_CHECK(cudaMemcpy2D(hout.data(), ow * sizeof(Out), dout.p, old * sizeof(Out),
                             ow * sizeof(Out), oh, cudaMemcpyDeviceToHost));
  std::vector<double> r(hout.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = host_load(hout[i]);
  return r;
}

static double ref_at(const std::vector<double>& img, int iw, const std::vector<double>& ker,
                     int kh, int kw, int i, int j) {
  double s = 0;
  for (int u = 0; u < kh; ++u)
    for (int v = 0; v < kw; ++v) s += img[static_cast<std::size_t>(i + u) * iw + j + v] * ker[u * kw + v];
  return s;
}

template <Precision P, class Gm = typename Cfg<P>::Geo>
void check_shapes(std::mt19937_64& rng, const char* tag = "default") {
  const int shapes[][4] = {{67, 93, 3, 5},    {200, 256, 15, 15}, {61, 301, 7, 70},
                           {45, 700, 5, 131}, {333, 37, 300, 4},  {20, 19, 20, 19},
                           {1, 200, 1, 9},    {150, 1, 17, 1},    {129, 257, 55, 55},
                           {90, 530, 25, 9},   {2048, 2048, 9, 9}};
  std::uniform_real_distribution<double> U(0, 1);
  for (auto& s : shapes) {
    const int ih = s[0], iw = s[1], kh = s[2], kw = s[3], oh = ih - kh + 1, ow = iw - kw + 1;
    std::vector<double> img(static_cast<std::size_t>(ih) * iw), ker(kh * kw);
    for (auto& x : img) x = U(rng);
    for (auto& x : ker) x = U(rng);
    auto out = run<P, Gm>(img, ih, iw, ker, kh, kw, nullptr);
    double mape = 0, worst = 0;
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        const double r = ref_at(img, iw, ker, kh, kw, i, j), e = std::fabs(out[i * ow + j] - r) / r;
        mape += e;
        worst = std::max(worst, std::isfinite(e) ? e : 1e30);
      }
    std::printf("check %-8s %-12s %4dx%-4d k %3dx%-3d  MAPE %.3e %%  max rel %.3e\n", pname(P),
                tag, ih, iw, kh, kw, 100 * mape / (oh * ow), worst);
  }
  // NaN / inf locality
  // 2048^2: CTAs walk two row blocks (carried rows), so the fallback runs mid-walk too
  const int ih = 2048, iw = 2048, kh = 7, kw = 7, oh = ih - kh + 1, ow = iw - kw + 1;
  std::vector<double> img(ih * iw), ker(kh * kw);
  for (auto& x : img) x = U(rng);
  for (auto& x : ker) x = U(rng) + 0.1;
  img[0] = NAN;
  img[ih * iw - 1] = INFINITY;
  img[77 * iw + 123] = INFINITY;
  img[150 * iw + 250] = NAN;
  img[1000 * iw + 1000] = NAN;
  img[64 * iw + 700] = INFINITY;
  img[100 * iw] = -INFINITY;
  auto out = run<P, Gm>(img, ih, iw, ker, kh, kw, nullptr);
  int wrong = 0, nonfinite = 0;
  for (int i = 0; i < oh; ++i)
    for (int j = 0; j < ow; ++j) {
      const double r = ref_at(img, iw, ker, kh, kw, i, j), o = out[i * ow + j];
      nonfinite += !std::isfinite(r);
      wrong += std::isnan(r) != std::isnan(o) || std::isinf(r) != std::isinf(o);
    }
  std::printf("nanchk %-8s %-12s non-finite refs %d, mismatches %d\n", pname(P), tag, nonfinite,
              wrong);
}

template <Precision P, class Gm>
void time_geo(const std::vector<double>& img, int n, std::mt19937_64& rng, const char* tag,
              std::vector<int> ks = {3, 15, 25, 35, 55}) {
  std::uniform_real_distribution<double> U(0, 1);
  for (int k : ks) {
    std::vector<double> ker(k * k);
    for (auto& x : ker) x = U(rng);
    float ms = 0;
    auto out = run<P, Gm>(img, n, n, ker, k, k, &ms);
    const int ow = n - k + 1;
    std::uniform_int_distribution<int> I(0, ow - 1);
    double mape = 0;
    std::vector<double> rel(2000);
    for (int s = 0; s < 2000; ++s) {
      const int i = I(rng), j = I(rng);
      const double r = ref_at(img, n, ker, k, k, i, j);
      rel[s] = std::fabs(out[static_cast<std::size_t>(i) * ow + j] - r) / r;
      mape += rel[s];
    }
    std::nth_element(rel.begin(), rel.begin() + 1000, rel.end());
    std::printf("time %-8s %-12s k %2d  %8.4f ms  mean rel %.3e %%  median %.3e %%\n", pname(P),
                tag, k, ms, 100 * mape / 2000, 100 * rel[1000]);
    std::fflush(stdout);
  }
}

// --round4: 3xTF32 for fp32 (X3 = chain
// length), ldmatrix fragments (LDM): Geom<G, WR, WC, MINB, PERM, UNR, LDM, X3, PF>.
using X3g4l1 = Geom<4, 4, 2, 2, false, 1, true, 1>;
using X3g4l2 = Geom<4, 4, 2, 2, false, 1, true, 2>;
using X3g4l8 = Geom<4, 4, 2, 2, false, 1, true, 8>;  // one chain per kernel row
using X3g2l2 = Geom<2, 4, 2, 2, false, 1, true, 2>;
using X3g4l2w = Geom<4, 2, 4, 2, false, 1, true, 2>;
using X3g4l2n = Geom<4, 4, 2, 2, false, 1, true, 2, 0>;  // no B prefetch (fewer registers)
using TfSmall = Geom<4, 4, 2, 3, false, 1, true>;  // tf32 up to area 64 before --round14

static void round4(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  check_shapes<Precision::fp32, X3g4l2>(rng, "x3g4l2");
  check_shapes<Precision::fp32, X3g4l1>(rng, "x3g4l1");
  check_shapes<Precision::fp32, X3g4l8>(rng, "x3g4l8");
  check_shapes<Precision::fp32, Geom<4, 4, 2, 2, false, 1, true>>(rng, "ldm");
  for (auto& x : img) x = U(rng);
  time_geo<Precision::fp32, X3g4l2>(img, n, rng, "x3g4l2");
  time_geo<Precision::fp32, X3g4l1>(img, n, rng, "x3g4l1");
  time_geo<Precision::fp32, X3g4l8>(img, n, rng, "x3g4l8");
  time_geo<Precision::fp32, X3g4l2n>(img, n, rng, "x3g4l2n");
  time_geo<Precision::fp32, X3g2l2>(img, n, rng, "x3g2l2");
  time_geo<Precision::fp32, X3g4l2w>(img, n, rng, "x3g4l2w");
  time_geo<Precision::fp32, Geom<4, 4, 2, 2, false, 1, true>>(img, n, rng, "G4ldm");
  time_geo<Precision::tf32, Geom<8, 4, 2, 2>>(img, n, rng, "round3");
  time_geo<Precision::tf32, Geom<8, 4, 2, 2, false, 1, true>>(img, n, rng, "G8ldm");
  time_geo<Precision::tf32, Geom<8, 2, 4, 2, false, 1, true>>(img, n, rng, "G8w4ldm");
  check_shapes<Precision::fp32, X3g4l2n>(rng, "x3g4l2n");
  check_shapes<Precision::fp32, X3g2l2>(rng, "x3g2l2");
  check_shapes<Precision::fp32, X3g4l2w>(rng, "x3g4l2w");
  check_shapes<Precision::tf32, Geom<8, 2, 4, 2, false, 1, true>>(rng, "G8w4ldm");
}

// --tf32 (tf32 k = 15: 0.116 ms, goal 0.10): where staging and stores of each row block are
// not hidden behind its MMAs (docs/design/tensor-cores-fp.md), and the GeoSmall / Geo
// crossover. "default" is --round4's Geo (B prefetch on).
using TfRE = Geom<8, 4, 2, 2, false, 1, true, 0, 0, true>;
static void tf32_ideas(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  check_shapes<Precision::tf32, TfRE>(rng, "G8ldmRE");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  using R4 = Geom<8, 4, 2, 2, false, 2, true>;
  time_geo<Precision::tf32, R4>(img, n, rng, "default");
  time_geo<Precision::tf32, TfRE>(img, n, rng, "G8ldmRE");
  time_geo<Precision::tf32, Geom<8, 4, 2, 2, false, 4, true>>(img, n, rng, "G8ldmu4");
  time_geo<Precision::tf32, Geom<8, 4, 2, 2, false, 2, true, 0, 0>>(img, n, rng, "G8ldmu2nopf");
  time_geo<Precision::tf32, Geom<8, 8, 1, 2, false, 2, true>>(img, n, rng, "G8x8x1ldmu2");
  time_geo<Precision::tf32, Geom<16, 4, 2, 2, false, 1, true>>(img, n, rng, "G16ldm");
  time_geo<Precision::tf32, Geom<4, 4, 2, 3, false, 2, true>>(img, n, rng, "G4m3ldmu2");
  g_budget = 72 * 1024;  // three CTAs of G = 8 per SM (no carried rows at k = 15; now prepare's
                         // own rule for MINB = 3)
  time_geo<Precision::tf32, Geom<8, 4, 2, 3, false, 2, true>>(img, n, rng, "G8m3ldmu2");
  time_geo<Precision::tf32, Geom<8, 4, 2, 3, false, 1, true>>(img, n, rng, "G8m3ldm");
  g_budget = kSmemBudget;
  time_geo<Precision::tf32, R4>(img, n, rng, "default", {5, 7, 9, 11, 13});
  time_geo<Precision::tf32, TfSmall>(img, n, rng, "small", {5, 7, 9, 11, 13});
  std::fflush(stdout);
  check_shapes<Precision::tf32, Geom<8, 4, 2, 2, false, 4, true>>(rng, "G8ldmu4");
  check_shapes<Precision::tf32, Geom<16, 4, 2, 2, false, 1, true>>(rng, "G16ldm");
  check_shapes<Precision::tf32, Geom<8, 8, 1, 2, false, 2, true>>(rng, "G8x8x1ldmu2");
}

// --round7: output groups per warp G chosen so that the CTA tiles fill the GPU's slots in whole
// rounds (docs/design/tensor-cores-fp.md): at 4096^2, three CTAs per SM, G = 8's
// 64 x 128 tiles take 6 rounds at 86 % of the slots, G = 7's 64 x 112 tiles 6 rounds at 98 %.
static void round7(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  using M7 = Geom<7, 4, 2, 3, false, 2, true>;
  using M6 = Geom<6, 4, 2, 3, false, 2, true>;
  using G7 = Geom<7, 4, 2, 2, false, 2, true, 0, 0>;
  using F3 = Geom<3, 4, 2, 2>;
  using F5 = Geom<5, 4, 2, 2>;
  check_shapes<Precision::tf32, M7>(rng, "mid G7");
  check_shapes<Precision::tf32, G7>(rng, "geo G7");
  check_shapes<Precision::fp32, F3>(rng, "fp32 G3");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {3, 9, 15, 21, 25, 35};
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid G8", ks);
  time_geo<Precision::tf32, M7>(img, n, rng, "mid G7", ks);
  time_geo<Precision::tf32, M6>(img, n, rng, "mid G6", ks);
  time_geo<Precision::tf32, Cfg<Precision::tf32>::Geo>(img, n, rng, "geo G8", {25, 35, 55});
  time_geo<Precision::tf32, G7>(img, n, rng, "geo G7", {25, 35, 55});
  time_geo<Precision::fp32, Cfg<Precision::fp32>::Geo>(img, n, rng, "fp32 G4", {15, 25});
  time_geo<Precision::fp32, F3>(img, n, rng, "fp32 G3", {15, 25});
  time_geo<Precision::fp32, F5>(img, n, rng, "fp32 G5", {15, 25});
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid G8", {15});
  time_geo<Precision::tf32, M7>(img, n, rng, "mid G7", {15});
}

// --round8: fp32 / fp64 on DMMA with more output groups per warp (--round7: fp32 G = 5 beat G = 4
// by 8-10 % at k = 15 / 25).
template <int G, Precision P = Precision::fp32>
void dmma_g(std::mt19937_64& rng, std::vector<double>& img, int n, const char* tag,
            std::vector<int> ks = {3, 9, 15, 25, 35, 55}) {
  time_geo<P, Geom<G, 4, 2, 2>>(img, n, rng, tag, ks);
}
static void round8(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  check_shapes<Precision::fp32, Geom<5, 4, 2, 2>>(rng, "fp32 G5");
  check_shapes<Precision::fp32, Geom<6, 4, 2, 2>>(rng, "fp32 G6");
  check_shapes<Precision::fp64, Geom<5, 4, 2, 2>>(rng, "fp64 G5");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  dmma_g<4>(rng, img, n, "fp32 G4");
  dmma_g<5>(rng, img, n, "fp32 G5");
  dmma_g<6>(rng, img, n, "fp32 G6");
  dmma_g<7>(rng, img, n, "fp32 G7", {15, 25});
  dmma_g<8>(rng, img, n, "fp32 G8", {15, 25});
  time_geo<Precision::fp32, Geom<5, 2, 4, 2>>(img, n, rng, "fp32 G5 2x4", {15, 25});
  time_geo<Precision::fp32, Geom<6, 8, 1, 2>>(img, n, rng, "fp32 G6 8x1", {15, 25});
  time_geo<Precision::fp32, Geom<5, 4, 2, 2, false, 2>>(img, n, rng, "fp32 G5 u2", {15, 25});
  time_geo<Precision::fp32, Geom<5, 4, 2, 2, false, 1, false, 0, 0>>(img, n, rng, "fp32 G5 nopf",
                                                                    {15, 25});
  dmma_g<2, Precision::fp64>(rng, img, n, "fp64 G2", {3, 15, 25, 35});
  dmma_g<4, Precision::fp64>(rng, img, n, "fp64 G4", {3, 15, 25, 35});
  dmma_g<5, Precision::fp64>(rng, img, n, "fp64 G5", {3, 15, 25, 35});
  dmma_g<6, Precision::fp64>(rng, img, n, "fp64 G6", {3, 15, 25, 35});
}

// --round9: --round8's finalists without the B prefetch (PF = 0), every k.
template <int G, Precision P = Precision::fp32, int PF = 0>
void dmma_np(std::mt19937_64& rng, std::vector<double>& img, int n, const char* tag,
             std::vector<int> ks = {3, 9, 15, 25, 35, 55}) {
  time_geo<P, Geom<G, 4, 2, 2, false, 1, false, 0, PF>>(img, n, rng, tag, ks);
}
static void round9(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  check_shapes<Precision::fp32, Geom<6, 4, 2, 2, false, 1, false, 0, 0>>(rng, "fp32 G6 nopf");
  check_shapes<Precision::fp64, Geom<6, 4, 2, 2>>(rng, "fp64 G6");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  dmma_np<5>(rng, img, n, "fp32 G5 nopf");
  dmma_np<6>(rng, img, n, "fp32 G6 nopf");
  dmma_np<7>(rng, img, n, "fp32 G7 nopf");
  dmma_np<4, Precision::fp32, -1>(rng, img, n, "fp32 G4", {15, 25});
  dmma_np<5, Precision::fp64>(rng, img, n, "fp64 G5 nopf", {3, 9, 15, 25, 35});
  dmma_np<6, Precision::fp64>(rng, img, n, "fp64 G6 nopf", {3, 9, 15, 25, 35});
  dmma_np<6, Precision::fp64, -1>(rng, img, n, "fp64 G6", {3, 9, 15, 25, 35});
  dmma_np<2, Precision::fp64, -1>(rng, img, n, "fp64 G2", {15, 25});
}

// --round10: tf32 GeoMid without the B prefetch (ptxas spills ~24 bytes at 80 registers), and
// the staging loop with a fixed thread -> chunk map (StageMap; compare the default mode's times
// with the binary of the commit before).
static void round10(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  using M0 = Geom<8, 4, 2, 3, false, 2, true, 0, 0>;
  check_shapes<Precision::tf32, M0>(rng, "mid nopf");
  g_unaligned = true;
  check_shapes<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(rng, "mid unalgn");
  check_shapes<Precision::fp32, Cfg<Precision::fp32>::Geo>(rng, "fp32 unalgn");
  check_shapes<Precision::bf16, Cfg<Precision::bf16>::Geo>(rng, "bf16 unalgn");
  g_unaligned = false;
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", {9, 15, 21, 25});
  time_geo<Precision::tf32, M0>(img, n, rng, "mid nopf", {9, 15, 21, 25});
}

// --round11: GeoMid without prefetch, other warp layouts and unrolls (tf32, three CTAs per SM).
static void round11(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  check_shapes<Precision::tf32, Geom<8, 2, 4, 3, false, 2, true, 0, 0>>(rng, "mid 2x4");
  check_shapes<Precision::tf32, Geom<8, 8, 1, 3, false, 2, true, 0, 0>>(rng, "mid 8x1");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {9, 13, 15, 17, 21, 25};
  time_geo<Precision::tf32, Geom<8, 4, 2, 3, false, 2, true, 0, 0>>(img, n, rng, "mid nopf", ks);
  time_geo<Precision::tf32, Geom<8, 2, 4, 3, false, 2, true, 0, 0>>(img, n, rng, "mid 2x4", ks);
  time_geo<Precision::tf32, Geom<8, 8, 1, 3, false, 2, true, 0, 0>>(img, n, rng, "mid 8x1", ks);
  time_geo<Precision::tf32, Geom<7, 4, 2, 3, false, 2, true, 0, 0>>(img, n, rng, "mid G7", ks);
  time_geo<Precision::tf32, Geom<8, 4, 2, 3, false, 1, true, 0, 0>>(img, n, rng, "mid u1", ks);
  time_geo<Precision::tf32, Geom<8, 4, 2, 3, false, 4, true, 0, 0>>(img, n, rng, "mid u4", ks);
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid pf", ks);
}

// --round12: what misaligned output rows cost (rows of 4096 - k + 1 floats start at 8 or 16
// bytes into a 32-byte sector unless k = 1 mod 8): the same kernels writing rows padded to 8.
static void round12(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  for (auto& x : img) x = U(rng);
  using M0 = Geom<8, 4, 2, 3, false, 2, true, 0, 0>;
  const std::vector<int> ks = {13, 15, 17, 21, 25};
  for (int pad = 0; pad < 2; ++pad) {
    g_pad_out = pad;
    time_geo<Precision::tf32, M0>(img, n, rng, pad ? "mid nopf pad" : "mid nopf", ks);
    time_geo<Precision::fp32, Cfg<Precision::fp32>::Geo>(img, n, rng, pad ? "fp32 pad" : "fp32", {15, 25});
    time_geo<Precision::fp16fp32, Cfg<Precision::fp16fp32>::Geo>(img, n, rng, pad ? "f16f32 pad" : "f16f32", {15, 25});
  }
  g_pad_out = true;
  check_shapes<Precision::tf32, M0>(rng, "mid nopf pad");
  g_pad_out = false;
}

// --round13: Geom SO (outputs through per-warp shared-memory buffers, one store per row).
static void round13(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  using M0 = Geom<8, 4, 2, 3, false, 2, true, 0, 0>;
  using MS = Geom<8, 4, 2, 3, false, 2, true, 0, 0, false, true>;
  using SS = Geom<4, 4, 2, 3, false, 1, true, 0, -1, false, true>;
  using GS = Geom<8, 4, 2, 2, false, 2, true, 0, 0, false, true>;
  using HS = Geom<8, 4, 2, 2, false, 1, false, 0, -1, false, true>;
  check_shapes<Precision::tf32, MS>(rng, "mid SO");
  check_shapes<Precision::tf32, SS>(rng, "small SO");
  check_shapes<Precision::fp16fp32, HS>(rng, "f16f32 SO");
  check_shapes<Precision::fp16, HS>(rng, "fp16 SO");
  g_unaligned = true;
  check_shapes<Precision::tf32, MS>(rng, "mid SO unal");
  g_unaligned = false;
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {9, 13, 15, 17, 21, 25};
  time_geo<Precision::tf32, M0>(img, n, rng, "mid nopf", ks);
  time_geo<Precision::tf32, MS>(img, n, rng, "mid SO", ks);
  time_geo<Precision::tf32, TfSmall>(img, n, rng, "small", {3, 5, 7});
  time_geo<Precision::tf32, SS>(img, n, rng, "small SO", {3, 5, 7});
  time_geo<Precision::tf32, Cfg<Precision::tf32>::Geo>(img, n, rng, "geo", {27, 35, 55});
  time_geo<Precision::tf32, GS>(img, n, rng, "geo SO", {27, 35, 55});
  time_geo<Precision::fp16fp32, Cfg<Precision::fp16fp32>::Geo>(img, n, rng, "f16f32", {3, 15, 25, 35, 55});
  time_geo<Precision::fp16fp32, HS>(img, n, rng, "f16f32 SO", {3, 15, 25, 35, 55});
  time_geo<Precision::tf32, MS>(img, n, rng, "mid SO", {15});
  time_geo<Precision::tf32, M0>(img, n, rng, "mid nopf", {15});
}

// --round14: tf32 tiers after SO: which of Geo (SO), GeoMid and GeoSmall per kernel size.
static void round14(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {3, 5, 7, 9, 11, 13, 15, 19, 23, 25, 27, 29};
  time_geo<Precision::tf32, Cfg<Precision::tf32>::Geo>(img, n, rng, "geo", ks);
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", ks);
  time_geo<Precision::tf32, TfSmall>(img, n, rng, "small", {3, 5, 7, 9});
}

// --round15: tf32 at k = 9..25 with four CTAs per SM (64 registers).
static void round15(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  using Q1 = Geom<8, 4, 2, 4, false, 1, true, 0, 0>;
  using Q2 = Geom<8, 4, 2, 4, false, 2, true, 0, 0>;
  using Q4 = Geom<4, 4, 2, 4, false, 2, true, 0, 0>;
  check_shapes<Precision::tf32, Q1>(rng, "quad u1");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {9, 13, 15, 19, 25};
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", ks);
  time_geo<Precision::tf32, Q1>(img, n, rng, "quad u1", ks);
  time_geo<Precision::tf32, Q2>(img, n, rng, "quad u2", ks);
  time_geo<Precision::tf32, Q4>(img, n, rng, "quad G4", ks);
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", {15});
}

// --round16: GeoMid with Geom RO (row-wise stores through the free image ring).
static void round16(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  using MR = Geom<8, 4, 2, 3, false, 2, true, 0, 0, false, false, true>;
  check_shapes<Precision::tf32, MR>(rng, "mid RO");
  g_unaligned = true;
  check_shapes<Precision::tf32, MR>(rng, "mid RO unal");
  g_unaligned = false;
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {9, 13, 15, 17, 19, 25};
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", ks);
  time_geo<Precision::tf32, MR>(img, n, rng, "mid RO", ks);
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", {15});
  time_geo<Precision::tf32, MR>(img, n, rng, "mid RO", {15});
}

// --round17: GeoMid with the band table in shared memory (Geom BS).
static void round17(std::mt19937_64& rng, std::vector<double>& img, int n) {
  std::uniform_real_distribution<double> U(0, 1);
  using MB = Geom<8, 4, 2, 3, false, 2, true, 0, 0, false, false, true, true>;
  check_shapes<Precision::tf32, MB>(rng, "mid BS");
  std::fflush(stdout);
  for (auto& x : img) x = U(rng);
  const std::vector<int> ks = {9, 13, 15, 19, 25};
  for (int rep = 0; rep < 2; ++rep) {
    time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid", ks);
    time_geo<Precision::tf32, MB>(img, n, rng, "mid BS", ks);
  }
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  std::mt19937_64 rng(1995);
  const int n = 4096;
  std::vector<double> img(static_cast<std::size_t>(n) * n);
  std::uniform_real_distribution<double> U(0, 1);
  if (mode == "--round4") {
    round4(rng, img, n);
    return 0;
  }
  if (mode == "--round17") {
    round17(rng, img, n);
    return 0;
  }
  if (mode == "--round16") {
    round16(rng, img, n);
    return 0;
  }
  if (mode == "--round15") {
    round15(rng, img, n);
    return 0;
  }
  if (mode == "--round14") {
    round14(rng, img, n);
    return 0;
  }
  if (mode == "--round13") {
    round13(rng, img, n);
    return 0;
  }
  if (mode == "--round12") {
    round12(rng, img, n);
    return 0;
  }
  if (mode == "--round11") {
    round11(rng, img, n);
    return 0;
  }
  if (mode == "--round10") {
    round10(rng, img, n);
    return 0;
  }
  if (mode == "--round9") {
    round9(rng, img, n);
    return 0;
  }
  if (mode == "--round8") {
    round8(rng, img, n);
    return 0;
  }
  if (mode == "--round7") {
    round7(rng, img, n);
    return 0;
  }
  if (mode == "--tf32") {
    tf32_ideas(rng, img, n);
    return 0;
  }
  if (mode != "--one") {
    check_shapes<Precision::fp16>(rng);
    check_shapes<Precision::fp16fp32>(rng);
    check_shapes<Precision::bf16>(rng);
    check_shapes<Precision::tf32>(rng);
    check_shapes<Precision::tf32, TfSmall>(rng, "small");
    check_shapes<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(rng, "mid");
    check_shapes<Precision::fp32>(rng);
    check_shapes<Precision::fp64>(rng);
  }
  if (mode == "--quick") return 0;
  for (auto& x : img) x = U(rng);
  if (argc > 3 && mode == "--one") {  // one launch of a default geometry (ncu)
    const int k = std::stoi(argv[3]);
    std::vector<double> ker(k * k, 0.5);
    const std::string p = argv[2];
    if (p == "fp16fp32") run<Precision::fp16fp32, Cfg<Precision::fp16fp32>::Geo>(img, n, n, ker, k, k, nullptr);
    if (p == "fp32") run<Precision::fp32, Cfg<Precision::fp32>::Geo>(img, n, n, ker, k, k, nullptr);
    if (p == "tf32") run<Precision::tf32, Cfg<Precision::tf32>::Geo>(img, n, n, ker, k, k, nullptr);
    if (p == "tf32mid") run<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, n, ker, k, k, nullptr);
    return 0;
  }
  time_geo<Precision::fp16fp32, Cfg<Precision::fp16fp32>::Geo>(img, n, rng, "default");
  time_geo<Precision::tf32, Cfg<Precision::tf32>::Geo>(img, n, rng, "default");
  time_geo<Precision::tf32, TfSmall>(img, n, rng, "small");
  time_geo<Precision::tf32, Cfg<Precision::tf32>::GeoMid>(img, n, rng, "mid");
  time_geo<Precision::fp32, Cfg<Precision::fp32>::Geo>(img, n, rng, "default");
  time_geo<Precision::fp64, Cfg<Precision::fp64>::Geo>(img, n, rng, "default");
  return 0;
}
