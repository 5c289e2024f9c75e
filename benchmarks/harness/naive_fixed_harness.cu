// Harness for csrc/cuda/methods/naive/naive_fixed.cuh (naive_shmem's fp32 variant with the kernel's shape
// compiled in) at 4096^2, U[0, 1) image and kernel, median of 20 with CUDA events, against a
// float64 direct sum on 2000 sampled outputs (the last rows and columns among them): mean,
// median and largest relative error in %. Results: docs/design/paplinski.md.
// Build: nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks/harness benchmarks/harness/naive_fixed_harness.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cuda/methods/naive/naive_fixed.cuh"
#include "harness.cuh"

using namespace tc::cuda;

// G: the package's geometry (nfix::Geo<K>) or a variant of it
template <int K, class G = nfix::Geo<K>>
void run(const std::vector<float>& img, int n, std::mt19937_64& rng, const float* d_in,
         float* d_out, int map = -1) {
  std::uniform_real_distribution<double> U(0, 1);
  nfix::Taps<K, G::WINO> t;
  std::vector<double> kd(K * K);
  for (auto& x : kd) x = static_cast<float>(U(rng));
  bool wino_ok = false;
  nfix::fill_taps(t, kd.data(), wino_ok);
  const int o = n - K + 1;
  auto kern = nfix::fixed_kernel<K, true, G>;
  TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(G::smem_bytes)));
  int per_sm = 0, sms = 0;
  TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, G::NT, G::smem_bytes));
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  nfix::Args a{d_in, n, 0, n, n, d_out, o, 0, o, o, (o + G::TW - 1) / G::TW, 0, 0, 0};
  const int grid = nfix::launch_grid<G>(a, 1, per_sm * sms, map);
  const bool per_strip = a.per_strip > 0;
  auto launch = [&] { kern<<<grid, G::NT, G::smem_bytes>>>(a, t); };
  TC_CUDA_CHECK(cudaMemset(d_out, 0xff, std::size_t(o) * o * 4));
  launch();
  TC_CUDA_CHECK(cudaGetLastError());
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  const float ms = harness::median_ms(launch);
  std::vector<float> h(static_cast<std::size_t>(o) * o);
  TC_CUDA_CHECK(cudaMemcpy(h.data(), d_out, h.size() * 4, cudaMemcpyDeviceToHost));
  std::uniform_int_distribution<int> I(0, o - 1);
  std::vector<double> rel(2000);
  double mean = 0, worst = 0;
  for (int s = 0; s < 2000; ++s) {
    const int y = s < 40 ? o - 1 - s % 20 : I(rng), x = s < 20 ? o - 1 - s : I(rng);
    double sum = 0;
    for (int u = 0; u < K; ++u)
      for (int v = 0; v < K; ++v) sum += double(img[std::size_t(y + u) * n + x + v]) * kd[u * K + v];
    rel[s] = std::fabs(h[std::size_t(y) * o + x] - sum) / sum;
    mean += rel[s];
    worst = std::max(worst, rel[s]);
  }
  std::nth_element(rel.begin(), rel.begin() + 1000, rel.end());
  std::printf("n %5d k %2d %s%s%s R %d TX %2d TY %2d RC %d (%d CTAs/SM, %zu B)  %8.4f ms  mean rel %.2e %%"
              "  median %.2e %%  max %.1e %%\n", n, K, G::LOOP ? "loop    " : "unrolled",
              G::WINO ? " winograd" : "", per_strip ? " per-strip" : "", G::R, G::TX,
              G::TY, G::RC, per_sm, G::smem_bytes, ms, 100 * mean / 2000, 100 * rel[1000], 100 * worst);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 4096;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> U(0, 1);
  std::vector<float> img(std::size_t(n) * n);
  for (auto& x : img) x = U(rng);
  harness::Dev din(img.size() * 4), dout(img.size() * 4);
  TC_CUDA_CHECK(cudaMemcpy(din.p, img.data(), img.size() * 4, cudaMemcpyHostToDevice));
  const float* i = static_cast<const float*>(din.p);
  float* o = static_cast<float*>(dout.p);
  if (argc > 2 && argv[2][0] == 'w') {  // Winograd F(2, 3) down the columns against direct
    using W9 = nfix::Geo<9, 2, true, 8, 32, 3, true>;
    using D15 = nfix::Geo<15, 2, true, 8, 32, 3, false>;
    if (argv[2][1] == '1') {  // one of each at k = 15 (for ncu)
      run<15, D15>(img, n, rng, i, o);
      run<15>(img, n, rng, i, o);
      return 0;
    }
    for (int rep = 0; rep < 3; ++rep) {
      run<9>(img, n, rng, i, o);
      run<9, W9>(img, n, rng, i, o);
      run<15, D15>(img, n, rng, i, o);
      run<15>(img, n, rng, i, o);
    }
    return 0;
  }
  if (argc > 2) {  // the CTA work maps: contiguous ranges against a share of one strip each
    // (run 16 predates launch_grid's cap of a strip's shares at its steps: no change at 4096^2+)
    for (int ps : {0, 1, 0, 1}) {
      run<3>(img, n, rng, i, o, ps);
      run<9>(img, n, rng, i, o, ps);
      run<15>(img, n, rng, i, o, ps);
    }
    return 0;
  }
  run<3>(img, n, rng, i, o);
  run<5>(img, n, rng, i, o);
  run<7>(img, n, rng, i, o);
  run<9>(img, n, rng, i, o);
  run<11>(img, n, rng, i, o);
  run<13>(img, n, rng, i, o);
  run<15>(img, n, rng, i, o);
  run<17>(img, n, rng, i, o);
  // variants at k = 15: one row a thread; unrolled kernel rows; runs of 5
  run<15, nfix::Geo<15, 1>>(img, n, rng, i, o);
  run<15, nfix::Geo<15, 2, false>>(img, n, rng, i, o);
  run<15, nfix::Geo<15, 2, true, 8, 32, 5>>(img, n, rng, i, o);
  return 0;
}
