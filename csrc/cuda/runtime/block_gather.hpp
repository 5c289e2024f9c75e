// One padded row gathered from several host blocks (HostGather::blocks; tensorconv.dask's chunk
// and its neighbours): host_pipeline.cu packs each padded row this way, so a chunk's halo is
// read straight from its neighbouring blocks and every pixel is copied once, as a whole-image
// call copies it. Plain C++ (tests/native/block_gather_check.cpp checks it on the CPU).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/registry.hpp"

namespace tc {

// A run of padded columns read by one memcpy: `len` columns from column `src` on of block
// column `blk` (blk -1: the fill value).
struct ColumnRun {
  std::int64_t dst, len, blk, src;
};

// The padded columns as runs: consecutive columns of one block column whose local columns
// rise by one (the interior and a neighbour's halo: one run each; a 'symm' edge reflected
// column by column), and runs of fill.
inline std::vector<ColumnRun> column_runs(const HostGather& g, std::int64_t cols) {
  std::vector<ColumnRun> runs;
  for (std::int64_t c = 0; c < cols; ++c) {
    const bool fill = g.col_src[c] < 0;
    const std::int64_t blk = fill ? -1 : g.col_blk[c], src = fill ? -1 : g.col_src[c];
    if (!runs.empty()) {
      ColumnRun& r = runs.back();
      if (r.blk == blk && (fill || r.src + r.len == src)) {
        ++r.len;
        continue;
      }
    }
    runs.push_back({c, 1, blk, src});
  }
  return runs;
}

// Padded row `pr` into `dst` (row_src -1: all fill). `fill` is the fill value's bit pattern
// in the storage dtype (es bytes).
inline void gather_block_row(char* dst, const HostGather& g, std::int64_t pr,
                             const std::vector<ColumnRun>& runs, std::size_t es,
                             std::uint64_t fill) {
  auto put_fill = [&](std::int64_t c0, std::int64_t n) {
    for (std::int64_t c = c0; c < c0 + n; ++c) std::memcpy(dst + c * es, &fill, es);
  };
  const std::int64_t lr = g.row_src[pr];
  if (lr < 0) {
    for (const ColumnRun& r : runs) put_fill(r.dst, r.len);
    return;
  }
  const std::int64_t base = g.row_blk[pr] * g.block_cols;
  for (const ColumnRun& r : runs) {
    if (r.blk < 0) {
      put_fill(r.dst, r.len);
      continue;
    }
    const std::int64_t b = base + r.blk;
    const char* row = static_cast<const char*>(g.blocks[b]) +
                      (lr * g.block_dims[3 * b + 2] + r.src) * static_cast<std::int64_t>(es);
    std::memcpy(dst + r.dst * es, row, static_cast<std::size_t>(r.len) * es);
  }
}

}  // namespace tc
