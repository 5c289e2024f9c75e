"""im2tensor variants (Seznec et al. 2022) x every precision: odd shapes that exercise every block
geometry (several x-blocks, tall kernels that overflow the shared-memory S block, images
narrower than a P_block), bit-identical repeats, the atomic variant's bounded run-to-run
variation, the workspace of Table 4, and a USC-SIPI subset. The full 39-image MAPE table per
kernel size is tests/test_accuracy.py (it enumerates these methods from the registry)."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound
from conftest import accuracy_kernel, check_vs_scipy, require_available, scipy_reference

import tensorconv as tc
from tensorconv.metrics import mape

VARIANTS = ("im2tensor", "im2tensor_shmem", "im2tensor_fused", "im2tensor_atomic",
            "im2tensor_cublas")
PRECISIONS = tc.PRECISIONS

# (image, kernel): what each exercises in csrc/cuda/methods/im2tensor/im2tensor.cuh
SHAPES = [
    ((67, 93), (3, 5)),      # one x-block, ragged last c-block
    ((61, 301), (7, 70)),    # kw > 64: two x-blocks, C rows > 2
    ((45, 700), (5, 131)),   # three x-blocks
    ((333, 37), (300, 4)),   # tall kernel: S block too big for shared memory -> global reads
    ((20, 19), (20, 19)),    # 1x1 output
    ((1, 200), (1, 9)),      # one row, kh = 1 padded to K
    ((150, 1), (17, 1)),     # one column
    ((129, 257), (55, 55)),  # the paper's largest size
]

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", VARIANTS)
def test_odd_shapes_vs_scipy(method, precision):
    require_available(method)
    rng = np.random.default_rng(2022)
    for ishape, kshape in SHAPES:
        check_vs_scipy(method, precision, rng, ishape, kshape)


# The mma.sync path of fused / atomic (fp16, fp16fp32, bf16; kh, kw <= 64): a CTA walks nh
# 128-column passes carrying the diagonals that cross between them, over dB output rows. Plan
# options (im2tensor.passes, im2tensor.db) reach geometries the defaults pick only on other image
# sizes: one pass, an odd number, ragged last strips, dB not a multiple of the 8 warps or of anything.
MMA_SHAPES = [
    ((150, 700), (15, 15)),  # strips of 2-4 passes, the last one ragged
    ((90, 530), (25, 9)),    # x padded 9 -> 16, y 25 -> 32
    ((130, 640), (64, 64)),  # the largest tile (8 n-tiles of x, 4 chunks of y)
    ((70, 400), (7, 57)),    # wide and short: the carry spans two reader rounds
    ((40, 300), (1, 1)),     # no edges at all
]


@pytest.mark.parametrize("nh, db", [(1, 7), (2, 16), (3, 33), (4, 64)])
@pytest.mark.parametrize("precision", ("fp16", "fp16fp32", "bf16"))
@pytest.mark.parametrize("method", ("im2tensor_fused", "im2tensor_atomic"))
def test_mma_pass_geometries(method, precision, nh, db):
    require_available(method)
    opts = {"im2tensor.passes": nh, "im2tensor.db": db}
    rng = np.random.default_rng(nh * 100 + db)
    for ishape, kshape in MMA_SHAPES:
        check_vs_scipy(method, precision, rng, ishape, kshape, opts)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", [v for v in VARIANTS if v != "im2tensor_atomic"])
def test_repeats_bit_identical(method, precision):
    require_available(method)
    rng = np.random.default_rng(5)
    image, kernel = rng.random((300, 517)), rng.random((25, 70))
    p = tc.plan(kernel, image.shape, mode="valid", method=method, precision=precision)
    x = image.astype(p.storage)
    first = p(x)
    for _ in range(4):
        assert np.array_equal(p(x), first, equal_nan=False)


# The atomic variant adds a pixel's partial sums (one per P_block crossing its diagonal, at most
# a few) in the order the blocks finish: runs may differ in the last bits of the storage type.
ATOMIC_SPREAD = {"fp16": 2.0 ** -9, "fp16fp32": 2.0 ** -9, "bf16": 2.0 ** -21,
                 "tf32": 2.0 ** -21, "fp32": 2.0 ** -21, "fp64": 2.0 ** -50}


@pytest.mark.parametrize("precision", PRECISIONS)
def test_atomic_repeats_bounded(precision):
    require_available("im2tensor_atomic")
    rng = np.random.default_rng(6)
    image, kernel = rng.random((300, 517)), rng.random((25, 70))
    p = tc.plan(kernel, image.shape, mode="valid", method="im2tensor_atomic",
                precision=precision)
    x = image.astype(p.storage)
    runs = np.stack([np.asarray(p(x), dtype=np.float64) for _ in range(5)])
    spread = (runs.max(axis=0) - runs.min(axis=0)) / np.abs(runs[0]).max()
    assert spread.max() <= ATOMIC_SPREAD[precision], spread.max()
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    for r in runs:
        assert mape(r, ref) <= mape_bound("im2tensor_atomic", precision)


@pytest.mark.parametrize("precision", ("fp16", "fp16fp32", "fp64"))
def test_workspace_table4(precision):
    """Table 4's ordering at a smaller size: im2tensor holds P, fused only the partial sums C
    (rows shared per eq. 19), atomic nothing."""
    for m in ("im2tensor", "im2tensor_fused", "im2tensor_atomic"):
        require_available(m)
    kernel = np.random.default_rng(0).random((15, 15))
    ws = {m: tc.plan(kernel, (1024, 1024), mode="valid", method=m, precision=precision)
          .workspace_bytes for m in ("im2tensor", "im2tensor_shmem", "im2tensor_fused",
                                     "im2tensor_atomic")}
    hR = wR = 1024 - 15 + 1
    part = 8 if precision == "fp64" else 4
    assert ws["im2tensor_atomic"] == 0
    assert ws["im2tensor"] == ws["im2tensor_shmem"] >= hR * 15 * 1024 * (2 if precision ==
                                                                          "fp16" else part)
    if precision == "fp64":  # WMMA: one P_block row covers the 15-wide kernel, two C rows (eq. 19)
        assert ws["im2tensor_fused"] == 2 * hR * wR * part
    else:  # mma.sync path: C holds only the kw - 1 columns each side of the CTA boundaries
        assert 0 < ws["im2tensor_fused"] <= hR * (1024 // 128) * 2 * 14 * 4
    assert ws["im2tensor_fused"] < ws["im2tensor"] / 2


@pytest.mark.slow
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", VARIANTS)
def test_usc_sipi_subset(method, precision, usc_images):
    require_available(method)
    for name, image in usc_images[:3]:
        for k in (3, 15, 55):
            out = tc.correlate2d(image, accuracy_kernel(k), "valid", method=method,
                                 precision=precision)
            err = mape(out, scipy_reference(name, image, k))
            assert err <= mape_bound(method, precision), (name, k, err)


def test_bad_precision_names_the_choices():
    require_available("im2tensor_fused")
    with pytest.raises(ValueError, match="precision"):
        tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), "valid", method="im2tensor_fused",
                       precision="fp8")
