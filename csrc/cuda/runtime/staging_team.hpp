// A team of persistent threads for the staging copies of host arrays (host_pipeline.cu; also
// benchmarks/harness/host_probe.cu, which measured why: the CPU methods' work-sharing pool ran these
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
// (generation | piece count | next piece), so a thread that wakes late finds nothing left, and
// the caller waits only for pieces in progress. Workers spin ~1 ms after a job (the next band's job
// comes within ~0.3 ms), then sleep. One caller at a time: a concurrent caller (another plan's
// pipeline in another Python thread) runs its pieces itself.
class Team {
 public:
  // `threads` in all, the caller included. The destructor stops and joins the workers (no run()
  // may be in progress): detached workers outlived a Team that was a local of main() and touched
  // its freed words after main returned (tests/native/staging_team_check.cpp: SIGSEGV at exit,
  // once in a full GPU-suite run).
  explicit Team(int threads) {
    for (int i = 1; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Team() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_.store(true);
      wake_.notify_all();
    }
    for (auto& t : threads_) t.join();
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  int size() const { return static_cast<int>(threads_.size()) + 1; }

  void run(std::int64_t pieces, const std::function<void(std::int64_t)>& f) {
    if (pieces <= 0) return;
    std::unique_lock<std::mutex> mine(call_, std::try_to_lock);
    if (!mine.owns_lock() || pieces == 1 || pieces > kMaxPieces || threads_.empty()) {
      for (std::int64_t i = 0; i < pieces; ++i) f(i);
      return;
    }
    fn_.store(&f);
    done_.store(0);
    error_ = nullptr;
    // the piece count travels in the claim word itself: a worker that read the last job's
    // exhausted word can then never claim a piece of this job against the old generation
    // (with the count in a separate word it could, and done_ reached `pieces` while a piece
    // still ran on the caller's dead stack: a Dask worker's SIGSEGV)
    const std::uint64_t g = (gen_of(claim_.load()) + 1) & kGenMask;
    claim_.store(word(g, static_cast<std::uint64_t>(pieces), 0));
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lk(m_);
      wake_.notify_all();
    }
    work(g);
    while (done_.load() < pieces) std::this_thread::yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // claim word: generation (24 bits) | pieces (20 bits) | next piece (20 bits)
  static constexpr std::int64_t kMaxPieces = (std::int64_t{1} << 20) - 1;
  static constexpr std::uint64_t kGenMask = (std::uint64_t{1} << 24) - 1;
  static constexpr std::uint64_t word(std::uint64_t g, std::uint64_t n, std::uint64_t i) {
    return g << 40 | n << 20 | i;
  }
  static constexpr std::uint64_t gen_of(std::uint64_t c) { return c >> 40; }
  void work(std::uint64_t g) {
    for (;;) {
      std::uint64_t c = claim_.load();
      if (gen_of(c) != g) return;
      const std::uint64_t n = (c >> 20) & kMaxPieces, i = c & kMaxPieces;
      if (i >= n) return;
      // a successful claim proves the job is live (not all pieces claimed), so its caller is
      // still waiting and fn_ (stored before the claim word) is this job's
      const auto* f = fn_.load();
      if (!claim_.compare_exchange_weak(c, c + 1)) continue;
      try {
        (*f)(static_cast<std::int64_t>(i));
      } catch (...) {
        std::lock_guard<std::mutex> lk(m_);
        if (!error_) error_ = std::current_exception();
      }
      done_.fetch_add(1);
    }
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int spins = 1; gen_of(claim_.load()) == seen; ++spins) {
        if (spins % 64) continue;
        if (stop_.load()) return;
        if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1)) {
          std::this_thread::yield();
          continue;
        }
        std::unique_lock<std::mutex> lk(m_);
        sleepers_.fetch_add(1);
        wake_.wait(lk, [&] { return stop_.load() || gen_of(claim_.load()) != seen; });
        sleepers_.fetch_sub(1);
        if (stop_.load()) return;
      }
      if (stop_.load()) return;
      seen = gen_of(claim_.load());
      work(seen);
    }
  }
  std::vector<std::thread> threads_;
  std::mutex call_, m_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> claim_{0};
  std::atomic<std::int64_t> done_{0};
  std::atomic<const std::function<void(std::int64_t)>*> fn_{nullptr};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

}  // namespace tc
