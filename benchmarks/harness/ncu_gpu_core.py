"""A few launches for Nsight Compute (profiling aid, not a benchmark):
    ncu --section SpeedOfLight --section WarpStateStats python benchmarks/harness/ncu_gpu_core.py"""
import numpy as np
import torch

import tensorconv as tc


def gaussian(k):
    g = np.exp(-0.5 * ((np.arange(k) - (k - 1) / 2) / max(k / 6, 0.5)) ** 2)
    return np.outer(g, g) / g.sum() ** 2


x = torch.rand((4096, 4096), device="cuda")
for method, kernel in (("naive_shmem", np.random.default_rng(0).random((15, 15))),
                       ("separable", gaussian(55)), ("separable", gaussian(3))):
    p = tc.plan(kernel, x.shape, mode="valid", method=method, precision="fp32")
    p(x)
torch.cuda.synchronize()
