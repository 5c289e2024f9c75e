"""filter2d_u8 (simd_u8): every algorithm x division case x border x kernel size against an exact
integer NumPy reference; remainders (odd widths), one-row and one-column images; sep and pairs on
every vector tier this CPU has (AVX-512 and AVX2, the latter forced by TENSORCONV_FORCE_AVX2);
the vector tiers and the portable path equal; dispatch, registry and error messages."""

from __future__ import annotations

import numpy as np
import pytest

import tensorconv as tc

BORDERS = ("constant", "replicate", "reflect101")
SIZES = list(range(3, 16))  # odd and even, 3..15
AVX2_ALGOS = ("alg1", "alg2", "alg3", "sep", "pairs", "wide")
TIERED_ALGOS = ("sep", "pairs")  # AVX-512 versions exist


def _index(x: np.ndarray, n: int, border: str) -> np.ndarray:
    """Source index of each position (outside [0, n) too); -1 reads the constant 0."""
    if border == "constant":
        return np.where((x >= 0) & (x < n), x, -1)
    if border == "replicate":
        return np.clip(x, 0, n - 1)
    if n == 1:
        return np.zeros_like(x)
    p = 2 * (n - 1)
    x = np.mod(x, p)
    return np.where(x < n, x, p - x)


def reference(image, kernel, divisor, border="reflect101", anchor=None):
    """clip(floor(sum(image * kernel) / divisor), 0, 255) in int64, borders by index mapping."""
    img = np.asarray(image, np.int64)
    k = np.asarray(kernel, np.int64)
    kh, kw = k.shape
    h, w = img.shape
    ay, ax = anchor if anchor is not None else (kh // 2, kw // 2)
    ys = _index(np.arange(-ay, h + kh - 1 - ay), h, border)
    xs = _index(np.arange(-ax, w + kw - 1 - ax), w, border)
    padded = img[np.maximum(ys, 0)][:, np.maximum(xs, 0)]
    padded[ys < 0, :] = 0
    padded[:, xs < 0] = 0
    acc = np.zeros((h, w), np.int64)
    for u in range(kh):
        for v in range(kw):
            if k[u, v]:
                acc += k[u, v] * padded[u:u + h, v:v + w]
    return np.clip(np.floor_divide(acc, divisor), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def avx2():
    if tc.simd_u8_path() not in ("avx2", "avx512"):
        pytest.skip("no vector path in use here: " + _simd_row().note)


def _tiers():
    """Vector tiers to test here: the default one, and AVX2 forced when the default is AVX-512."""
    default = tc.simd_u8_path()
    return {"avx512": ["avx512", "avx2"], "avx2": ["avx2"]}.get(default, [])


@pytest.fixture(params=_tiers() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no vector path in use here"))])
def tier(request, monkeypatch):
    """Runs the test on each vector tier (TENSORCONV_FORCE_AVX2=1 for 'avx2' on AVX-512 CPUs)."""
    if request.param == "avx2" and tc.simd_u8_path() == "avx512":
        monkeypatch.setenv("TENSORCONV_FORCE_AVX2", "1")
    assert tc.simd_u8_path() == request.param
    return request.param


def _simd_row():
    return next(m for m in tc.methods() if m.name == "simd_u8")


def kernel_for(algo: str, kh: int, kw: int, rng) -> np.ndarray:
    """A kernel the algorithm can compute exactly (16-bit sums for alg1/alg2, 8-bit pairs that
    do not saturate maddubs, an integer outer product for sep, 16-bit values for wide)."""
    if algo in ("alg1", "alg2", "pairs"):
        lim = max(1, 120 // (kh * kw))
        return rng.integers(-lim, lim + 1, (kh, kw)).astype(np.int8)
    if algo == "alg3":
        return rng.integers(-64, 64, (kh, kw)).astype(np.int8)
    if algo == "sep":
        a = rng.integers(-2, 5, kh)
        b = rng.integers(-3, 6, kw)
        a[kh // 2] = b[kw // 2] = 3  # never all zero
        return np.outer(a, b).astype(np.int16)
    return rng.integers(-3000, 3000, (kh, kw)).astype(np.int16)


def divisor_for(kernel, algo: str, case: str) -> int:
    """The smallest divisor whose Algorithm 4 case (for the IR width this kernel uses) is `case`."""
    for d in ([16, 256, 1] if case == "A" else range(3, 400)):
        if tc.filter2d_u8_info(kernel, d, algorithm=algo)["division_case"] == case:
            return d
    raise AssertionError(f"no divisor gives case {case}")


@pytest.mark.parametrize("algo,k", [(a, k) for a in AVX2_ALGOS for k in SIZES
                                     if a != "alg1" or k <= 5])  # alg1 > 5x5 raises (below)
def test_algorithm_case_border_size(algo, k, tier):
    rng = np.random.default_rng(100 * k + AVX2_ALGOS.index(algo))
    image = rng.integers(0, 256, (13, 45), dtype=np.uint8)  # 45: blocks + strips + tail
    kernels = [kernel_for(algo, k, k, rng)]
    if algo == "pairs":  # both IR widths: 16 bits above, 32 bits here
        kernels.append(kernel_for("alg3", k, k, rng))
    for kernel in kernels:
        for case in ("A", "B", "C"):
            d = divisor_for(kernel, algo, case)
            info = tc.filter2d_u8_info(kernel, d, algorithm=algo)
            assert info["algorithm"] == algo and info["division_case"] == case
            for border in BORDERS:
                out = tc.filter2d_u8(image, kernel, d, border=border, algorithm=algo)
                assert out.dtype == np.uint8 and out.shape == image.shape
                np.testing.assert_array_equal(out, reference(image, kernel, d, border),
                                              err_msg=f"{algo} k={k} case {case} {border}")


@pytest.mark.parametrize("algo", AVX2_ALGOS)
def test_ir_widths(algo, avx2):
    """16-bit IRs read signed and unsigned, and 32-bit IRs, where the algorithm offers them."""
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (17, 70), dtype=np.uint8)
    kernels = {
        "s16": np.array([[1, 2, 1], [2, -4, 2], [1, 2, 1]], np.int8),
        "s16sep": np.outer([1, 2, 1], [-1, 0, 1]).astype(np.int8),  # Sobel
        "u16": np.full((3, 3), 20, np.int8),  # sums up to 45900: unsigned 16-bit
        "s32": np.full((3, 3), 60, np.int8),
    }
    seen = set()
    for name, kernel in kernels.items():
        try:
            info = tc.filter2d_u8_info(kernel, 200, algorithm=algo)
        except ValueError:
            continue
        seen.add((info["ir_bits"], info["ir_unsigned"]))
        out = tc.filter2d_u8(image, kernel, 200, algorithm=algo)
        np.testing.assert_array_equal(out, reference(image, kernel, 200), err_msg=name)
    expected = {"alg1": {(16, False), (16, True)}, "alg2": {(16, False), (16, True)},
                "alg3": {(32, False)}, "sep": {(16, False), (16, True), (32, False)},
                "pairs": {(16, False), (16, True), (32, False)},
                "wide": {(32, False)}}[algo]
    assert seen == expected


@pytest.mark.parametrize("algo", AVX2_ALGOS + ("portable", "auto"))
def test_shapes_remainders_and_anchors(algo, avx2):
    """Widths around every block size, one-row and one-column images, rectangular kernels and
    off-centre anchors."""
    rng = np.random.default_rng(7)
    shapes = [(1, 1), (1, 2), (1, 77), (77, 1), (2, 3), (5, 15), (6, 16), (7, 17), (9, 27),
              (8, 31), (4, 32), (3, 33), (11, 63), (10, 65), (9, 97), (3, 131)]
    kshapes = [(3, 3), (5, 5), (2, 7), (5, 1), (1, 4), (4, 5), (9, 9), (15, 15), (7, 12)]
    for ks in kshapes:
        if algo == "alg1" and max(ks) > 5:
            continue
        kernel = kernel_for(algo if algo in AVX2_ALGOS else "alg3", *ks, rng)
        for shape in shapes:
            image = rng.integers(0, 256, shape, dtype=np.uint8)
            anchor = (int(rng.integers(ks[0])), int(rng.integers(ks[1])))
            border = BORDERS[int(rng.integers(3))]
            d = int(rng.choice([1, 7, 64, 300]))
            out = tc.filter2d_u8(image, kernel, d, border=border, anchor=anchor, algorithm=algo)
            np.testing.assert_array_equal(out, reference(image, kernel, d, border, anchor),
                                          err_msg=f"{algo} {ks} {shape} {anchor} {border} {d}")


@pytest.mark.parametrize("algo", TIERED_ALGOS + ("auto",))
def test_tier_widths_cases_borders(algo, tier):
    """sep and pairs on each vector tier: every kernel size, division case and border, image
    widths around the vector and block sizes of both tiers (16/32/64 columns), so the chunk
    loops, overlapped tails, scalar fallbacks and edge strips all run."""
    rng = np.random.default_rng(40 + TIERED_ALGOS.index(algo) if algo in TIERED_ALGOS else 49)
    widths = [1, 5, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 96, 127, 128, 129, 200, 257]
    for i, k in enumerate(SIZES):
        kernels = [kernel_for("sep" if algo == "sep" else "pairs", k, k, rng)]
        if algo == "pairs":
            kernels.append(kernel_for("alg3", k, k, rng))  # 32-bit IRs
        if algo == "auto":
            b = np.array([1] + [int(rng.integers(1, 9)) for _ in range(k - 2)] + [1])
            kernels.append(np.outer(b, b[::-1] if k % 3 else b))  # symmetric or not
        for kernel in kernels:
            for case in ("A", "B", "C"):
                d = divisor_for(kernel, "auto" if algo == "auto" else algo, case)
                w = widths[(3 * i + "ABC".index(case)) % len(widths)]
                image = rng.integers(0, 256, (int(rng.integers(1, 9)), w), dtype=np.uint8)
                info = tc.filter2d_u8_info(kernel, d, algorithm=algo)
                assert info["path"] == (tier if info["algorithm"] in TIERED_ALGOS else "avx2")
                for border in BORDERS:
                    out = tc.filter2d_u8(image, kernel, d, border=border, algorithm=algo)
                    np.testing.assert_array_equal(
                        out, reference(image, kernel, d, border),
                        err_msg=f"{tier} {algo} k={k} case {case} {border} w={w}")


def test_vector_tiers_and_portable_equal(monkeypatch, avx2):
    rng = np.random.default_rng(11)
    image = rng.integers(0, 256, (96, 517), dtype=np.uint8)
    tiers = {"avx2": "TENSORCONV_FORCE_AVX2", "portable": "TENSORCONV_FORCE_PORTABLE"}
    for k in (3, 4, 5, 7, 9, 12, 15):
        for kernel in (rng.integers(-128 // k, 128 // k, (k, k)).astype(np.int8),
                       rng.integers(-100, 100, (k, k)).astype(np.int8),
                       np.outer(np.arange(1, k + 1) % 4 + 1, np.arange(k) % 3 + 1),
                       rng.integers(-900, 900, (k, k)).astype(np.int16)):
            for border in BORDERS:
                fast = tc.filter2d_u8(image, kernel, 97, border=border)
                for path, var in tiers.items():
                    monkeypatch.setenv(var, "1")
                    assert tc.simd_u8_path() == path
                    np.testing.assert_array_equal(
                        tc.filter2d_u8(image, kernel, 97, border=border), fast,
                        err_msg=f"{path} k={k} {border}")
                    monkeypatch.delenv(var)
    np.testing.assert_array_equal(fast, reference(image, kernel, 97, border))


def test_auto_choices(avx2):
    g = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1])
    info = tc.filter2d_u8_info(g, 256)
    assert info["algorithm"] == "sep" and info["separable"] and info["division_case"] == "A"
    a, b = info["factors"]
    np.testing.assert_array_equal(np.outer(a, b), g)
    sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.int8)  # not an outer product
    assert tc.filter2d_u8_info(sharpen, 1)["algorithm"] == "pairs"
    assert tc.filter2d_u8_info(np.ones((3, 3), np.int8), 9)["algorithm"] == "sep"
    info = tc.filter2d_u8_info(np.eye(7, dtype=np.int8) * 3, 21)
    assert info["algorithm"] == "pairs" and info["ir_bits"] == 16
    info = tc.filter2d_u8_info(np.eye(9, dtype=np.int8) * 100, 9)
    assert info["algorithm"] == "pairs" and info["ir_bits"] == 32
    assert tc.filter2d_u8_info(np.eye(3, dtype=np.int16) * 1000, 9)["algorithm"] == "wide"
    # adjacent 8-bit coefficients whose pair sum would saturate maddubs -> 16-bit coefficients
    saturating = np.array([[127, 127, 0], [0, 127, 127], [127, 0, 127]], np.int8)
    assert tc.filter2d_u8_info(saturating, 1)["algorithm"] == "wide"
    assert tc.filter2d_u8_info(sharpen, 1, algorithm="alg1")["register_blocking"] == 3


def test_separable_symmetric_and_power_of_two_taps(avx2):
    """Algorithm 7's row pass folds mirrored columns of symmetric rows and shifts for powers of
    two: binomial (Gaussian) kernels, odd and even, 16- and 32-bit IRs, every division case."""
    rng = np.random.default_rng(8)
    image = rng.integers(0, 256, (21, 83), dtype=np.uint8)
    for row in ([1, 2, 1], [1, 3, 3, 1], [1, 4, 6, 4, 1], [1, 6, 15, 20, 15, 6, 1],
                [2, -1, 2], [1, 8, 28, 56, 70, 56, 28, 8, 1]):
        kernel = np.outer(np.abs(row), row)
        for case in ("A", "B", "C"):
            d = divisor_for(kernel, "sep", case)
            for border in BORDERS:
                out = tc.filter2d_u8(image, kernel, d, border=border, algorithm="sep")
                np.testing.assert_array_equal(out, reference(image, kernel, d, border),
                                              err_msg=f"{row} {case} {border}")


# Factors for the separable row/column pass forms: symmetric 3- and 5-tap ones (the sym
# passes, taps x1, x2, mullo, zero and negative), and others (generic passes).
SEP_FACTORS = ([1, 2, 1], [3, 5, 3], [1, 0, 1], [-1, 4, -1], [1, 4, 6, 4, 1], [2, 1, 0, 1, 2],
               [-1, -2, 9, -2, -1], [1, 2, 3], [1, 3, 3, 1], [0, 1, 0], [2, 7, 2])


def test_separable_plane_and_sym_passes(tier):
    """16-bit separable kernels run as even/odd column planes; symmetric 3- and 5-tap factors
    with a centred anchor take the compile-time form. Every factor pair, centred and off-centre
    anchors, quotients that need clipping (divisor 1) or not, every division case, and widths
    around the vector sizes (the rows' output offsets in a cache line vary when w % 64 != 0,
    so the aligned steps start at different columns; odd widths leave a scalar column)."""
    rng = np.random.default_rng(21)
    widths = [30, 31, 32, 33, 63, 64, 65, 66, 95, 127, 128, 129, 130, 191, 250]
    n = 0
    for i, a in enumerate(SEP_FACTORS):
        for j, b in enumerate(SEP_FACTORS):
            kernel = np.outer(a, b)
            info = tc.filter2d_u8_info(kernel, 1, algorithm="sep")
            w = widths[(i * len(SEP_FACTORS) + j) % len(widths)]
            image = rng.integers(0, 256, (int(rng.integers(2, 7)), w), dtype=np.uint8)
            kh, kw = kernel.shape
            anchors = [None, (int(rng.integers(kh)), int(rng.integers(kw)))]
            cases = [c for c in "ABC" if c != "A" or info["ir_bits"] == 16]
            divisors = [1] + [divisor_for(kernel, "sep", c) for c in cases]
            for d in divisors:
                for anchor in anchors:
                    border = BORDERS[n % 3]
                    n += 1
                    out = tc.filter2d_u8(image, kernel, d, border=border, anchor=anchor,
                                         algorithm="sep")
                    np.testing.assert_array_equal(
                        out, reference(image, kernel, d, border, anchor),
                        err_msg=f"{tier} {a} x {b} d={d} {anchor} {border} w={w}")


def test_binomial3_fused_pass(tier):
    """The 3x3 binomial Gaussian with divisor 2^4 .. 2^8 takes a fused pass on AVX-512 from 192
    columns on (64-column chunks walking down bands of rows; the first and last chunk read the
    border columns, the others start where the output rows start a cache line). Widths on both
    sides of 192 and of the chunk grid, odd widths, heights below and above a band, every
    border, saturated images (the largest sum's high byte), outputs at every offset in a cache
    line, strides whose rows share L1 sets (shorter bands), off-centre anchors and divisors
    outside 2^4 .. 2^8 (the two-pass form), and 1-3 threads."""
    rng = np.random.default_rng(23)
    kernel = np.outer([1, 2, 1], [1, 2, 1])
    widths = [191, 192, 193, 200, 255, 256, 257, 319, 333, 511, 640, 1024, 1031, 2048]
    n = 0
    for i, w in enumerate(widths):
        for h in (1, 2, 3, 5, 70, 131):
            if w >= 1024 and h < 70:
                continue
            border = BORDERS[n % 3]
            d = (16, 32, 64, 128, 256, 8, 512)[n % 7]
            anchor = (0, 0) if n % 11 == 5 else None
            n += 1
            off = int(rng.integers(64))  # the output is allocated at the input's line offset
            buf = rng.integers(0, 256, h * w + 64, dtype=np.uint8)
            image = buf[off:off + h * w].reshape(h, w)
            if i % 4 == 3:
                image[:] = 255
            ref = reference(image, kernel, d, border, anchor)
            for threads in (1, 2, 3):
                out = tc.filter2d_u8(image, kernel, d, border=border, anchor=anchor,
                                     threads=threads)
                np.testing.assert_array_equal(
                    out, ref, err_msg=f"{tier} w={w} h={h} d={d} {border} {anchor} t={threads}")
    # From 2.5 Mpx on the fused pass runs on several threads (bands per chunk of rows).
    image = rng.integers(0, 256, (1301, 1931), dtype=np.uint8)
    for border in ("constant", "reflect101"):
        ref = reference(image, kernel, 16, border)
        for threads in (2, 3):
            np.testing.assert_array_equal(tc.filter2d_u8(image, kernel, 16, border=border,
                                                         threads=threads), ref)


def test_threads_large_images(avx2):
    """Images large enough to run on several threads (home row ranges per thread, chunks taken
    from the others' ranges when a thread finishes early): every thread count gives the
    reference, for sep (plane and natural forms) and pairs."""
    rng = np.random.default_rng(22)
    image = rng.integers(0, 256, (611, 1283), dtype=np.uint8)
    for kernel, d in ((np.outer([1, 2, 1], [1, 2, 1]), 16),
                      (np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]), 256),
                      (np.outer([1, 6, 15, 20, 15, 6, 1], [1, 6, 15, 20, 15, 6, 1]), 4096),
                      (np.outer([1, 2, 3], [3, 1, 1, 2]), 37),
                      (np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.int8), 1)):
        ref = reference(image, kernel, d)
        for threads in (1, 2, 3, 5):
            np.testing.assert_array_equal(tc.filter2d_u8(image, kernel, d, threads=threads), ref,
                                          err_msg=f"{kernel.shape} threads={threads}")


def test_fast_path_matches_full_validation():
    """filter2d_u8's fast path (ndarray kernel of an exactly-converting dtype, int divisor, default
    anchor) gives what the fully validated call gives, and the core still rejects what the fast
    path lets through unchecked (16-bit range of int32/uint16 kernels)."""
    rng = np.random.default_rng(12)
    image = rng.integers(0, 256, (19, 70), dtype=np.uint8)
    for dtype in (np.int8, np.uint8, np.int16, np.uint16, np.int32):
        kernel = rng.integers(0, 50, (5, 3)).astype(dtype)
        fast = tc.filter2d_u8(image, kernel, 97)
        slow = tc.filter2d_u8(image, kernel.tolist(), np.int64(97), anchor=(2, 1))
        np.testing.assert_array_equal(fast, slow, err_msg=str(dtype))
        np.testing.assert_array_equal(fast, reference(image, kernel, 97), err_msg=str(dtype))
    np.testing.assert_array_equal(tc.filter2d_u8(image, kernel, 97, threads=2), fast)
    for dtype in (np.uint16, np.int32):
        with pytest.raises(ValueError, match="16 bits"):
            tc.filter2d_u8(image, np.full((3, 3), 40000, dtype), 1)
    with pytest.raises(ValueError, match="15"):
        tc.filter2d_u8(image, np.ones((3, 16), np.int8), 1)


def test_threads_and_strided_input():
    rng = np.random.default_rng(3)
    big = rng.integers(0, 256, (60, 200), dtype=np.uint8)
    view = big[::2, 3:150]  # non-contiguous: copied by the wrapper
    kernel = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.int8)
    ref = reference(view, kernel, 1)
    for threads in (None, 1, 2, 3):
        np.testing.assert_array_equal(tc.filter2d_u8(view, kernel, 1, threads=threads), ref)


def test_matches_opencv_borders_and_anchor():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(9)
    image = rng.integers(0, 256, (41, 67), dtype=np.uint8)
    kernel = rng.integers(-3, 4, (5, 4)).astype(np.int8)
    flags = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE,
             "reflect101": cv2.BORDER_REFLECT_101}
    for border, flag in flags.items():
        for anchor in ((2, 2), (0, 3), (4, 0)):
            # divisor 1: OpenCV's float sums are exact integers, so its rounding equals floor
            ours = tc.filter2d_u8(image, kernel, 1, border=border, anchor=anchor)
            theirs = cv2.filter2D(image, -1, kernel.astype(np.float32),
                                  anchor=(anchor[1], anchor[0]), borderType=flag)
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{border} {anchor}")


def test_registry_row():
    row = _simd_row()
    assert row.available and row.reason == "" and row.device == "cpu"
    assert row.precisions == () and row.entry == "filter2d_u8"
    assert "path in use" in row.note
    assert "filter2d_u8" in tc.methods_table()
    image = np.random.default_rng(0).random((20, 20))
    with pytest.raises(ValueError, match="filter2d_u8"):
        tc.correlate2d(image, np.ones((3, 3)), method="simd_u8")
    from tensorconv._api import choose_method
    for precision in tc.PRECISIONS:
        for macs in (0.0, 1e12):
            try:
                assert choose_method(precision, False, macs) != "simd_u8"
            except ValueError:
                pass  # no method for this precision here


def test_forced_avx2_note(monkeypatch, avx2):
    monkeypatch.setenv("TENSORCONV_FORCE_AVX2", "1")
    assert tc.simd_u8_path() == "avx2"
    assert "AVX2 path in use" in _simd_row().note
    for kernel, algo in ((np.ones((3, 3), np.int8), "sep"), (np.eye(3, dtype=np.int8), "pairs"),
                         (np.eye(3, dtype=np.int8), "alg2")):
        info = tc.filter2d_u8_info(kernel, 9, algorithm=algo)
        assert info["algorithm"] == algo and info["path"] == "avx2"
    monkeypatch.delenv("TENSORCONV_FORCE_AVX2")
    if tc.simd_u8_path() == "avx512":
        assert "AVX-512 path in use" in _simd_row().note
        assert tc.filter2d_u8_info(np.eye(3, dtype=np.int8), 9)["path"] == "avx512"
        assert tc.filter2d_u8_info(np.eye(3, dtype=np.int8), 9, algorithm="alg1")["path"] == "avx2"


def test_forced_portable_note(monkeypatch):
    monkeypatch.setenv("TENSORCONV_FORCE_PORTABLE", "1")
    assert tc.simd_u8_path() == "portable"
    assert "portable path in use" in _simd_row().note
    info = tc.filter2d_u8_info(np.ones((3, 3), np.int8), 9)
    assert info["algorithm"] == "portable" and info["path"] == "portable"
    with pytest.raises(ValueError, match="AVX2 path"):
        tc.filter2d_u8(np.zeros((4, 4), np.uint8), np.ones((3, 3), np.int8), 9, algorithm="alg2")


@pytest.mark.parametrize("call,exc,match", [
    (lambda img, k: tc.filter2d_u8(img.astype(np.int16), k, 1), TypeError, "uint8"),
    (lambda img, k: tc.filter2d_u8(img, k.astype(np.float32), 1), TypeError, "integer dtype"),
    (lambda img, k: tc.filter2d_u8(img[None], k, 1), ValueError, "2-D"),
    (lambda img, k: tc.filter2d_u8(img[:0], k, 1), ValueError, "empty"),
    (lambda img, k: tc.filter2d_u8(img, k[:0], 1), ValueError, "empty"),
    (lambda img, k: tc.filter2d_u8(img, k, 0), ValueError, "divisor"),
    (lambda img, k: tc.filter2d_u8(img, k, 2**31), ValueError, "divisor"),
    (lambda img, k: tc.filter2d_u8(img, k, 2.0), TypeError, "divisor"),
    (lambda img, k: tc.filter2d_u8(img, k, 1, border="wrap"), ValueError, "border"),
    (lambda img, k: tc.filter2d_u8(img, k, 1, anchor=(3, 0)), ValueError, "anchor"),
    (lambda img, k: tc.filter2d_u8(img, k, 1, anchor=(0.5, 0)), TypeError, "anchor"),
    (lambda img, k: tc.filter2d_u8(img, k, 1, threads=0), ValueError, "threads"),
    (lambda img, k: tc.filter2d_u8(img, np.ones((16, 3), np.int8), 1), ValueError, "15"),
    (lambda img, k: tc.filter2d_u8(img, np.full((3, 3), 40000), 1), ValueError, "16 bits"),
    (lambda img, k: tc.filter2d_u8(img, k, 1, algorithm="fft"), ValueError, "algorithm"),
    (lambda img, k: tc.filter2d_u8([[1, 2]], k, 1), TypeError, "NumPy"),
])
def test_errors(call, exc, match):
    image = np.zeros((8, 9), np.uint8)
    kernel = np.ones((3, 3), np.int8)
    with pytest.raises(exc, match=match):
        call(image, kernel)


def test_forced_algorithm_reasons(avx2):
    image = np.zeros((8, 9), np.uint8)
    with pytest.raises(ValueError, match="up to 5x5"):
        tc.filter2d_u8(image, np.ones((7, 7), np.int8), 49, algorithm="alg1")
    with pytest.raises(ValueError, match="beyond 16 bits"):
        tc.filter2d_u8(image, np.full((5, 5), 20, np.int8), 1, algorithm="alg2")
    with pytest.raises(ValueError, match="saturate maddubs"):
        tc.filter2d_u8(image, np.full((3, 3), 127, np.int8), 1, algorithm="alg3")
    with pytest.raises(ValueError, match="8 bits"):
        tc.filter2d_u8(image, np.full((3, 3), 300, np.int16), 1, algorithm="alg3")
    with pytest.raises(ValueError, match="outer product"):
        tc.filter2d_u8(image, np.eye(3, dtype=np.int8), 1, algorithm="sep")
