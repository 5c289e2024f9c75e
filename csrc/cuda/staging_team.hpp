// A team of persistent threads for the staging copies of host arrays (host_pipeline.cu; also
// benchmarks/host_probe.cu, which measured why: the CPU methods' work-sharing pool ran these
// copies on one thread after any stall). Plain C++, no CUDA.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tc {

// Persistent threads for the staging copies. A job's pieces are claimed from one atomic word
// (generation << 32 | next piece), so a thread that wakes late finds nothing left and the
// caller waits only for pieces in progress. Workers spin ~1 ms after a job (the next band's job
// comes within ~0.3 ms), then sleep. One caller at a time: a concurrent caller (another plan's
// pipeline in another Python thread) runs its pieces itself.
class Team {
 public:
  // `threads` in all, the caller included. The workers are detached: a Team must outlive them
  // (host_pipeline.cu's is never destroyed; benchmarks/host_probe.cu's live until exit).
  explicit Team(int threads) {
    for (int i = 1; i < threads; ++i) threads_.emplace_back([this] { loop(); });
    for (auto& t : threads_) t.detach();
  }
  int size() const { return static_cast<int>(threads_.size()) + 1; }

  void run(std::int64_t pieces, const std::function<void(std::int64_t)>& f) {
    if (pieces <= 0) return;
    std::unique_lock<std::mutex> mine(call_, std::try_to_lock);
    if (!mine.owns_lock() || pieces == 1 || threads_.empty()) {
      for (std::int64_t i = 0; i < pieces; ++i) f(i);
      return;
    }
    fn_.store(&f);
    pieces_.store(pieces);
    done_.store(0);
    error_ = nullptr;
    const std::uint64_t g = (claim_.load() >> 32) + 1;
    claim_.store(g << 32);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lk(m_);
      wake_.notify_all();
    }
    work(static_cast<std::uint32_t>(g));
    while (done_.load() < pieces) std::this_thread::yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work(std::uint32_t g) {
    for (;;) {
      std::uint64_t c = claim_.load();
      if ((c >> 32) != g) return;
      const auto* f = fn_.load();
      const std::int64_t n = pieces_.load();
      const auto i = static_cast<std::int64_t>(c & 0xFFFFFFFFu);
      if (i >= n) return;
      if (!claim_.compare_exchange_weak(c, c + 1)) continue;
      try {
        (*f)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(m_);
        if (!error_) error_ = std::current_exception();
      }
      done_.fetch_add(1);
    }
  }
  void loop() {
    std::uint32_t seen = 0;
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int spins = 1; static_cast<std::uint32_t>(claim_.load() >> 32) == seen; ++spins) {
        if (spins % 64) continue;
        if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1)) {
          std::this_thread::yield();
          continue;
        }
        std::unique_lock<std::mutex> lk(m_);
        sleepers_.fetch_add(1);
        wake_.wait(lk, [&] { return static_cast<std::uint32_t>(claim_.load() >> 32) != seen; });
        sleepers_.fetch_sub(1);
      }
      seen = static_cast<std::uint32_t>(claim_.load() >> 32);
      work(seen);
    }
  }
  std::vector<std::thread> threads_;
  std::mutex call_, m_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> claim_{0};
  std::atomic<std::int64_t> done_{0}, pieces_{0};
  std::atomic<const std::function<void(std::int64_t)>*> fn_{nullptr};
  std::atomic<int> sleepers_{0};
  std::exception_ptr error_;
};

}  // namespace tc
