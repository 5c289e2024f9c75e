#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace tc {
namespace {

constexpr std::int64_t kMaxThreads = 64;  // seats (home ranges) per call

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    work_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void run(std::int64_t n, int threads, std::int64_t chunk, ChunkBody body, void* ctx) {
    std::unique_lock<std::mutex> one(call_, std::try_to_lock);
    // Nested or concurrent caller, one thread, or a recent stall (below): run inline.
    if (!one.owns_lock() || threads <= 1 || Clock::now() < solo_until_) {
      body(ctx, 0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lk(m_);
      while (static_cast<int>(workers_.size()) < threads - 1)
        workers_.emplace_back([this] { worker(); });
      body_ = body;
      ctx_ = ctx;
      n_ = n;
      chunk_ = chunk;
      // Home ranges: seat s owns chunks [s * nc / T, (s + 1) * nc / T), the same rows in every
      // call, so repeated calls on one image find their rows in the same core's caches.
      const std::int64_t nc = (n + chunk - 1) / chunk;
      nseg_ = threads;
      for (int s = 0; s < nseg_; ++s)
        seg_[s].store(pack(nc * s / nseg_, nc * (s + 1) / nseg_));
      seats_ = threads - 1;
      next_seat_ = 1;
      ++generation_;
    }
    work_.notify_all();
    const auto t0 = Clock::now();
    chunks(0, nseg_, body, ctx, n, chunk);
    const auto t1 = Clock::now();
    std::unique_lock<std::mutex> lk(m_);
    body_ = nullptr;  // workers waking from now on find no job
    seats_ = 0;
    done_.wait(lk, [this] { return busy_ == 0; });
    // A worker descheduled in the middle of a chunk (other jobs on the cores) makes the caller
    // wait for the OS to run it again, often longer than the whole job. After such a stall the
    // next calls run on the calling thread for a while, then threads are tried again.
    const auto waited = Clock::now() - t1;
    if (waited > std::chrono::microseconds(50) && waited > t1 - t0)
      solo_until_ = Clock::now() + std::chrono::milliseconds(200);
  }

 private:
  // Front and back chunk index of a seat's remaining range, in one word so a claim is one CAS.
  static std::uint64_t pack(std::int64_t f, std::int64_t b) {
    return static_cast<std::uint64_t>(f) << 32 | static_cast<std::uint64_t>(b);
  }
  // Claims one chunk of segment s: its first (own range, in order) or its last (stealing).
  bool claim(int s, bool front, std::int64_t& c) {
    std::uint64_t v = seg_[s].load();
    for (;;) {
      const auto f = static_cast<std::int64_t>(v >> 32);
      const auto b = static_cast<std::int64_t>(v & 0xFFFFFFFFu);
      if (f >= b) return false;
      c = front ? f : b - 1;
      if (seg_[s].compare_exchange_weak(v, front ? pack(f + 1, b) : pack(f, b - 1))) return true;
    }
  }

  // Seat `seat`'s own chunks, then chunks stolen from the end of the others' ranges (a worker
  // that was not scheduled leaves its range to the others).
  void chunks(int seat, int nseg, ChunkBody body, void* ctx, std::int64_t n, std::int64_t chunk) {
    std::int64_t c;
    for (int k = 0; k < nseg; ++k) {
      const int s = (seat + k) % nseg;
      while (claim(s, k == 0, c)) body(ctx, c * chunk, std::min(n, (c + 1) * chunk));
    }
  }

  void worker() {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      work_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!body_ || seats_ == 0) continue;
      --seats_;
      ++busy_;
      const int seat = next_seat_++, nseg = nseg_;
      const ChunkBody body = body_;
      void* ctx = ctx_;
      const std::int64_t n = n_, chunk = chunk_;
      lk.unlock();
      chunks(seat, nseg, body, ctx, n, chunk);
      lk.lock();
      if (--busy_ == 0) done_.notify_all();
    }
  }

  using Clock = std::chrono::steady_clock;
  std::mutex call_;  // one parallel_for at a time; others run inline
  Clock::time_point solo_until_{};  // guarded by call_
  std::mutex m_;
  std::condition_variable work_, done_;
  std::vector<std::thread> workers_;
  ChunkBody body_ = nullptr;
  void* ctx_ = nullptr;
  std::int64_t n_ = 0, chunk_ = 1;
  std::atomic<std::uint64_t> seg_[kMaxThreads];
  int nseg_ = 1, next_seat_ = 1;
  int seats_ = 0, busy_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: workers may outlive static destruction order
  return *p;
}

}  // namespace

int default_threads() {
  const unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

void parallel_for(std::int64_t n, int threads, std::int64_t chunk, ChunkBody body, void* ctx) {
  if (n <= 0) return;
  if (threads <= 0) threads = default_threads();
  chunk = std::max<std::int64_t>(1, chunk);
  threads = static_cast<int>(
      std::min<std::int64_t>({std::int64_t{threads}, (n + chunk - 1) / chunk, kMaxThreads}));
  pool().run(n, threads, chunk, body, ctx);
}

}  // namespace tc
