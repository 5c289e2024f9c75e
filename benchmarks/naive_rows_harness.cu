// Harness for csrc/cuda/naive_rows.cuh (fp32 direct convolution along rows) at 4096^2, U[0, 1)
// image and kernel (median of 20, CUDA events), against naive_fixed.cuh's column kernel in the
// same run and a float64 direct sum on 2000 sampled outputs (mean / median relative error, %).
// Build: nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc -Ibenchmarks benchmarks/naive_rows_harness.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cuda/naive_fixed.cuh"
#include "cuda/naive_rows.cuh"
#include "cuda/naive_rows_old.cuh"
#include "harness.cuh"

using namespace tc::cuda;

// argv[1]: run only the config of this index (for ncu); else all
static int g_only = -1, g_idx = 0;
static bool skip() { return g_only >= 0 && g_idx++ != g_only; }

template <int K>
void check(const char* name, float ms, const std::vector<float>& img, const std::vector<double>& kd,
           int n, const float* d_out, std::mt19937_64& rng) {
  const int o = n - K + 1;
  std::vector<float> h(static_cast<std::size_t>(o) * o);
  TC_CUDA_CHECK(cudaMemcpy(h.data(), d_out, h.size() * 4, cudaMemcpyDeviceToHost));
  std::uniform_int_distribution<int> I(0, o - 1);
  std::vector<double> rel(2000);
  double mean = 0, worst = 0;
  for (int s = 0; s < 2000; ++s) {
    // the last rows and columns too: tiles cut there
    const int y = s < 40 ? o - 1 - s % 20 : I(rng), x = s < 20 ? o - 1 - s : I(rng);
    double sum = 0;
    for (int a = 0; a < K; ++a)
      for (int b = 0; b < K; ++b) sum += double(img[std::size_t(y + a) * n + x + b]) * kd[a * K + b];
    rel[s] = std::fabs(h[std::size_t(y) * o + x] - sum) / sum;
    mean += rel[s];
    worst = std::max(worst, rel[s]);
  }
  std::nth_element(rel.begin(), rel.begin() + 1000, rel.end());
  std::printf("k %2d %-34s %8.4f ms  mean rel %.2e %%  median %.2e %%  max %.1e %%\n", K, name, ms,
              100 * mean / 2000, 100 * rel[1000], 100 * worst);
  std::fflush(stdout);
}

template <int K, int C, int TX, int TY, int R, int RC, int MINB, bool LOOP = false, bool OLD = false>
void rows(const std::vector<float>& img, const std::vector<double>& kd, const void* unused,
          int n, const float* d_in, float* d_out, std::mt19937_64& rng) {
  (void)unused;
  if (skip()) return;
  using S = nrows::Shape<K, C, TX, TY, R>;
  nrows::Taps<K> t;
  for (int i = 0; i < K * K; ++i) t.k[i] = static_cast<float>(kd[i]);
  const int o = n - K + 1;
  const int strips = (o + S::TW - 1) / S::TW, tiles = strips * ((o + S::TH - 1) / S::TH);
  auto kern = OLD ? nrows_old::rows_kernel<K, C, TX, TY, R, RC, MINB, LOOP> : nrows::rows_kernel<K, C, TX, TY, R, RC, MINB, LOOP>;
  TC_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(S::smem_bytes)));
  int per_sm = 0, sms = 0;
  TC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, TX * TY, S::smem_bytes));
  TC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = std::min(tiles, per_sm * sms);
  auto launch = [&] {
    kern<<<grid, dim3(TX, TY), S::smem_bytes>>>(d_in, n, n, n, d_out, o, o, o, strips, t);
  };
  TC_CUDA_CHECK(cudaMemset(d_out, 0xff, std::size_t(o) * o * 4));
  launch();
  TC_CUDA_CHECK(cudaGetLastError());
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  const float ms = harness::median_ms(launch);
  char name[96];
  std::snprintf(name, sizeof name, "rows%s C%d TX%d TY%d R%d RC%d MINB%d (%d/SM, %zu B)", LOOP ? (OLD ? "-loop-old" : "-loop") : "",
                C, TX, TY, R, RC, MINB, per_sm, S::smem_bytes);
  check<K>(name, ms, img, kd, n, d_out, rng);
}

template <int K>
void cols(const std::vector<float>& img, const std::vector<double>& kd, int n, const float* d_in,
          float* d_out, std::mt19937_64& rng) {
  if (skip()) return;
  nfix::Taps<K> t;
  for (int i = 0; i < K * K; ++i) t.k[i] = static_cast<float>(kd[i]);
  const int o = n - K + 1;
  using namespace nfix;
  const dim3 grid((o + kTX - 1) / kTX, (o + kTY * kR - 1) / (kTY * kR)), block(kTX, kTY);
  auto launch = [&] { fixed_kernel<K><<<grid, block>>>(d_in, n, n, n, d_out, o, o, o, 0, 0, t); };
  launch();
  TC_CUDA_CHECK(cudaDeviceSynchronize());
  check<K>("naive_fixed (columns)", harness::median_ms(launch), img, kd, n, d_out, rng);
}

template <int K>
std::vector<double> taps(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> U(0, 1);
  std::vector<double> kd(K * K);
  for (auto& x : kd) x = static_cast<float>(U(rng));
  return kd;
}

template <int K>
void sweep(const std::vector<float>& img, int n, const float* i, float* o, std::mt19937_64& rng) {
  auto kd = taps<K>(rng);
  cols<K>(img, kd, n, i, o, rng);
  rows<K, 16, 16, 16, 1, 3, 2>(img, kd, nullptr, n, i, o, rng);
  rows<K, 16, 8, 32, 1, 3, 2, true>(img, kd, nullptr, n, i, o, rng);
  rows<K, 16, 8, 32, 1, 5, 2, true>(img, kd, nullptr, n, i, o, rng);
}

int main(int argc, char** argv) {
  if (argc > 1) g_only = std::atoi(argv[1]);
  const int n = 4096;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> U(0, 1);
  std::vector<float> img(std::size_t(n) * n);
  for (auto& x : img) x = U(rng);
  harness::Dev din(img.size() * 4), dout(img.size() * 4);
  TC_CUDA_CHECK(cudaMemcpy(din.p, img.data(), img.size() * 4, cudaMemcpyHostToDevice));
  const float* i = static_cast<const float*>(din.p);
  float* o = static_cast<float*>(dout.p);
  {
    auto kd = taps<15>(rng);
    for (int rep = 0; rep < 2; ++rep) {
      rows<15, 16, 8, 32, 1, 3, 2, true, true>(img, kd, nullptr, n, i, o, rng);
      rows<15, 16, 8, 32, 1, 3, 2, true>(img, kd, nullptr, n, i, o, rng);
      rows<15, 16, 8, 32, 1, 5, 2, true, true>(img, kd, nullptr, n, i, o, rng);
      rows<15, 16, 8, 32, 1, 5, 2, true>(img, kd, nullptr, n, i, o, rng);
    }
  }
  sweep<3>(img, n, i, o, rng);
  sweep<5>(img, n, i, o, rng);
  sweep<7>(img, n, i, o, rng);
  sweep<9>(img, n, i, o, rng);
  sweep<11>(img, n, i, o, rng);
  sweep<13>(img, n, i, o, rng);
  sweep<15>(img, n, i, o, rng);
  sweep<17>(img, n, i, o, rng);
  return 0;
}
