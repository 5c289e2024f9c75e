// Host arrays on a CUDA plan: the image (or each image of a stack, or row bands of a large one,
// each band with its kh-1 halo rows) is a job; jobs go round a ring of kSlots pinned + device
// buffers. The calling thread packs job j into pinned memory (padding applied as it copies, on
// worker threads) while the card copies job j-1 in on one stream, computes on a second and
// copies results out on a third; the host unpacks a slot's results into the caller's array when
// the slot comes round again. Pageable memory never reaches the driver, whose own staging of
// pageable copies is single-threaded and synchronous.
#include <algorithm>
#include <cstring>
#include <string>

#include "../core/half.hpp"
#include "../cpu/parallel.hpp"
#include "common.cuh"

namespace tc {
namespace cuda {

namespace {

constexpr int kSlots = 3;
// Input bytes per band of a large image: small enough that filling and draining the pipeline
// (one band in, one out) is a few % of a 64 MB image, large enough that launches stay efficient.
constexpr std::int64_t kBandBytes = std::int64_t{4} << 20;
constexpr int kCopyThreads = 16;  // pageable <-> pinned memcpy (capped at the hardware threads)

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { if (ptr_) cudaFreeHost(ptr_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void ensure(std::size_t bytes) {
    if (bytes <= bytes_) return;
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    cudaError_t e = cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
      ptr_ = nullptr;
      cudaGetLastError();
      if (e == cudaErrorMemoryAllocation)
        throw OutOfMemory("out of pinned host memory: asked for " + std::to_string(bytes) +
                          " bytes of staging");
      throw_cuda(e, "cudaHostAlloc", __FILE__, __LINE__);
    }
    bytes_ = bytes;
  }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// The fill value as the storage's bit pattern (real storage).
std::uint64_t fill_bits(double fill, DType d) {
  std::uint64_t bits = 0;
  if (d == DType::f16) {
    const std::uint16_t h = float_to_half(static_cast<float>(fill));
    std::memcpy(&bits, &h, 2);
  } else if (d == DType::f32) {
    const float f = static_cast<float>(fill);
    std::memcpy(&bits, &f, 4);
  } else if (d == DType::f64) {
    std::memcpy(&bits, &fill, 8);
  }  // complex storage is never padded here (Plan::execute_gather refuses it): no fill

  return bits;
}

}  // namespace

struct HostStager {
  cudaStream_t h2d = nullptr, comp = nullptr, d2h = nullptr;
  cudaEvent_t ev_h2d[kSlots] = {}, ev_comp[kSlots] = {}, ev_d2h[kSlots] = {}, ev_caller = nullptr;
  PinnedBuffer pin_in[kSlots], pin_out[kSlots];
  DeviceBuffer dev_in[kSlots], dev_out[kSlots];
  std::unique_ptr<Plan> band_plan;  // the method over band_out + kh - 1 rows (none: whole images)
  std::int64_t band_out = 0;

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

void CudaPlan::host_pipeline(const HostGather& g, const Tensor2D& out,
                             std::int64_t out_batch_stride, std::int64_t batch,
                             cudaStream_t caller) {
  if (!stager_) {
    stager_.reset(new HostStager());
    // Row bands only pay where an image is several bands tall and the method can be remade
    // for the band's height.
    const std::size_t es = dtype_size(out.dtype);
    const std::int64_t oh = out_rows(), halo = kh_ - 1;
    const std::int64_t want = kBandBytes / static_cast<std::int64_t>(iw_ * es) - halo;
    const std::int64_t band = std::max<std::int64_t>({want, 4 * halo, 64});
    if (remake_for_rows && oh >= 3 * band) {
      stager_->band_plan = remake_for_rows(band + halo);
      if (!dynamic_cast<CudaPlan*>(stager_->band_plan.get())) stager_->band_plan.reset();
      else stager_->band_out = band;
    }
  }
  HostStager& st = *stager_;
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
  const int threads = std::min(kCopyThreads, default_threads());
  const char* src0 = static_cast<const char*>(g.src.data);
  const std::int64_t copy_chunk = std::max<std::int64_t>(1, (256 << 10) / (iw_ * es));
  // where job j reads and writes: image b, first output row o0 (the last band overlaps the
  // one before it rather than needing a plan of its own height)
  auto job = [&](std::int64_t j, std::int64_t& b, std::int64_t& o0) {
    b = j / nbands;
    const std::int64_t i = j % nbands;
    o0 = i + 1 < nbands ? i * band_out : oh - band_out;
  };

  auto pack = [&](std::int64_t j, int slot) {
    std::int64_t b, o0;
    job(j, b, o0);
    const char* src = src0 + b * g.src_batch_stride * static_cast<std::int64_t>(es);
    char* dst0 = st.pin_in[slot].get();
    parallel_chunks(band_in, threads, copy_chunk, [&](std::int64_t r0, std::int64_t r1) {
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
  auto unpack = [&](std::int64_t j, int slot) {
    std::int64_t b, o0;
    job(j, b, o0);
    char* dst0 = static_cast<char*>(out.data) +
                 (b * out_batch_stride + o0 * out.row_stride) * static_cast<std::int64_t>(es);
    const char* from = st.pin_out[slot].get();
    const std::int64_t chunk = std::max<std::int64_t>(1, (256 << 10) / (ow * es));
    parallel_chunks(band_out, threads, chunk, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r)
        std::memcpy(dst0 + r * out.row_stride * static_cast<std::int64_t>(es),
                    from + r * ow * static_cast<std::int64_t>(es),
                    static_cast<std::size_t>(ow) * es);
    });
  };

  try {
    // work the caller queued on its stream (this plan's workspace) comes first
    TC_CUDA_CHECK(cudaEventRecord(st.ev_caller, caller));
    TC_CUDA_CHECK(cudaStreamWaitEvent(st.comp, st.ev_caller, 0));
    for (std::int64_t j = 0; j < jobs + kSlots; ++j) {
      const int slot = static_cast<int>(j % kSlots);
      if (j >= kSlots) {  // the slot's previous job: its results, then the slot is free
        TC_CUDA_CHECK(cudaEventSynchronize(st.ev_d2h[slot]));
        if (j - kSlots < jobs) unpack(j - kSlots, slot);
      }
      if (j >= jobs) continue;
      // the slot's last D2H is done, so its H2D, compute and D2H before it are too: the
      // buffers of the slot are free without device-side waits
      pack(j, slot);
      TC_CUDA_CHECK(cudaMemcpyAsync(st.dev_in[slot].get(), st.pin_in[slot].get(), in_bytes,
                                    cudaMemcpyHostToDevice, st.h2d));
      TC_CUDA_CHECK(cudaEventRecord(st.ev_h2d[slot], st.h2d));
      TC_CUDA_CHECK(cudaStreamWaitEvent(st.comp, st.ev_h2d[slot], 0));
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
      TC_CUDA_CHECK(cudaMemcpyAsync(st.pin_out[slot].get(), st.dev_out[slot].get(), out_bytes,
                                    cudaMemcpyDeviceToHost, st.d2h));
      TC_CUDA_CHECK(cudaEventRecord(st.ev_d2h[slot], st.d2h));
    }
  } catch (...) {
    st.drain();  // no copy may still target the pinned buffers or the caller's arrays
    throw;
  }
}

}  // namespace cuda
}  // namespace tc
