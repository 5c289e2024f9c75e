// Stress check of csrc/cuda/runtime/staging_team.hpp (plain C++, no CUDA): many short jobs in a row,
// each piece must run exactly once and before run() returns. The team's first claim word kept
// the piece count apart from the generation, and a worker that read the last job's exhausted
// word could claim a piece of the next job: a piece ran twice and run() returned while one
// still ran (a Dask worker's SIGSEGV on the GPU machine). Then teams made and destroyed in a row
// (the workers were detached and outlived a destroyed team: SIGSEGV at exit). Exit status: 0
// when every piece ran once, 1 otherwise; argv[1]: jobs (default 200000).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/runtime/staging_team.hpp"

int main(int argc, char** argv) {
  const long jobs = argc > 1 ? std::atol(argv[1]) : 200000;
  tc::Team team(8);
  long bad = 0;
  for (long it = 0; it < jobs; ++it) {
    const int n = 2 + static_cast<int>(it % 7);
    std::vector<int> hits(n, 0);  // this frame dies when run() returns
    team.run(n, [&](std::int64_t i) { ++hits[static_cast<std::size_t>(i)]; });
    for (int i = 0; i < n; ++i) bad += hits[static_cast<std::size_t>(i)] != 1;
  }
  for (int rep = 0; rep < 200; ++rep) {  // each team joins its workers when destroyed
    tc::Team t(8);
    for (int it = 0; it < 20; ++it) {
      std::vector<int> hits(5, 0);
      t.run(5, [&](std::int64_t i) { ++hits[static_cast<std::size_t>(i)]; });
      for (int h : hits) bad += h != 1;
    }
  }
  std::printf("jobs %ld, pieces not run exactly once: %ld\n", jobs, bad);
  return bad != 0;
}
