// Harness for csrc/cuda/naive_fixed.cuh (naive_shmem's fp32 variant with the kernel's shape
// compiled in) at 4096^2, U[0, 1) image and kernel (median of 20, CUDA events): geometries R x TX
// x TY and CTAs per SM, against a float64 direct sum on 2000 sampled outputs (mean / median
// relative error in %). Logs: results/naive_fixed_harness_h100.txt.
// Build: nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks benchmarks/naive_fixed_harness.cu
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/naive_fixed.cuh"
#include "harness.cuh"

using namespace tc::cuda;

template <int K, int R = nfix::kR, int TX = nfix::kTX, int TY = nfix::kTY,
          int MINB = nfix::min_blocks<K>()>
void run(const std::vector<float>& img, int n, std::mt19937_64& rng, const float* d_in,
         float* d_out) {
  std::uniform_real_distribution<double> U(0, 1);
  nfix::Taps<K> t;
  std::vector<double> kd(K * K);
  for (int i = 0; i < K * K; ++i) {
    t.k[i] = static_cast<float>(U(rng));
    kd[i] = t.k[i];
  }
  const int o = n - K + 1;
  const dim3 grid((o + TX - 1) / TX, (o + TY * R - 1) / (TY * R)), block(TX, TY);
  auto launch = [&] {
    nfix::fixed_kernel<K, R, TX, TY, MINB><<<grid, block>>>(d_in, n, n, n, d_out, o, o, o, 0, 0, t);
  };
  launch();
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  const float ms = harness::median_ms(launch);
  std::vector<float> h(static_cast<std::size_t>(o) * o);
  TC_CUDA_CHECK(cudaMemcpy(h.data(), d_out, h.size() * 4, cudaMemcpyDeviceToHost));
  std::uniform_int_distribution<int> I(0, o - 1);
  std::vector<double> rel(2000);
  double mean = 0;
  for (auto& e : rel) {
    const int y = I(rng), x = I(rng);
    double s = 0;
    for (int a = 0; a < K; ++a)
      for (int b = 0; b < K; ++b) s += double(img[std::size_t(y + a) * n + x + b]) * kd[a * K + b];
    e = std::fabs(h[std::size_t(y) * o + x] - s) / s;
    mean += e;
  }
  std::nth_element(rel.begin(), rel.begin() + 1000, rel.end());
  std::printf("k %2d R %2d TX %3d TY %d MINB %d  %8.4f ms  mean rel %.2e %%  median %.2e %%\n",
              K, R, TX, TY, MINB, ms, 100 * mean / 2000, 100 * rel[1000]);
  std::fflush(stdout);
}

int main() {
  const int n = 4096;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> U(0, 1);
  std::vector<float> img(std::size_t(n) * n);
  for (auto& x : img) x = U(rng);
  harness::Dev din(img.size() * 4), dout(img.size() * 4);
  TC_CUDA_CHECK(cudaMemcpy(din.p, img.data(), img.size() * 4, cudaMemcpyHostToDevice));
  const float* i = static_cast<const float*>(din.p);
  float* o = static_cast<float*>(dout.p);
  // the package's geometry (R = 16, 128 x 2 threads; 3 CTAs per SM up to k = 9) at every size
  run<3>(img, n, rng, i, o);
  run<5>(img, n, rng, i, o);
  run<7>(img, n, rng, i, o);
  run<9>(img, n, rng, i, o);
  run<11>(img, n, rng, i, o);
  run<13>(img, n, rng, i, o);
  run<15>(img, n, rng, i, o);
  run<17>(img, n, rng, i, o);
  // other geometries at k = 15
  run<15, 16, 128, 2, 3>(img, n, rng, i, o);
  run<15, 16, 64, 4, 2>(img, n, rng, i, o);
  run<15, 8, 128, 2, 4>(img, n, rng, i, o);
  run<15, 12, 128, 2, 3>(img, n, rng, i, o);
  run<15, 24, 64, 2, 2>(img, n, rng, i, o);
  run<15, 32, 64, 2, 2>(img, n, rng, i, o);
  return 0;
}
