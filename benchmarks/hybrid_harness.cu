// Harness: toeplitz_tc on the tensor cores and naive_shmem's fixed-shape FFMA kernel on the
// CUDA cores at once, each on its own share of the output columns (two streams, so the SMs hold
// CTAs of both: DMMA / HMMA leave the FMA pipes idle, the FFMA kernel leaves the tensor pipes
// idle). 4096^2, U[0, 1) image and kernel, median of 20 (CUDA events), every configuration
// checked against a float64 direct sum on 2000 sampled outputs and on every output of the
// columns around the split.
// Build: nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks benchmarks/hybrid_harness.cu
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/naive_fixed.cuh"
#include "cuda/paplinski/toeplitz_tc.cuh"
#include "harness.cuh"

using namespace tc;
using namespace tc::cuda;
using namespace tc::cuda::tz;

static int g_sms = 132;

// toeplitz_tc on output columns [0, cs) with at most `ctas` CTAs (0: the package's launch).
template <Precision P, class Gm>
void launch_tc(Args a, const Setup<P, Gm>& st, const void* band, const void* kd, int ctas,
               cudaStream_t s) {
  if (ctas == 0) return launch<P, Gm>(a, st, band, kd, s);
  fill_args(a, st, band, kd);
  const int nrb = (a.oh + Gm::TH - 1) / Gm::TH;
  int per = std::max(1, ctas / a.ncb);  // CTAs per strip
  a.nph = (nrb + per - 1) / per;
  a.carry = st.carry && a.nph > 1;
  const int n = a.ncb * ((nrb + a.nph - 1) / a.nph);
  auto go = [&](auto kern) {
    TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(st.smem)));
    kern<<<n, kWarps * 32, st.smem, s>>>(a);
    TC_CUDA_LAUNCH_CHECK();
  };
  switch (st.db) {
    case 3: return go(toeplitz_kernel<P, Gm, 3>);
    case 4: return go(toeplitz_kernel<P, Gm, 4>);
    default: throw std::runtime_error("db");
  }
}

template <int K>
void launch_ffma(const float* in, int n, float* out, int o, int cs, const nfix::Taps<K>& t,
                 int ctas, cudaStream_t s) {
  constexpr int TH = nfix::kTY * nfix::kR;
  const int w = o - cs;  // output columns of this part
  const int gx = (w + nfix::kTX - 1) / nfix::kTX;
  int gy = (o + TH - 1) / TH;
  if (ctas > 0) gy = std::max(1, std::min(gy, ctas / gx));
  nfix::fixed_kernel<K, nfix::kR, nfix::kTX, nfix::kTY, 2><<<dim3(gx, gy), dim3(nfix::kTX, nfix::kTY), 0, s>>>(
      in + cs, n, n, n - cs, out + cs, o, o, w, 0, 0, t);
  TC_CUDA_LAUNCH_CHECK();
}

struct Ctx {
  int n;
  std::vector<float> img;
  const float* din;
  float* dout;
  cudaStream_t s1, s2;
};

template <Precision P> struct GeoOf { using T = typename Cfg<P>::Geo; };
template <> struct GeoOf<Precision::tf32> { using T = Cfg<Precision::tf32>::GeoMid; };

template <Precision P, int K>
void sweep(Ctx& c, std::mt19937_64& rng, const char* pn, std::vector<double> fs) {
  using Gm = typename GeoOf<P>::T;
  std::uniform_real_distribution<double> U(0, 1);
  std::vector<double> ker(K * K);
  nfix::Taps<K> t;
  for (int i = 0; i < K * K; ++i) {
    t.k[i] = static_cast<float>(U(rng));
    ker[i] = t.k[i];
  }
  auto st = prepare<P, Gm>(ker.data(), K, K);
  harness::Dev dband(st.band.size() * sizeof(st.band[0])), dkd(st.kd.size() * sizeof(st.kd[0]));
  TC_CUDA_CHECK(cudaMemcpy(dband.p, st.band.data(), st.band.size() * sizeof(st.band[0]),
                           cudaMemcpyHostToDevice));
  TC_CUDA_CHECK(cudaMemcpy(dkd.p, st.kd.data(), st.kd.size() * sizeof(st.kd[0]),
                           cudaMemcpyHostToDevice));
  const int n = c.n, o = n - K + 1;
  auto args = [&](int cs) {
    Args a{};
    a.in = c.din;
    a.in_ld = n;
    a.out = c.dout;
    a.out_ld = o;
    a.ih = n;
    a.iw = cs + K - 1;
    a.oh = o;
    a.ow = cs;
    a.kh = K;
    a.kw = K;
    return a;
  };
  auto check = [&](int cs, const char* tag, float ms) {
    std::vector<float> h(static_cast<std::size_t>(o) * o);
    TC_CUDA_CHECK(cudaMemcpy(h.data(), c.dout, h.size() * 4, cudaMemcpyDeviceToHost));
    auto ref = [&](int y, int x) {
      double s = 0;
      for (int u = 0; u < K; ++u)
        for (int v = 0; v < K; ++v) s += double(c.img[std::size_t(y + u) * n + x + v]) * ker[u * K + v];
      return s;
    };
    std::uniform_int_distribution<int> I(0, o - 1);
    std::vector<double> rel(2000);
    for (auto& e : rel) {
      const int y = I(rng), x = I(rng);
      e = std::fabs(h[std::size_t(y) * o + x] - ref(y, x)) / ref(y, x);
    }
    double worst = 0;  // every output of the columns around the split, every 7th row
    for (int y = 0; y < o; y += 7)
      for (int x = std::max(0, cs - 3); x < std::min(o, cs + 3); ++x) {
        const double e = std::fabs(h[std::size_t(y) * o + x] - ref(y, x)) / ref(y, x);
        worst = std::max(worst, std::isfinite(e) ? e : 1e30);
      }
    std::nth_element(rel.begin(), rel.begin() + 1000, rel.end());
    std::printf("%-5s k %2d %-28s cs %4d  %8.4f ms  median rel %.2e %%  split max %.2e %%\n", pn,
                K, tag, cs, ms, 100 * rel[1000], 100 * worst);
    std::fflush(stdout);
  };
  auto run = [&](int cs, int tc_ctas, int f_ctas, bool ffma_first, const char* tag) {
    TC_CUDA_CHECK(cudaMemset(c.dout, 0xff, static_cast<std::size_t>(o) * o * 4));
    auto go = [&] {
      if (ffma_first && cs < o) launch_ffma<K>(c.din, n, c.dout, o, cs, t, f_ctas, c.s2);
      if (cs > 0) launch_tc<P, Gm>(args(cs), st, dband.p, dkd.p, tc_ctas, c.s1);
      if (!ffma_first && cs < o) launch_ffma<K>(c.din, n, c.dout, o, cs, t, f_ctas, c.s2);
    };
    go();
    TC_CUDA_CHECK(cudaDeviceSynchronize());
    check(cs, tag, 0.f);
    const float ms = harness::median_ms(go);
    std::printf("%-5s k %2d %-28s cs %4d  %8.4f ms\n", pn, K, tag, cs, ms);
    std::fflush(stdout);
  };
  run(o, 0, 0, false, "tc alone");
  run(0, 0, 0, false, "ffma alone");
  run(0, 0, 2 * g_sms, false, "ffma alone 2/SM grid");
  run(o, g_sms, 0, false, "tc alone 1/SM grid");
  for (double f : fs) {
    int cs = static_cast<int>(f * o) / Gm::TW * Gm::TW;
    run(cs, 0, 2 * g_sms, true, "ffma 2/SM first, tc");
    run(cs, 0, g_sms, true, "ffma 1/SM first, tc");
    run(cs, g_sms, 0, false, "tc 1/SM first, ffma");
    run(cs, 2 * g_sms, 0, false, "tc 2/SM first, ffma");
  }
}

int main(int argc, char** argv) {
  const int n = 4096;
  int dev = 0;
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  TC_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, %d SMs\n", prop.name, g_sms);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> U(0, 1);
  Ctx c;
  c.n = n;
  c.img.resize(std::size_t(n) * n);
  for (auto& x : c.img) x = U(rng);
  harness::Dev din(c.img.size() * 4), dout(c.img.size() * 4);
  TC_CUDA_CHECK(cudaMemcpy(din.p, c.img.data(), c.img.size() * 4, cudaMemcpyHostToDevice));
  c.din = static_cast<const float*>(din.p);
  c.dout = static_cast<float*>(dout.p);
  TC_CUDA_CHECK(cudaStreamCreate(&c.s1));
  TC_CUDA_CHECK(cudaStreamCreate(&c.s2));
  const std::string mode = argc > 1 ? argv[1] : "";
  sweep<Precision::fp32, 15>(c, rng, "fp32", {0.4, 0.5, 0.6, 0.7});
  sweep<Precision::tf32, 15>(c, rng, "tf32", {0.6, 0.7, 0.8, 0.9});
  sweep<Precision::fp32, 25>(c, rng, "fp32", {0.4, 0.5, 0.6, 0.7});
  return 0;
}
