"""tensorconv.astropy's CUDA kernels (nan_mark, the weight scatter, the finish with its window
recompute) once per storage dtype and boundary on small CuPy images, for compute-sanitizer:

    compute-sanitizer --tool memcheck python tests/sanitize/astropy_sanitize.py

Exits non-zero when a result differs from astropy's (same bounds as tests/test_astropy.py)."""

import sys
import warnings

import cupy as cp
import numpy as np
from astropy.convolution import Gaussian2DKernel, convolve, convolve_fft

from tensorconv import astropy as tca

warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
x = 0.1 + 0.9 * rng.random((37, 53))
x[rng.random(x.shape) < 0.05] = np.nan
x[10:25, 20:40] = np.nan  # larger than the kernel: windows with no valid weight
k = Gaussian2DKernel(1.2)
ok = True
for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
    for b in (None, "fill", "wrap", "extend"):
        ref = convolve(x, k, boundary=b)
        got = cp.asnumpy(tca.convolve(cp.asarray(x.astype(dt)), k, boundary=b,
                                      method="naive_shmem"))
        same = np.array_equal(np.isnan(got), np.isnan(ref))
        f = np.isfinite(ref)
        err = float(np.max(np.abs(got[f] - ref[f]) / np.abs(ref[f])))
        print(f"convolve {dt.__name__} {b}: NaN pattern {'ok' if same else 'DIFFERS'}, "
              f"max rel {err:.2e}", flush=True)
        ok &= same and err <= tol
    ref = convolve_fft(x, k, min_wt=1e-3)
    got = cp.asnumpy(tca.convolve_fft(cp.asarray(x.astype(dt)), k, min_wt=1e-3))
    same = np.array_equal(np.isnan(got), np.isnan(ref))
    print(f"convolve_fft {dt.__name__}: NaN pattern {'ok' if same else 'DIFFERS'}", flush=True)
    ok &= same
sys.exit(0 if ok else 1)
