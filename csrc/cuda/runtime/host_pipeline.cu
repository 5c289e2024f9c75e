// Host arrays on a CUDA plan: the image (or each image of a stack, or row bands of a large one,
// each band with its kh-1 halo rows) is a job; jobs go round a ring of kSlots pinned + device
// buffers. The calling thread packs job j into pinned memory (padding applied as it copies, on
// the staging team's threads) while the card copies job j-1 in on one stream, computes on a
// second and copies results out on a third. A result in pinned memory (a NumPy array from
// host_result(), the pinned pool's) is written by the card directly; any other result is
// unpacked from the ring by the team when the slot comes round again, its pages faulted in by
// the team first. Pageable memory never reaches the driver, whose own staging of pageable copies
// is single-threaded and synchronous.
//
// Measured on the H100 host (16 cores, benchmarks/harness/host_probe.cu, 64 MB): memcpy pageable ->
// pinned 6.8 GB/s on one thread, 68 GB/s on 16; writing a fresh (never touched) 64 MB output
// 1.6 GB/s on one thread (page faults and zeroing: 40 ms, 18 ms with huge pages), 18-25 GB/s on
// 16; cudaHostAlloc of 64 MB 29 ms. The work-sharing pool of the CPU methods (parallel.hpp)
// ran these copies on one thread (its stall guard), hence a team of our own.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/runtime/block_gather.hpp"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/pinned_pool.hpp"
#include "cuda/runtime/staging_team.hpp"

namespace tc {
namespace cuda {

namespace {

constexpr int kSlots = 3;
// Input bytes per band of a large image: small enough that filling and draining the pipeline
// (one band in, one out) is a few % of a 64 MB image; large enough that each of 16 threads'
// pieces of a band (128 KB and more) outlasts claiming it.
constexpr std::int64_t kBandBytes = std::int64_t{8} << 20;
constexpr int kTeamMax = 16;  // staging threads (capped at the hardware threads)

Team& team() {
  static Team* t = [] {  // never destroyed: its workers serve every plan until exit
    const unsigned hw = std::thread::hardware_concurrency();
    return new Team(std::max(1, std::min<int>(kTeamMax, hw ? static_cast<int>(hw) : 1)));
  }();
  return *t;
}

// Writes one byte of every 4 KB page of [p, p + bytes) on the team, so the pages are faulted in
// (and zeroed) by 16 threads rather than by the one that first writes them.
void touch_pages(char* p, std::size_t bytes) {
  constexpr std::size_t kPiece = std::size_t{2} << 20;  // a huge page per piece
  const auto pieces = static_cast<std::int64_t>((bytes + kPiece - 1) / kPiece);
  team().run(pieces, [&](std::int64_t i) {
    const std::size_t a = static_cast<std::size_t>(i) * kPiece;
    const std::size_t b = std::min(bytes, a + kPiece);
    for (std::size_t k = a; k < b; k += 4096) reinterpret_cast<volatile char*>(p)[k] = 0;
  });
}

// ---- the pinned pool (pinned_pool.hpp) ----
struct PinnedBlock {
  char* p;
  std::size_t bytes;
  bool used;
};
// never destroyed: NumPy results may give blocks back during the interpreter's shutdown
std::mutex& pool_mutex = *new std::mutex;
std::vector<PinnedBlock>& pool_blocks = *new std::vector<PinnedBlock>;
std::size_t pool_held = 0;

std::atomic<std::size_t> pool_cap_bytes{std::size_t{2048} << 20};  // pinned_set_cap

std::size_t pool_cap() { return pool_cap_bytes.load(); }

void release_block(const PinnedBlock& b) noexcept {  // pool_mutex held
  cudaHostUnregister(b.p);
  cudaGetLastError();
  munmap(b.p, b.bytes);
  pool_held -= b.bytes;
}

// Huge pages faulted in by the team, then registered: ~5 ms for 64 MB where cudaHostAlloc took
// 29 ms on the H100 host (it faults and pins the pages on one thread).
char* new_pinned(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw OutOfMemory("out of host memory: asked for " + std::to_string(bytes) +
                      " bytes of pinned staging");
  madvise(p, bytes, MADV_HUGEPAGE);
  char* c = static_cast<char*>(p);
  try {
    touch_pages(c, bytes);
  } catch (...) {
    munmap(p, bytes);
    throw;
  }
  const cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
  if (e != cudaSuccess) {
    munmap(p, bytes);
    cudaGetLastError();
    if (e == cudaErrorMemoryAllocation || e == cudaErrorHostMemoryAlreadyRegistered)
      throw OutOfMemory("out of pinned host memory: asked for " + std::to_string(bytes) +
                        " bytes");
    throw_cuda(e, "cudaHostRegister", __FILE__, __LINE__);
  }
  return c;
}

}  // namespace

void* pinned_take(std::size_t bytes, bool result) {
  constexpr std::size_t kAlign = std::size_t{2} << 20;
  const std::size_t want = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  {
    std::lock_guard<std::mutex> lk(pool_mutex);
    PinnedBlock* best = nullptr;  // the smallest free block that fits without doubling
    for (auto& b : pool_blocks)
      if (!b.used && b.bytes >= bytes && b.bytes < 2 * want && (!best || b.bytes < best->bytes))
        best = &b;
    if (best) {
      best->used = true;
      return best->p;
    }
    if (result) {
      const std::size_t cap = pool_cap();
      if (want > cap / 4) return nullptr;
      // free blocks of other sizes make room (largest first)
      while (pool_held + want > cap) {
        auto it = pool_blocks.end();
        for (auto i = pool_blocks.begin(); i != pool_blocks.end(); ++i)
          if (!i->used && (it == pool_blocks.end() || i->bytes > it->bytes)) it = i;
        if (it == pool_blocks.end()) return nullptr;
        release_block(*it);
        pool_blocks.erase(it);
      }
    }
    pool_held += want;  // reserved while it is made outside the lock
  }
  char* p = nullptr;
  try {
    p = new_pinned(want);
  } catch (...) {
    std::lock_guard<std::mutex> lk(pool_mutex);
    pool_held -= want;
    if (result) return nullptr;  // pageable memory will do
    throw;
  }
  std::lock_guard<std::mutex> lk(pool_mutex);
  pool_blocks.push_back({p, want, true});
  return p;
}

void pinned_give(void* p) noexcept {
  std::lock_guard<std::mutex> lk(pool_mutex);
  for (auto& b : pool_blocks)
    if (b.p == p) b.used = false;
}

bool pinned_owns(const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lk(pool_mutex);
  for (const auto& b : pool_blocks)
    if (b.used && c >= b.p && c + bytes <= b.p + b.bytes) return true;
  return false;
}

void pinned_set_cap(std::size_t bytes) { pool_cap_bytes.store(bytes); }

std::size_t pinned_held_bytes() {
  std::lock_guard<std::mutex> lk(pool_mutex);
  return pool_held;
}

namespace {

// A staging ring's buffer, from the pinned pool (kept there when the plan goes: the next plan
// of a Dask worker's next chunk finds it).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { if (ptr_) pinned_give(ptr_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void ensure(std::size_t bytes) {
    if (bytes <= bytes_) return;
    if (ptr_) pinned_give(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    ptr_ = pinned_take(bytes, false);
    bytes_ = bytes;
  }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

struct HostStager {
  cudaStream_t h2d = nullptr, comp = nullptr, d2h = nullptr;
  cudaEvent_t ev_h2d[kSlots] = {}, ev_comp[kSlots] = {}, ev_d2h[kSlots] = {}, ev_caller = nullptr;
  PinnedBuffer pin_in[kSlots], pin_out[kSlots];
  DeviceBuffer dev_in[kSlots], dev_out[kSlots];
  std::unique_ptr<Plan> band_plan;  // the method over band_out + kh - 1 rows (none: whole images)
  std::int64_t band_out = 0;
  std::mutex busy;  // one host call at a time per plan (Python threads release the GIL)

  HostStager() {
    for (cudaStream_t* s : {&h2d, &comp, &d2h})
      TC_CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    for (int i = 0; i < kSlots; ++i)
      for (cudaEvent_t* e : {&ev_h2d[i], &ev_comp[i], &ev_d2h[i]})
        TC_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    TC_CUDA_CHECK(cudaEventCreateWithFlags(&ev_caller, cudaEventDisableTiming));
  }
  ~HostStager() {
    for (cudaStream_t s : {h2d, comp, d2h})
      if (s) cudaStreamDestroy(s);
    for (int i = 0; i < kSlots; ++i)
      for (cudaEvent_t e : {ev_h2d[i], ev_comp[i], ev_d2h[i]})
        if (e) cudaEventDestroy(e);
    if (ev_caller) cudaEventDestroy(ev_caller);
  }
  void drain() noexcept {
    for (cudaStream_t s : {h2d, comp, d2h}) cudaStreamSynchronize(s);
    cudaGetLastError();
  }
};

void HostStagerDelete::operator()(HostStager* s) const { delete s; }

void CudaPlan::kernel_replaced(const double* k) {
  // (between calls: every host call has finished with the stager when it returns)
  if (stager_ && stager_->band_plan && !stager_->band_plan->replace_kernel(k)) stager_.reset();
}

void CudaPlan::host_pipeline(const HostGather& g, const Tensor2D& out,
                             std::int64_t out_batch_stride, std::int64_t batch,
                             cudaStream_t caller) {
  static std::mutex making;  // two threads' first host calls on one plan make one stager
  std::unique_lock<std::mutex> made(making);
  if (!stager_) {
    stager_.reset(new HostStager());
    // Row bands only pay where an image is several bands tall and the method can be remade
    // for the band's height.
    const std::size_t es = dtype_size(out.dtype);
    const std::int64_t oh = out_rows(), halo = kh_ - 1;
    const std::int64_t want = kBandBytes / static_cast<std::int64_t>(iw_ * es) - halo;
    const std::int64_t band = std::max<std::int64_t>({want, 4 * halo, 64});
    if (remake_for_rows && oh >= 3 * band) {
      try {
        stager_->band_plan = remake_for_rows(band + halo);
      } catch (const std::exception&) {
        // a method that cannot take the band's height (or no memory for a second plan):
        // whole images, as without bands
        stager_->band_plan.reset();
        cudaGetLastError();
      }
      if (!dynamic_cast<CudaPlan*>(stager_->band_plan.get())) stager_->band_plan.reset();
      else stager_->band_out = band;
    }
  }
  HostStager& st = *stager_;
  made.unlock();
  std::lock_guard<std::mutex> mine(st.busy);
  CudaPlan* plan = st.band_plan ? static_cast<CudaPlan*>(st.band_plan.get()) : this;
  const DType dt = out.dtype;
  const std::size_t es = dtype_size(dt);
  const std::int64_t oh = out_rows(), ow = out_cols();
  const std::int64_t band_out = st.band_plan ? st.band_out : oh;
  const std::int64_t band_in = band_out + kh_ - 1;
  const std::int64_t nbands = (oh + band_out - 1) / band_out;
  const std::int64_t jobs = batch * nbands;
  const std::size_t in_bytes = static_cast<std::size_t>(band_in * iw_) * es;
  const std::size_t out_bytes = static_cast<std::size_t>(band_out * ow) * es;
  for (int s = 0; s < kSlots; ++s) {
    st.pin_in[s].ensure(in_bytes);
    st.pin_out[s].ensure(out_bytes);
    st.dev_in[s].ensure(in_bytes);
    st.dev_out[s].ensure(out_bytes);
  }
  const std::uint64_t fill = fill_bits(g.fill, dt);
  const char* src0 = static_cast<const char*>(g.src.data);
  const std::int64_t nthreads = team().size();
  // where job j reads and writes: image b, first output row o0 (the last band overlaps the
  // one before it rather than needing a plan of its own height)
  auto job = [&](std::int64_t j, std::int64_t& b, std::int64_t& o0) {
    b = j / nbands;
    const std::int64_t i = j % nbands;
    o0 = i + 1 < nbands ? i * band_out : oh - band_out;
  };
  // rows per piece: ~4 pieces per thread of a band, at least 64 KB each
  auto piece_rows = [&](std::int64_t rows, std::int64_t row_bytes) {
    const std::int64_t by_threads = (rows + 4 * nthreads - 1) / (4 * nthreads);
    const std::int64_t by_bytes = ((std::int64_t{64} << 10) + row_bytes - 1) / row_bytes;
    return std::max<std::int64_t>({1, by_threads, by_bytes});
  };
  const std::int64_t in_piece = piece_rows(band_in, iw_ * static_cast<std::int64_t>(es));
  const std::int64_t out_piece = piece_rows(band_out, ow * static_cast<std::int64_t>(es));

  // several source blocks (tensorconv.dask): each padded row from its block row, its columns
  // as runs over the block columns (block_gather.hpp)
  const std::vector<ColumnRun> runs = g.blocks ? column_runs(g, iw_) : std::vector<ColumnRun>();
  auto pack = [&](std::int64_t j, int slot) {
    std::int64_t b, o0;
    job(j, b, o0);
    const char* src = src0 + b * g.src_batch_stride * static_cast<std::int64_t>(es);
    char* dst0 = st.pin_in[slot].get();
    team().run((band_in + in_piece - 1) / in_piece, [&](std::int64_t p) {
      const std::int64_t r0 = p * in_piece, r1 = std::min(band_in, r0 + in_piece);
      if (g.blocks) {
        for (std::int64_t r = r0; r < r1; ++r)
          gather_block_row(dst0 + r * iw_ * static_cast<std::int64_t>(es), g, o0 + r, runs, es,
                           fill);
        return;
      }
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t pr = o0 + r;  // padded row
        const std::int64_t inside = pr - g.pad_top;
        const std::int64_t sr = inside >= 0 && inside < g.src.rows ? inside : g.row_src[pr];
        char* dst = dst0 + r * iw_ * static_cast<std::int64_t>(es);
        auto put_fill = [&](std::int64_t c0, std::int64_t c1) {
          for (std::int64_t c = c0; c < c1; ++c) std::memcpy(dst + c * es, &fill, es);
        };
        if (sr < 0) {
          put_fill(0, iw_);
          continue;
        }
        const char* row = src + sr * g.src.row_stride * static_cast<std::int64_t>(es);
        const std::int64_t l = g.pad_left, rend = g.pad_left + g.src.cols;
        for (std::int64_t c = 0; c < iw_; ++c) {
          if (c == l) {  // the interior: one contiguous copy
            std::memcpy(dst + l * es, row, static_cast<std::size_t>(g.src.cols) * es);
            c = rend - 1;
            continue;
          }
          const std::int64_t sc = g.col_src[c];
          if (sc < 0) put_fill(c, c + 1);
          else std::memcpy(dst + c * es, row + sc * es, es);
        }
      }
    });
  };
  auto out_row = [&](std::int64_t b, std::int64_t r) {
    return static_cast<char*>(out.data) +
           (b * out_batch_stride + r * out.row_stride) * static_cast<std::int64_t>(es);
  };
  auto unpack = [&](std::int64_t j, int slot) {
    std::int64_t b, o0;
    job(j, b, o0);
    const char* from = st.pin_out[slot].get();
    team().run((band_out + out_piece - 1) / out_piece, [&](std::int64_t p) {
      const std::int64_t r0 = p * out_piece, r1 = std::min(band_out, r0 + out_piece);
      for (std::int64_t r = r0; r < r1; ++r)
        std::memcpy(out_row(b, o0 + r), from + r * ow * static_cast<std::int64_t>(es),
                    static_cast<std::size_t>(ow) * es);
    });
  };
  // A result in the pinned pool is written by the card; any other is unpacked from the ring.
  const std::size_t out_span =
      static_cast<std::size_t>((batch - 1) * out_batch_stride + (oh - 1) * out.row_stride + ow) *
      es;
  const bool direct = pinned_owns(out.data, out_span);
  if (!direct) {
    // Fault the result's pages in on the team first (a fresh NumPy array's pages fault at
    // the first write: ~1.6 GB/s on one thread, ~20 GB/s on 16), touching only its rows.
    const std::int64_t rows = batch * oh;
    const std::int64_t per = std::max<std::int64_t>(
        1, (std::int64_t{2} << 20) / std::max<std::int64_t>(1, out.row_stride * es));
    team().run((rows + per - 1) / per, [&](std::int64_t p) {
      for (std::int64_t k = p * per; k < std::min(rows, (p + 1) * per); ++k) {
        auto* row = reinterpret_cast<volatile char*>(out_row(k / oh, k % oh));
        const std::size_t n = static_cast<std::size_t>(ow) * es;
        row[0] = 0;
        for (std::size_t q = 4096 - reinterpret_cast<std::uintptr_t>(row) % 4096; q < n;
             q += 4096)
          row[q] = 0;
      }
    });
  }

  try {
    // work the caller queued on its stream (this plan's workspace) comes first
    TC_CUDA_CHECK(cudaEventRecord(st.ev_caller, caller));
    TC_CUDA_CHECK(cudaStreamWaitEvent(st.comp, st.ev_caller, 0));
    for (std::int64_t j = 0; j < jobs + kSlots; ++j) {
      const int slot = static_cast<int>(j % kSlots);
      const bool reuse = j >= kSlots;  // the slot held job j - kSlots
      if (reuse && !direct) {  // its results, then the slot is free
        TC_CUDA_CHECK(cudaEventSynchronize(st.ev_d2h[slot]));
        if (j - kSlots < jobs) unpack(j - kSlots, slot);
      }
      if (j >= jobs) continue;
      // the slot's pinned input is free once its H2D is done; the device buffers are
      // ordered on the streams (H2D after the compute that read dev_in, compute after the
      // D2H that read dev_out)
      if (reuse && direct) TC_CUDA_CHECK(cudaEventSynchronize(st.ev_h2d[slot]));
      pack(j, slot);
      if (reuse) TC_CUDA_CHECK(cudaStreamWaitEvent(st.h2d, st.ev_comp[slot], 0));
      TC_CUDA_CHECK(cudaMemcpyAsync(st.dev_in[slot].get(), st.pin_in[slot].get(), in_bytes,
                                    cudaMemcpyHostToDevice, st.h2d));
      TC_CUDA_CHECK(cudaEventRecord(st.ev_h2d[slot], st.h2d));
      TC_CUDA_CHECK(cudaStreamWaitEvent(st.comp, st.ev_h2d[slot], 0));
      if (reuse) TC_CUDA_CHECK(cudaStreamWaitEvent(st.comp, st.ev_d2h[slot], 0));
      Tensor2D din = out, dout = out;
      din.data = st.dev_in[slot].get();
      din.rows = band_in;
      din.cols = din.row_stride = iw_;
      din.on_device = true;
      dout.data = st.dev_out[slot].get();
      dout.rows = band_out;
      dout.cols = dout.row_stride = ow;
      dout.on_device = true;
      plan->run_device(din, dout, st.comp);
      TC_CUDA_CHECK(cudaEventRecord(st.ev_comp[slot], st.comp));
      TC_CUDA_CHECK(cudaStreamWaitEvent(st.d2h, st.ev_comp[slot], 0));
      if (direct) {
        std::int64_t b, o0;
        job(j, b, o0);
        TC_CUDA_CHECK(cudaMemcpy2DAsync(out_row(b, o0), out.row_stride * es,
                                        st.dev_out[slot].get(), ow * es, ow * es, band_out,
                                        cudaMemcpyDeviceToHost, st.d2h));
      } else {
        TC_CUDA_CHECK(cudaMemcpyAsync(st.pin_out[slot].get(), st.dev_out[slot].get(),
                                      out_bytes, cudaMemcpyDeviceToHost, st.d2h));
      }
      TC_CUDA_CHECK(cudaEventRecord(st.ev_d2h[slot], st.d2h));
    }
    if (direct) TC_CUDA_CHECK(cudaStreamSynchronize(st.d2h));
  } catch (...) {
    st.drain();  // no copy may still target the pinned buffers or the caller's arrays
    throw;
  }
}

}  // namespace cuda
}  // namespace tc
