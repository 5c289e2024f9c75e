"""A few launches for Nsight Compute (profiling aid, not a benchmark):
    ncu --section SpeedOfLight --section WarpStateStats python benchmarks/ncu_gpu_core.py"""
import numpy as np
import torch

import tensorconv as tc

x = torch.rand((4096, 4096), device="cuda")
g = np.exp(-0.5 * ((np.arange(55) - 27) / 9.0) ** 2)
for method, kernel in (("naive_shmem", np.random.default_rng(0).random((15, 15))),
                       ("separable", np.outer(g, g))):
    p = tc.plan(kernel, x.shape, mode="valid", method=method, precision="fp32")
    p(x)
torch.cuda.synchronize()
