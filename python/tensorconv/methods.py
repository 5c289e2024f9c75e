"""The method table, read from the C++ registry (the only place a method is declared)."""

from __future__ import annotations

from typing import NamedTuple

from . import _core

# The core's precisions (csrc/core/types.hpp), in its order: tensorconv.PRECISIONS.
PRECISIONS: tuple[str, ...] = tuple(p.name for p in _core.precisions())


class MethodInfo(NamedTuple):
    """One row of the method registry (`methods` returns them).

    The fields are the members of the same names of the core's ``MethodRow``
    (csrc/core/registry.hpp), so a new field is a member there and a line here.

    Attributes
    ----------
    name : str
        The name ``method=`` takes.
    device : str
        ``'cpu'`` or ``'cuda'``.
    precisions : tuple of str
        The precisions it computes in (empty for ``simd_u8``: uint8 through `filter2d_u8`); on a
        GPU older than a precision needs (`precision_min_cc`), that precision is left out.
    available : bool
        Whether it can run in this build on this machine.
    reason : str
        Why it cannot run here (``''`` when available).
    summary : str
        What it does, in one line.
    entry : str
        The function that reaches it: ``'correlate2d'`` (also `convolve2d` and `plan`),
        ``'filter2d_u8'`` or ``'filters.bilateral'``.
    note : str
        Which code path runs here and why (e.g. AVX-512 or AVX2).
    complex_native : bool
        Takes complex data itself (else as real correlations of the parts).
    takes_factors : bool
        Its plan takes the kernel's rank factors.
    translation_invariant : bool
        The same arithmetic for every output wherever it sits: tiles (`tensorconv.dask`) give
        the one-call bits.
    min_compute_capability : int
        The oldest GPU it runs on (80: compute capability 8.0); 0 for CPU methods.
    precision_min_cc : tuple of (str, int)
        Precisions that need a newer GPU than `min_compute_capability`, with the compute
        capability each needs (toeplitz_tc: fp32 and fp64 on sm_90's f64 tensor-core shapes).
    boundaries : str
        How ``'same'`` and ``'full'`` reach a device image (CUDA methods): ``'padded copy'``
        (one gather pass writes the padded image, then the method runs on it), or how the method
        maps the padding as it stages tiles; ``''`` for CPU methods.

    Examples
    --------
    >>> import tensorconv as tc
    >>> m = next(m for m in tc.methods() if m.name == "direct")
    >>> m.device, m.precisions, m.available
    ('cpu', ('fp16fp32', 'fp32', 'fp64'), True)
    """
    name: str
    device: str  # "cpu" or "cuda"
    precisions: tuple[str, ...]
    available: bool
    reason: str  # why it is unavailable here; "" when available
    summary: str
    entry: str = "correlate2d"  # the function that reaches it (simd_u8: filter2d_u8)
    note: str = ""  # which code path runs here and why (e.g. AVX2 or portable)
    complex_native: bool = False  # takes complex data itself (else as real parts, see Plan)
    takes_factors: bool = False  # its plan takes the kernel's rank factors (_factors.py)
    # same arithmetic for every output wherever it sits: tiles (tensorconv.dask) match one call
    translation_invariant: bool = False
    # when the bits hold only under translations by multiples of a period (translation_period)
    exact_note: str = ""
    # takes a stack of per-image kernels in one plan and one call (else one plan per kernel)
    kernel_stack: bool = False
    # the oldest GPU it runs on, e.g. 80 (compute capability 8.0); 0 for CPU methods
    min_compute_capability: int = 0
    # ((precision, compute capability), ...): precisions that need a newer GPU than that
    precision_min_cc: tuple = ()
    # how 'same' / 'full' reach a device image: "padded copy", or how the method maps them
    boundaries: str = ""

    def translation_period(self, precision: str, kh: int, kw: int,
                           complex_data: bool = False) -> tuple:
        """(rows, columns): translations of the image by multiples of these give this method's
        outputs bit for bit, for that precision and kernel shape ((1, 1): any translation).
        Meaningful for ``translation_invariant`` methods only.

        >>> import tensorconv as tc
        >>> rows = {m.name: m for m in tc.methods()}
        >>> rows["direct"].translation_period("fp64", 5, 5)
        (1, 1)
        >>> rows["naive_shmem"].translation_period("fp32", 15, 15)  # Winograd pairs rows
        (2, 1)
        """
        return tuple(_core.translation_period(self.name, precision, int(kh), int(kw),
                                              bool(complex_data)))


def methods() -> list[MethodInfo]:
    """Every registered method, with its device, precisions and whether it can run here.

    The registry in the C++ core is the one place a method is declared; `methods`, dispatch,
    ``auto``, the tests and the benchmarks all read it. Methods this build or machine cannot run
    are listed too, with the reason.

    Returns
    -------
    list of MethodInfo
        In registry order.

    Examples
    --------
    >>> import tensorconv as tc
    >>> names = [m.name for m in tc.methods()]
    >>> "direct" in names and "im2tensor_fused" in names
    True
    >>> fft = next(m for m in tc.methods() if m.name == "fft")
    >>> fft.device, fft.complex_native
    ('cuda', True)
    >>> fft.available or fft.reason != ""            # unavailable methods say why
    True
    """
    return [MethodInfo(**{f: getattr(row, f) for f in MethodInfo._fields})
            for row in _core.methods()]


_ROWS: tuple | None = None


def _rows() -> tuple:
    """The registry's rows for the dispatch paths, read once per process: what they use (names,
    devices, precisions, availability, capabilities) is settled at import (the CUDA libraries'
    directories are set then), and every call that builds a plan reads the rows, so building
    them again (about 0.15 ms) would be most of a cached call's overhead. (`methods` reads them
    afresh: a row's note follows TENSORCONV_FORCE_AVX2 / _PORTABLE as they are set.)"""
    global _ROWS
    if _ROWS is None:
        _ROWS = tuple(methods())
    return _ROWS


def takes_complex(m: MethodInfo) -> str:
    """How a method takes complex data (complex64 with fp32, complex128 with fp64): natively
    (e.g. fft's C2C transforms), as real correlations of the parts (every other correlate2d
    method with fp32 or fp64; tensorconv.Plan says which decomposition), or not at all ("")."""
    if m.entry != "correlate2d" or not any(p in m.precisions for p in ("fp32", "fp64")):
        return ""
    return "native" if m.complex_native else "as real parts"


def _built_targets() -> list:
    """(compute capability, kind) per CMAKE_CUDA_ARCHITECTURES entry of this build: kind "sass"
    (runs on the same major, this minor or later), "sass-a" (the "a" targets: that GPU only) or
    "ptx" (compiled by the driver for that capability and every later one)."""
    out = []
    for entry in filter(None, str(getattr(_core, "CUDA_ARCHS", "")).split(",")):
        arch, _, kind = entry.strip().partition("-")
        cc = int(arch.rstrip("af"))
        if kind in ("", "real"):
            out.append((cc, "sass-a" if arch[-1] in "af" else "sass"))
        if kind in ("", "virtual"):  # "a" PTX (compute_90a) runs on that GPU only
            out.append((cc, "sass-a" if arch[-1] in "af" else "ptx"))
    return out


def _archs_from(low: int, targets: list) -> str:
    """The GPUs that `targets` (as `_built_targets` gives them) run code needing compute
    capability `low` on: SASS of the same major from `low` on, "a" SASS on that GPU only, and
    everything from the oldest PTX that is itself at least `low` (older PTX lacks that code)."""
    ptx = [cc for cc, kind in targets if kind == "ptx" and cc >= low]
    top = min(ptx) if ptx else None
    sass = sorted({(cc, k) for cc, k in targets if k != "ptx" and (top is None or cc < top)
                   and (cc >= low or (k == "sass" and cc // 10 >= low // 10))})
    names = [f"sm_{cc}" if k == "sass-a" else f"sm_{max(cc, low)}-{cc // 10}9" for cc, k in sass]
    if top is not None:
        names.append(f"sm_{top}+")
    return ", ".join(names) or "none"


def gpu_archs(m: MethodInfo) -> str:
    """The GPUs a CUDA method of this build runs on, e.g. "sm_80+" or "sm_90" ("" for CPU
    methods, "none" when the build has no code its compute capability allows), then those of
    each precision that needs a newer GPU, e.g. "sm_80+ (fp32, fp64: sm_90, sm_100-109, sm_120+)".

    >>> import tensorconv as tc
    >>> from tensorconv.methods import _archs_from
    >>> _archs_from(80, [(80, "sass"), (80, "ptx"), (90, "sass-a"), (120, "sass"), (120, "ptx")])
    'sm_80+'
    >>> _archs_from(90, [(80, "sass"), (80, "ptx"), (90, "sass-a"), (120, "sass"), (120, "ptx")])
    'sm_90, sm_120+'
    >>> _archs_from(90, [(80, "ptx")])  # compute_80 PTX has no sm_90 code
    'none'
    """
    if m.device != "cuda" or not _core.WITH_CUDA:
        return ""
    targets = _built_targets()
    out = _archs_from(max(m.min_compute_capability, 1), targets)
    by_cc: dict = {}
    for precision, cc in m.precision_min_cc:
        by_cc.setdefault(cc, []).append(precision)
    extra = [f"{', '.join(ps)}: {_archs_from(cc, targets)}" for cc, ps in sorted(by_cc.items())]
    return out + (f" ({'; '.join(extra)})" if extra else "")


def methods_table() -> str:
    """`methods` as a Markdown table.

    Columns: method, device, precisions, how it takes complex data, whether tiles give the
    one-call bits (tile-exact), whether a stack of per-image kernels runs natively, how 'same'
    and 'full' reach a device image (a padded copy, or the padding mapped in the method), the GPUs
    this build's code for it runs on (GPU archs: the build's CMAKE_CUDA_ARCHITECTURES and the
    method's minimum compute capability), and whether it is available here (or why not).

    Returns
    -------
    str
        The table.

    Examples
    --------
    >>> import tensorconv as tc
    >>> print(tc.methods_table().splitlines()[0])
    | method | device | precisions | complex | tile-exact | per-image kernels | same/full on device | GPU archs | available |
    >>> "| direct | cpu |" in tc.methods_table()
    True
    """
    lines = ["| method | device | precisions | complex | tile-exact | per-image kernels | "
             "same/full on device | GPU archs | available |", "|" + "---|" * 9]
    for m in methods():
        avail = "yes" if m.available else f"no: {m.reason}"
        if m.available and m.note:
            avail += f" ({m.note})"
        precs = ", ".join(m.precisions) if m.precisions else f"uint8, via {m.entry}"
        cplx = takes_complex(m) or "no"
        exact = "yes" if m.translation_invariant else ("no" if m.entry == "correlate2d" else "-")
        if m.translation_invariant and m.exact_note:
            exact += f" ({m.exact_note})"
        per = ("native" if m.kernel_stack else "one plan per kernel") \
            if m.entry == "correlate2d" else "-"
        bnd = (m.boundaries or "-") if m.entry == "correlate2d" else "-"
        archs = gpu_archs(m) or "-"
        lines.append(f"| {m.name} | {m.device} | {precs} | {cplx} | {exact} | {per} | {bnd} "
                     f"| {archs} | {avail} |")
    return "\n".join(lines)
