"""Runs each bilateral plan once (for ncu): python benchmarks/harness/ncu_bilateral.py SIZE R"""
import sys

import numpy as np
import torch

import tensorconv as tc
from tensorconv.filters.bilateral import spatial_weights

size, r = int(sys.argv[1]), int(sys.argv[2])
ws = spatial_weights(max(r / 3, 0.5), r)
img = torch.rand((size + 2 * r, size + 2 * r), device="cuda", dtype=torch.float64)
for m, prec, dt in (("bilateral_cuda", "fp32", torch.float32),
                    ("bilateral_tc_32x8x16", "fp16fp32", torch.float16),
                    ("bilateral_tc_16x16x16", "fp16fp32", torch.float16)):
    p = tc._core.make_filter_plan(m, "filters.bilateral", ws, size + 2 * r, size + 2 * r, prec,
                                  0.1)
    x = img.to(dt).contiguous()
    out = torch.empty((size, size), dtype=dt, device="cuda")
    p.run(x.data_ptr(), size + 2 * r, size + 2 * r, size + 2 * r, out.data_ptr(), size, size,
          size, str(dt).replace("torch.", ""), True, torch.cuda.current_stream().cuda_stream)
torch.cuda.synchronize()
print("ok")
