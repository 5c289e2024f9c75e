"""The one table of accuracy bounds the tests assert, per precision (and per method where a
method's arithmetic differs). Each number is a ceiling with headroom over what was measured;
the measured values are in docs/accuracy.md and the closing notes."""

from tensorconv._bounds import (MAPE_PCT, MAPE_PCT_METHOD, NONDETERMINISTIC,  # noqa: F401
                               REL_L2, REL_L2_METHOD, mape_bound, rel_l2_bound)

# correlate2d's bounds (MAPE_PCT, MAPE_PCT_METHOD, REL_L2) live in the package, where
# method='auto' reads them too: python/tensorconv/_bounds.py.

# ---- tensorconv.filters (tests/test_filters.py) -------------------------------------------
# gaussian against scipy.ndimage.gaussian_filter in float64: MAPE (%) of order-0 results on
# images in [0, 1], and max |error| / (max |image| sum |kernel|) for every order (derivatives
# cross zero, so their MAPE is meaningless; direct fp32 at sigma 20: up to 6e-6). fp32 MAPE: the goal's
# 1e-5 % for the separable passes; other methods keep their correlate2d bound
# (mape_bound) as the ceiling.
GAUSSIAN_MAPE_PCT = {"fp64": 1e-10, "fp32": 1e-5, "fp16fp32": 0.05}
GAUSSIAN_MAX_ERR = {"fp64": 1e-11, "fp32": 2e-5, "fp16fp32": 2e-3}
# filters.gaussian's fused filter (separable_boundary) named explicitly: each pass sums its taps
# one by one in the storage precision, so fp32's MAPE grows with the taps (H100: 7.4e-6 % at 47
# taps, 1.08e-5 % at 61 taps on a 67 x 91 image in 'constant' mode). 'auto' takes it in fp32 up
# to 23 taps only (<= 5e-6 % measured), where the GAUSSIAN_MAPE_PCT goal applies.
GAUSSIAN_FUSED_MAPE_PCT = {"fp64": 1e-10, "fp32": 2e-5}
# bilateral against the float64 NumPy reference: max relative error on images in [0.05, 1]
# (fp32 is the goal 1e-5; fp16fp32 stores image and output in float16 (2^-11 each) and
# rounds the products' operands to fp16).
BILATERAL_MAX_REL = {"fp64": 1e-12, "fp32": 1e-5, "fp16fp32": 5e-3}
# cv2.bilateralFilter (float32, BORDER_REFLECT_101 = mode 'mirror', d = 2 radius + 1, radius =
# 6 sigma_spatial so that its disc and our square window differ by weights < 1e-7): max |error|
# on images in [0, 1]; cv2 interpolates the range weight from a table.
BILATERAL_CV2_MAX_ABS = 1e-5

# ---- tensorconv.astropy (tests/test_astropy.py) ---------------------------------------------
# convolve / convolve_fft against astropy.convolution (float64): max relative error per pixel on
# images in [0.1, 1] with NaN; NaN patterns must be identical.
ASTROPY_MAX_REL = {"fp64": 1e-12, "fp32": 1e-5}
