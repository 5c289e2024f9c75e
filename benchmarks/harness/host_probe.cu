// Where the time of a host (pageable) image's round trip through the card goes:
// 64 MB float32 (4096²) copied pageable -> pinned and back with 1..16 threads, first touch of a
// fresh output (page faults + zeroing), transparent huge pages, cudaHostRegister / cudaHostAlloc,
// pinned H2D / D2H alone and together, and the staging pipeline as a whole (bands of 8 MB through
// a ring of 3 pinned slots) with its output written by threads or by the card directly. The
// threads are the package's staging team (csrc/cuda/runtime/staging_team.hpp). No package build:
//   nvcc -O3 -std=c++17 -arch=sm_90a -Icsrc -o host_probe benchmarks/harness/host_probe.cu && ./host_probe
// Prints one line per measurement: name, median ms of 7 runs, GB/s of 64 MB.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/runtime/staging_team.hpp"

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

using tc::Team;  // the staging team of host_pipeline.cu (csrc/cuda/runtime/staging_team.hpp)

constexpr size_t N = size_t{64} << 20;

static void par_copy(Team& t, int threads, char* d, const char* s, size_t n) {
  const long pieces = threads * 4;
  const size_t per = (n + pieces - 1) / pieces;
  if (threads == 1) {
    std::memcpy(d, s, n);
    return;
  }
  t.run(pieces, [&](long i) {
    const size_t a = std::min(n, i * per), b = std::min(n, a + per);
    std::memcpy(d + a, s + a, b - a);
  });
}

static char* fresh(int advice) {
  void* p = mmap(nullptr, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::exit(2);
  if (advice >= 0) madvise(p, N, advice);
  return static_cast<char*>(p);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void report(const char* name, double ms) {
  std::printf("%-58s %8.3f ms %7.1f GB/s\n", name, ms, N / ms / 1e6);
  std::fflush(stdout);
}

int main() {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  std::printf("hardware threads %d\n", hw);
  CK(cudaFree(nullptr));
  char *pin_a, *pin_b, *dev_a, *dev_b;
  CK(cudaHostAlloc(&pin_a, N, cudaHostAllocDefault));
  CK(cudaHostAlloc(&pin_b, N, cudaHostAllocDefault));
  CK(cudaMalloc(&dev_a, N));
  CK(cudaMalloc(&dev_b, N));
  char* src = static_cast<char*>(std::aligned_alloc(4096, N));
  char* dst = static_cast<char*>(std::aligned_alloc(4096, N));
  std::memset(src, 1, N);
  std::memset(dst, 2, N);
  std::memset(pin_a, 3, N);
  std::memset(pin_b, 4, N);
  const int R = 7;
  char name[128];

  for (int T : {1, 2, 4, 8, 12, 16}) {
    if (T > hw) break;
    Team& team = *new Team(T);  // never freed: its workers serve every later loop
    std::vector<double> a, b, c, d, e, f, g;
    for (int r = 0; r < R; ++r) {
      auto t = Clock::now();
      par_copy(team, T, pin_a, src, N);
      a.push_back(ms_since(t));
      t = Clock::now();
      par_copy(team, T, dst, pin_a, N);
      b.push_back(ms_since(t));
      for (int adv : {-1, MADV_HUGEPAGE, MADV_NOHUGEPAGE}) {
        char* o = fresh(adv);
        t = Clock::now();
        par_copy(team, T, o, pin_a, N);
        (adv == -1 ? c : adv == MADV_HUGEPAGE ? d : e).push_back(ms_since(t));
        munmap(o, N);
      }
      char* o = fresh(MADV_NOHUGEPAGE);
      t = Clock::now();
      if (T == 1) {
        for (size_t i = 0; i < N; i += 4096) o[i] = 0;
      } else {
        team.run(T * 4, [&](long i) {
          const size_t per = N / (T * 4);
          for (size_t k = i * per; k < (i + 1) * per; k += 4096) o[k] = 0;
        });
      }
      f.push_back(ms_since(t));
      munmap(o, N);
      // pinned -> pageable and pageable -> pinned at once (pack and unpack together)
      t = Clock::now();
      if (T >= 2) {
        const long pieces = T * 4;
        const size_t per = N / (2 * T);
        team.run(pieces, [&](long i) {
          if (i < 2 * T) std::memcpy(pin_b + i * per, src + i * per, per);
          else std::memcpy(dst + (i - 2 * T) * per, pin_a + (i - 2 * T) * per, per);
        });
        g.push_back(ms_since(t));
      }
    }
    const std::pair<const char*, std::vector<double>*> rows[] = {
        {"pageable->pinned memcpy", &a}, {"pinned->pageable (touched) memcpy", &b},
        {"pinned->fresh mmap (default THP)", &c}, {"pinned->fresh mmap MADV_HUGEPAGE", &d},
        {"pinned->fresh mmap MADV_NOHUGEPAGE", &e}, {"first touch fresh 4K pages only", &f},
        {"in+out together (128 MB copied)", &g}};
    for (const auto& [what, v] : rows) {
      if (v->empty()) continue;
      std::snprintf(name, sizeof name, "%s, %d threads", what, T);
      report(name, median(*v));
    }
  }
  {  // MAP_POPULATE, malloc + free
    std::vector<double> a, b;
    for (int r = 0; r < R; ++r) {
      auto t = Clock::now();
      void* p = mmap(nullptr, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                     -1, 0);
      a.push_back(ms_since(t));
      munmap(p, N);
      t = Clock::now();
      char* q = static_cast<char*>(std::malloc(N));
      q[0] = 1;
      std::free(q);
      b.push_back(ms_since(t));
    }
    report("mmap MAP_POPULATE 64 MB", median(a));
    report("malloc + free 64 MB (untouched)", median(b));
  }
  {  // registration and pinned allocation
    std::vector<double> reg, unreg, regf, halloc, hfree, reg8;
    for (int r = 0; r < R; ++r) {
      auto t = Clock::now();
      CK(cudaHostRegister(src, N, cudaHostRegisterDefault));
      reg.push_back(ms_since(t));
      t = Clock::now();
      CK(cudaHostUnregister(src));
      unreg.push_back(ms_since(t));
      char* o = fresh(-1);
      t = Clock::now();
      CK(cudaHostRegister(o, N, cudaHostRegisterDefault));
      regf.push_back(ms_since(t));
      CK(cudaHostUnregister(o));
      munmap(o, N);
      // 8 pieces registered from 8 threads at once
      t = Clock::now();
      {
        std::vector<std::thread> ts;
        for (int i = 0; i < 8; ++i)
          ts.emplace_back([&, i] { CK(cudaHostRegister(src + i * (N / 8), N / 8, 0)); });
        for (auto& x : ts) x.join();
      }
      reg8.push_back(ms_since(t));
      for (int i = 0; i < 8; ++i) CK(cudaHostUnregister(src + i * (N / 8)));
      void* h;
      t = Clock::now();
      CK(cudaHostAlloc(&h, N, cudaHostAllocDefault));
      halloc.push_back(ms_since(t));
      t = Clock::now();
      CK(cudaFreeHost(h));
      hfree.push_back(ms_since(t));
    }
    report("cudaHostRegister 64 MB touched", median(reg));
    report("cudaHostUnregister 64 MB", median(unreg));
    report("cudaHostRegister 64 MB fresh (unfaulted)", median(regf));
    report("cudaHostRegister 8 x 8 MB from 8 threads", median(reg8));
    report("cudaHostAlloc 64 MB", median(halloc));
    report("cudaFreeHost 64 MB", median(hfree));
  }
  cudaStream_t s1, s2, s3;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  {
    std::vector<double> a, b, c, d;
    for (int r = 0; r < R; ++r) {
      auto t = Clock::now();
      CK(cudaMemcpyAsync(dev_a, pin_a, N, cudaMemcpyHostToDevice, s1));
      CK(cudaStreamSynchronize(s1));
      a.push_back(ms_since(t));
      t = Clock::now();
      CK(cudaMemcpyAsync(pin_b, dev_b, N, cudaMemcpyDeviceToHost, s2));
      CK(cudaStreamSynchronize(s2));
      b.push_back(ms_since(t));
      t = Clock::now();
      CK(cudaMemcpyAsync(dev_a, pin_a, N, cudaMemcpyHostToDevice, s1));
      CK(cudaMemcpyAsync(pin_b, dev_b, N, cudaMemcpyDeviceToHost, s2));
      CK(cudaStreamSynchronize(s1));
      CK(cudaStreamSynchronize(s2));
      c.push_back(ms_since(t));
      t = Clock::now();
      CK(cudaMemcpy(dev_a, src, N, cudaMemcpyHostToDevice));
      d.push_back(ms_since(t));
    }
    report("H2D pinned 64 MB", median(a));
    report("D2H pinned 64 MB", median(b));
    report("H2D + D2H at once, 2 streams (128 MB moved)", median(c));
    report("H2D pageable 64 MB (driver staging)", median(d));
  }
  // The pipeline: 8 bands of 8 MB, 3 slots. Input packed by threads into pinned slots; output
  // either unpacked by threads into a fresh mmap (what np.empty gives) or copied by the card
  // straight into a pinned result. Host work in one thread's sequence (unpack j-3, pack j).
  const int hwT = std::min(16, hw);
  for (int T : {4, 8, hwT}) {
    Team& team = *new Team(T);
    for (int direct = 0; direct < 3; ++direct) {
      std::vector<double> tt;
      const int bands = 8, slots = 3;
      const size_t bb = N / bands;
      cudaEvent_t ev[3];
      for (auto& x : ev) CK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
      cudaEvent_t evh[3];
      for (auto& x : evh) CK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
      for (int r = 0; r < R; ++r) {
        char* out = direct == 1 ? pin_b : fresh(direct == 2 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        auto t = Clock::now();
        for (int j = 0; j < bands + slots; ++j) {
          const int s = j % slots;
          if (j >= slots) {
            CK(cudaEventSynchronize(ev[s]));
            if (direct != 1) par_copy(team, T, out + (j - slots) * bb, pin_b + s * bb, bb);
          }
          if (j >= bands) continue;
          par_copy(team, T, pin_a + s * bb, src + j * bb, bb);
          CK(cudaMemcpyAsync(dev_a + s * bb, pin_a + s * bb, bb, cudaMemcpyHostToDevice, s1));
          CK(cudaEventRecord(evh[s], s1));
          CK(cudaStreamWaitEvent(s3, evh[s], 0));
          char* o = direct == 1 ? pin_b + j * bb : pin_b + s * bb;
          CK(cudaMemcpyAsync(o, dev_a + s * bb, bb, cudaMemcpyDeviceToHost, s3));
          CK(cudaEventRecord(ev[s], s3));
        }
        tt.push_back(ms_since(t));
        if (direct != 1) munmap(out, N);
      }
      std::snprintf(name, sizeof name, "pipeline 8 x 8 MB, %d threads, output %s", T,
                    direct == 1 ? "D2H into pinned result" :
                    direct == 2 ? "unpacked, fresh THP" : "unpacked, fresh 4K");
      report(name, median(tt));
    }
  }
  std::printf("done\n");
  return 0;
}
