"""Translation invariance: a method whose registry row says translation_invariant computes every
output by the same arithmetic wherever it sits, so the same window at another position (a shifted
image, a tile of it, another width whose column tails fall elsewhere) gives the same bits. This is
what makes tensorconv.dask's chunked result equal to one call (direct's AVX2 column
tails used to differ in the last bits). Every flagged registry method x precision; GPU rows are
gpu-marked."""

import numpy as np
import pytest

import tensorconv as tc
from conftest import float_method_params

_DTYPE = {"fp16": np.float16, "fp16fp32": np.float16, "bf16": np.float32, "tf32": np.float32,
          "fp32": np.float32, "fp64": np.float64}
_FLAGGED = {m.name for m in tc.methods() if m.translation_invariant}


def _params():
    return [p for p in float_method_params() if p.values[0] in _FLAGGED]


def _check_shifts(method, precision, kshape, seed=0):
    rng = np.random.default_rng(seed)
    big = rng.standard_normal((320, 540)).astype(_DTYPE[precision])
    k = rng.standard_normal(kshape)
    h, w = 300, 517  # the example: 9x13 kernel, valid mode

    def corr(a):
        return np.asarray(tc.correlate2d(a, k, "valid", method=method, precision=precision))

    ref = corr(big[:h, :w])
    checked = 0
    for s0, s1 in [(1, 1), (3, 5), (2, 7), (5, 0), (0, 3), (4, 11)]:
        # the same windows, shifted: the whole sub-image moved, and a smaller tile of it (its
        # column tails and row groups fall on other outputs)
        for out in (corr(big[s0:s0 + h, s1:s1 + w]), corr(big[s0:h, s1:w])):
            r = ref[s0:, s1:]
            o = out[: r.shape[0], : r.shape[1]]
            diff = int(np.count_nonzero(o != r))
            assert np.array_equal(o, r, equal_nan=True), (
                f"{method} {precision} kernel {kshape} shift {(s0, s1)}: {diff} of {o.size} "
                "outputs differ from the same windows at another position")
            checked += o.size
    assert checked > 6 * 250_000


def test_registry_flags_translation_invariant_methods():
    assert {"direct", "naive", "naive_shmem"} <= _FLAGGED
    # transforms and atomics cannot promise it
    assert not _FLAGGED & {"fft_cpu", "fft", "im2tensor_atomic"}
    assert "tile-exact" in tc.methods_table()


@pytest.mark.parametrize("method,precision", _params())
@pytest.mark.parametrize("kshape", [(9, 13), (4, 6), (1, 17)])
def test_same_window_same_bits(method, precision, kshape):
    _check_shifts(method, precision, kshape)


@pytest.mark.parametrize("path", ["TENSORCONV_FORCE_AVX2", "TENSORCONV_FORCE_PORTABLE"])
@pytest.mark.parametrize("precision", ["fp64", "fp32", "fp16fp32"])
def test_direct_every_cpu_path(monkeypatch, path, precision):
    """direct's other code paths (AVX2 tiles with scalar column tails, the portable loops) keep
    the same arithmetic for every output too."""
    monkeypatch.setenv(path, "1")
    tc.clear_plan_cache()
    note = {m.name: m for m in tc.methods()}["direct"].note
    if path.endswith("AVX2") and "AVX2" not in note:
        pytest.skip(f"this CPU has no AVX2/FMA path: direct runs {note!r}")
    assert ("AVX2" if path.endswith("AVX2") else "portable") in note, note
    try:
        _check_shifts("direct", precision, (9, 13), seed=1)
    finally:
        monkeypatch.delenv(path)
        tc.clear_plan_cache()


# ---- generated from the registry: every tile-exact method x precision x code path ----------
#
# Every row of tensorconv.methods() with translation_invariant (tensorconv.dask.exact_methods()),
# every precision it lists, every kernel size of 1..63 at which the method's code takes another
# path (below), and odd and even row and column offsets: a translated window gives the same bits
# as the same window of the untranslated call, with finite data and with NaN/inf in the image.
# A row may state a translation period, translation_period(precision, kh, kw) -> (py, px), for
# methods exact only for translations by multiples of it (a Winograd step over pairs of output
# rows: (2, 1)); multiples are asserted bit for bit, other offsets only reported (and held to
# the method's accuracy bound against scipy).
#
# The code paths, from csrc:
#   direct (csrc/cpu/direct*.cpp): no size thresholds; register tiles of 4 output rows x vectors
#     of 16 floats / 8 doubles (AVX-512; AVX2 8 / 4) with column tails, so offsets 1..7 in rows
#     and columns and kernel widths around the vector widths cover its tails.
#   naive (naive.cu): one loop for every size; fp16 pairs two neighbouring outputs in a half2
#     (odd column offsets move the pairing).
#   naive_shmem (naive_shmem.cu): taps in chunks of CU x CV = 32 x 32 (sizes 32 / 33 and 63 take
#     one, two chunks), 8 output rows per thread (fp64 4), fp16 half2 pairs; fp32 odd square
#     kernels of 3..FIXED_MAX (17) taps run the fixed-shape variant (naive_fixed.cu), one
#     instantiation per size: direct loops unrolled below 9 taps, looped from 9, runs of 2
#     kernel rows at 17 (3 below), Winograd F(2, 3) over pairs of output rows where k % 3 == 0
#     (9, 15).

from tensorconv import _autotune  # noqa: E402
from tensorconv.metrics import relative_l2  # noqa: E402

_CHUNK = 32  # naive_shmem.cu: CU = CV = 32 taps per chunk
_GENERIC_SIZES = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (7, 7), (8, 8), (9, 9), (15, 15),
                  (16, 16), (17, 17), (31, 31), (_CHUNK, _CHUNK), (_CHUNK + 1, _CHUNK + 1),
                  (63, 63), (1, 17), (17, 1), (9, 13), (4, 6), (_CHUNK + 1, 2), (2, 63)]
# offsets (rows, columns) in units of the period: odd and even in each direction
_OFFSETS = [(0, 1), (1, 0), (1, 1), (2, 2), (3, 5), (2, 7), (5, 2), (4, 11)]


def _kernel_sizes(method: str, precision: str) -> list:
    sizes = list(_GENERIC_SIZES)
    if method == "naive_shmem" and precision == "fp32":
        # every fixed-shape instantiation, and the first sizes past it
        sizes += [(k, k) for k in range(3, _autotune.FIXED_MAX + 1, 2)]
        sizes += [(_autotune.FIXED_MAX + 1, _autotune.FIXED_MAX + 1),
                  (_autotune.FIXED_MAX + 2, _autotune.FIXED_MAX + 2)]
    out = []
    for s in sizes:
        if s not in out:
            out.append(s)
    return out


def _period(row, precision: str, kh: int, kw: int) -> tuple:
    f = getattr(row, "translation_period", None)
    if f is None:
        return (1, 1)
    py, px = f(precision, kh, kw) if callable(f) else f
    return int(py), int(px)


def _generated_params():
    params = []
    for m in tc.methods():
        if not m.translation_invariant or m.entry != "correlate2d":
            continue
        for p in m.precisions:
            for kh, kw in _kernel_sizes(m.name, p):
                marks = [pytest.mark.gpu] if m.device == "cuda" else []
                if not m.available:
                    marks.append(pytest.mark.skip(reason=f"{m.name}: {m.reason}"))
                params.append(pytest.param(m.name, p, (kh, kw), marks=marks,
                                           id=f"{m.name}-{p}-{kh}x{kw}"))
    return params


def test_generated_cover_every_exact_method():
    """The generated cases are the registry's exact methods (dask's list), every precision."""
    import importlib.util

    got = {(v.values[0], v.values[1]) for v in _generated_params()}
    rows = {m.name: m for m in tc.methods()}
    want = {(n, p) for n in (m.name for m in tc.methods() if m.translation_invariant
                             and m.entry == "correlate2d") for p in rows[n].precisions}
    assert got == want and want
    if importlib.util.find_spec("dask") is not None:
        import tensorconv.dask as tcd

        assert {n for n, _ in got} == set(tcd.exact_methods())
    # naive_shmem fp32: every fixed-shape size 3..17
    sizes = {v.values[2] for v in _generated_params() if v.values[:2] == ("naive_shmem", "fp32")}
    assert {(k, k) for k in range(3, 18, 2)} <= sizes


def _translation_case(method, precision, kshape, nonfinite: bool, report):
    row = {m.name: m for m in tc.methods()}[method]
    kh, kw = kshape
    py, px = _period(row, precision, kh, kw)
    rng = np.random.default_rng(kh * 131 + kw)
    # outputs: enough rows and columns for several row groups / column tiles and their tails
    oh, ow = 37, 45
    sy = max(o[0] for o in _OFFSETS) * py
    sx = max(o[1] for o in _OFFSETS) * px
    big = rng.standard_normal((oh + kh - 1 + sy + 3 * py, ow + kw - 1 + sx + 3 * px))
    if nonfinite:
        for v, (r, c) in zip((np.nan, np.inf, -np.inf, np.nan), ((5, 7), (20, 31), (33, 2),
                                                                  (11, 40))):
            big[r % big.shape[0], c % big.shape[1]] = v
    big = big.astype(_DTYPE[precision])
    k = rng.standard_normal(kshape)
    h, w = oh + kh - 1, ow + kw - 1

    def corr(a):
        return np.asarray(tc.correlate2d(a, k, "valid", method=method, precision=precision))

    ref = corr(big[:h, :w])
    checked = 0
    offsets = [(a * py, b * px) for a, b in _OFFSETS]
    odd = [(a, b) for a in range(py) for b in range(px) if (a, b) != (0, 0)]  # non-multiples
    for dy, dx in offsets + odd:
        r = ref[dy:, dx:]
        for out in (corr(big[dy:dy + h, dx:dx + w]), corr(big[dy:h, dx:w])):
            o = out[: r.shape[0], : r.shape[1]]
            if (dy, dx) in odd:
                diff = int(np.count_nonzero(~((o == r) | (np.isnan(o) & np.isnan(r)))))
                report.append(((dy, dx), diff, o.size))
                finite = np.isfinite(r) & np.isfinite(o)
                assert relative_l2(o[finite], r[finite].astype(np.float64)) <= 10 * \
                    tc_rel_l2(method, precision), (method, precision, kshape, (dy, dx))
                continue
            diff = int(np.count_nonzero(~((o == r) | (np.isnan(o) & np.isnan(r)))))
            assert diff == 0, (
                f"{method} {precision} kernel {kshape} offset {(dy, dx)} (period {(py, px)})"
                f"{' with NaN/inf' if nonfinite else ''}: {diff} of {o.size} outputs differ "
                "from the same windows at another position")
            checked += o.size
    assert checked > 0


def tc_rel_l2(method, precision):
    from bounds import rel_l2_bound

    return rel_l2_bound(method, precision)


@pytest.mark.parametrize("nonfinite", [False, True], ids=["finite", "nan-inf"])
@pytest.mark.parametrize("method,precision,kshape", _generated_params())
def test_registry_translation_exact(method, precision, kshape, nonfinite, record_property):
    report = []
    _translation_case(method, precision, kshape, nonfinite, report)
    # offsets that are not multiples of a stated period: documented, not asserted
    for offset, diff, n in report:
        record_property(f"non-multiple offset {offset}", f"{diff} of {n} outputs differ")
