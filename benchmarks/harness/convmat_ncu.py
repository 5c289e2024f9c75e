"""Launches for Nsight Compute (profiling aid, not a benchmark): convmat and convmat_rows,
fp16fp32, 4096², k = 15 and 55.   ncu --kernel-name regex:convmat python3 benchmarks/harness/convmat_ncu.py"""
import numpy as np
import torch

import tensorconv as tc

x = torch.rand((4096, 4096), device="cuda").half()
for k in (15, 55):
    kernel = np.random.default_rng(k).random((k, k))
    for method in ("convmat", "convmat_rows"):
        tc.plan(kernel, x.shape, mode="valid", method=method, precision="fp16fp32")(x)
torch.cuda.synchronize()
