"""One im2tensor run per kernel size on a 4096x4096 device image, for ncu (by hand):
python benchmarks/harness/im2tensor_ncu_driver.py im2tensor_fused fp16fp32 15,55"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from im2tensor import Im2TensorRun, kernel_of, load_image  # noqa: E402

variant, prec, ks = sys.argv[1], sys.argv[2], [int(k) for k in sys.argv[3].split(",")]
img, _ = load_image(4096)
for k in ks:
    run = Im2TensorRun(variant, prec, img, kernel_of(k))
    run()
    torch.cuda.synchronize()
    del run
