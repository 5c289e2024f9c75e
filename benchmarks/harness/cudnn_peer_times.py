"""cuDNN (PyTorch conv2d, cudnn.benchmark) times at 4096² beside a standalone harness run
(benchmarks/harness/convmat_tune.cu), the same rule as the package's benchmark: CUDA events, 3 warm-ups,
median of 20, data on the device. Usage: python3 benchmarks/harness/cudnn_peer_times.py [k ...]"""
import sys

import torch

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
ks = [int(a) for a in sys.argv[1:]] or [3, 15]
for dtype in (torch.float16, torch.bfloat16, torch.float32):
    x = torch.rand((1, 1, 4096, 4096), device="cuda").to(dtype)
    for k in ks:
        w = torch.rand((1, 1, k, k), device="cuda").to(dtype)
        ts = []
        for r in range(23):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.nn.functional.conv2d(x, w)
            e1.record()
            e1.synchronize()
            if r >= 3:
                ts.append(e0.elapsed_time(e1))
        ts.sort()
        print(f"peer cudnn {str(dtype).split('.')[-1]:9s} k {k:2d}  {(ts[9] + ts[10]) / 2:.4f} ms")
