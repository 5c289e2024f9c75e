// The C++ gather of a padded image from a grid of host blocks (csrc/cuda/runtime/block_gather.hpp, what
// host_pipeline.cu packs for tensorconv.dask), built on the CPU as a small shared library so
// tests/test_dask.py can run it through ctypes with the Python side's row/column maps and
// compare it with the one call's padding (np.pad of the whole image). No CUDA needed.
#include <cstdint>
#include <cstring>

#include "cuda/runtime/block_gather.hpp"

extern "C" int tc_gather_blocks(const void* const* blocks, const std::int64_t* block_dims,
                                std::int64_t block_rows, std::int64_t block_cols,
                                const std::int64_t* row_blk, const std::int64_t* row_src,
                                const std::int64_t* col_blk, const std::int64_t* col_src,
                                std::int64_t rows, std::int64_t cols, double fill,
                                std::int64_t itemsize, void* out) {
  tc::HostGather g;
  g.blocks = blocks;
  g.block_dims = block_dims;
  g.block_rows = block_rows;
  g.block_cols = block_cols;
  g.row_blk = row_blk;
  g.row_src = row_src;
  g.col_blk = col_blk;
  g.col_src = col_src;
  std::uint64_t bits = 0;  // the fill in the storage dtype (float32 / float64 here)
  if (itemsize == 4) {
    const float f = static_cast<float>(fill);
    std::memcpy(&bits, &f, 4);
  } else if (itemsize == 8) {
    std::memcpy(&bits, &fill, 8);
  } else {
    return 1;
  }
  const auto runs = tc::column_runs(g, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    tc::gather_block_row(static_cast<char*>(out) + r * cols * itemsize, g, r, runs,
                         static_cast<std::size_t>(itemsize), bits);
  return static_cast<int>(runs.size() > 0 ? 0 : 2);
}
