// Device images padded for a plan in one pass: a gather kernel writes every padded element
// (border and interior) from the source through the row/column source indices (HostGather's
// row_src / col_src, -1: the fill value), into a group of padded images small enough to stay in
// L2 (16 MB), which the method then runs as a stack. Replaces full() + a strided copy of the
// whole stack (two passes and a padded copy of all of it: ~1.4 ms of a 3.7 ms 64 x 2048² fp16
// 'same' stack on the H100). Padded rows start 128 bytes apart (kPitchBytes): a padded width
// such as 4098 fp32 is not a multiple of 16 bytes, and the methods' vector paths (cp.async,
// float4 loads) take only 16-byte aligned rows, so an unpitched 'same' image ran on their
// scalar fallbacks. A method that maps the padding itself (CudaPlan::run_device_mapped) gets the
// indices instead, and no copy is made.
#include <algorithm>
#include <cstring>

#include "cuda/runtime/common.cuh"

namespace tc {
namespace cuda {

namespace {

constexpr std::size_t kGroupBytes = std::size_t{16} << 20;
constexpr int kThreads = 256;
constexpr std::int64_t kPitchBytes = 128;

// kV = 16 / sizeof(T) elements per thread, a block's threads side by side in each of its kV
// steps (every warp access contiguous), all loads issued before the stores: kV loads in flight
// per thread. One 2-byte element per thread (the first version) left each thread one dependent
// load chain (indices, then source) and ran at ~230 GB/s (37 us per 2062² fp16 image on the
// H100: more than the stack's correlation).
template <class T>
__global__ void pad_gather_kernel(const T* __restrict__ src, std::int64_t src_bstride,
                                  std::int64_t src_rs, T* __restrict__ dst, std::int64_t ph,
                                  std::int64_t pw, std::int64_t ld,
                                  const std::int64_t* __restrict__ row_src,
                                  const std::int64_t* __restrict__ col_src, T fill) {
  constexpr int kV = 16 / sizeof(T);
  const std::int64_t b = blockIdx.z;
  const T* s = src + b * src_bstride;
  T* d = dst + b * ph * ld;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kThreads * kV;
  for (std::int64_t r = blockIdx.y; r < ph; r += gridDim.y) {
    const std::int64_t sr = row_src[r];
    const T* srow = s + (sr < 0 ? 0 : sr) * src_rs;
    T* drow = d + r * ld;
    for (std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kThreads * kV + threadIdx.x;
         c0 < pw; c0 += step) {
      T v[kV];
#pragma unroll
      for (int u = 0; u < kV; ++u) {
        const std::int64_t c = c0 + u * kThreads;
        const std::int64_t sc = c < pw ? col_src[c] : -1;
        v[u] = sr < 0 || sc < 0 ? fill : srow[sc];
      }
#pragma unroll
      for (int u = 0; u < kV; ++u)
        if (c0 + u * kThreads < pw) drow[c0 + u * kThreads] = v[u];
    }
  }
}

template <class T>
void launch(const HostGather& g, void* dst, std::int64_t ph, std::int64_t pw, std::int64_t ld,
            const std::int64_t* rows, const std::int64_t* cols, std::int64_t n,
            std::int64_t first, std::uint64_t fill_bits_, cudaStream_t stream) {
  constexpr std::int64_t kV = 16 / sizeof(T);
  T fill;
  std::memcpy(&fill, &fill_bits_, sizeof(T));
  const dim3 grid(
      static_cast<unsigned>(std::min<std::int64_t>((pw + kThreads * kV - 1) / (kThreads * kV),
                                                   64)),
      static_cast<unsigned>(std::min<std::int64_t>(ph, 65535)), static_cast<unsigned>(n));
  const T* src = static_cast<const T*>(g.src.data) + first * g.src_batch_stride;
  pad_gather_kernel<T><<<grid, kThreads, 0, stream>>>(src, g.src_batch_stride,
                                                      g.src.row_stride, static_cast<T*>(dst),
                                                      ph, pw, ld, rows, cols, fill);
  TC_CUDA_LAUNCH_CHECK();
}

}  // namespace

void CudaPlan::device_gather(const HostGather& g, const Tensor2D& out,
                             std::int64_t out_batch_stride, std::int64_t batch,
                             cudaStream_t stream) {
  const std::size_t es = dtype_size(out.dtype);
  const std::int64_t ph = ih_, pw = iw_;
  // the index vectors, uploaded when they change (a Python Plan passes the same ones)
  const std::size_t nidx = static_cast<std::size_t>(ph + pw);
  if (pad_index_host_.size() != nidx ||
      std::memcmp(pad_index_host_.data(), g.row_src, ph * sizeof(std::int64_t)) ||
      std::memcmp(pad_index_host_.data() + ph, g.col_src, pw * sizeof(std::int64_t))) {
    std::vector<std::int64_t> idx(nidx);
    std::copy(g.row_src, g.row_src + ph, idx.begin());
    std::copy(g.col_src, g.col_src + pw, idx.begin() + ph);
    pad_index_host_.clear();
    pad_index_.ensure(nidx * sizeof(std::int64_t));
    // stream-ordered after any earlier gather that read the old indices
    TC_CUDA_CHECK(cudaStreamSynchronize(stream));
    TC_CUDA_CHECK(cudaMemcpy(pad_index_.get(), idx.data(), nidx * sizeof(std::int64_t),
                             cudaMemcpyHostToDevice));
    pad_index_host_ = std::move(idx);
  }
  const auto* rows = pad_index_.get<std::int64_t>();
  const std::int64_t* cols = rows + ph;
  const std::uint64_t fill = fill_bits(g.fill, out.dtype);
  if (run_device_mapped(g, rows, cols, fill, out, out_batch_stride, batch, stream))
    return;  // the method read the padding through the indices itself
  const std::int64_t per = kPitchBytes / static_cast<std::int64_t>(es);
  const std::int64_t ld = (pw + per - 1) / per * per;  // elements between padded rows
  const std::size_t image_bytes = static_cast<std::size_t>(ph * ld) * es;
  const std::int64_t group = std::max<std::int64_t>(
      1, std::min<std::int64_t>({batch, static_cast<std::int64_t>(kGroupBytes / image_bytes),
                                 65535}));
  pad_group_.ensure(static_cast<std::size_t>(group) * image_bytes);
  for (std::int64_t b0 = 0; b0 < batch; b0 += group) {
    const std::int64_t n = std::min(group, batch - b0);
    void* group = pad_group_.get();
    if (es == 2) launch<std::uint16_t>(g, group, ph, pw, ld, rows, cols, n, b0, fill, stream);
    else if (es == 4) launch<std::uint32_t>(g, group, ph, pw, ld, rows, cols, n, b0, fill, stream);
    else if (es == 8) launch<std::uint64_t>(g, group, ph, pw, ld, rows, cols, n, b0, fill, stream);
    else throw ValueError("padding on the device takes real storage (2, 4 or 8 bytes)");
    Tensor2D in = out;
    in.data = pad_group_.get();
    in.rows = ph;
    in.cols = pw;
    in.row_stride = ld;
    in.on_device = true;
    Tensor2D o = out;
    o.data = static_cast<char*>(out.data) + b0 * out_batch_stride * static_cast<std::int64_t>(es);
    run_device_batch(in, ph * ld, o, out_batch_stride, n, stream);
  }
}

}  // namespace cuda
}  // namespace tc
