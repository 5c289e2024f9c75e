"""The accuracy evaluation (im2tensor paper section 5.1, Table 5 and Fig. 11): every method x
precision x kernel size k, MAPE (eq. 20, %) of the valid correlation of each USC-SIPI misc image
against scipy.signal.correlate2d in float64, kernels uniform in [0, 1) from a fixed seed per
size; median and 95 % band (2.5th-97.5th percentile) over the images. The pytest accuracy suite
(tests/test_accuracy.py) and `python -m tensorconv.accuracy` both run evaluate().

Images come from datasets.load_usc_sipi's places (a path you pass, $TENSORCONV_DATA, the cache),
so a user's own copy of the data works with no repository checkout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .. import _bounds
from .._api import PRECISIONS
from ..datasets import cache_dir, load_usc_sipi
from ..metrics import mape

ORDER = PRECISIONS


def accuracy_kernel(k: int) -> np.ndarray:
    """The accuracy suite's k x k kernel: coefficients uniform in [0, 1), a fixed seed per size.

    Parameters
    ----------
    k : int
        Kernel side.

    Returns
    -------
    numpy.ndarray
        float64 (k, k); the same values on every call.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorconv.accuracy import accuracy_kernel
    >>> k = accuracy_kernel(3)
    >>> k.shape, bool((k >= 0).all() and (k < 1).all()), np.array_equal(k, accuracy_kernel(3))
    ((3, 3), True, True)
    """
    return np.random.default_rng(1000 + k).random((k, k))


def reference_dir() -> Path:
    import scipy

    d = cache_dir() / "refs" / f"scipy-{scipy.__version__}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def scipy_reference(name: str, image: np.ndarray, k: int) -> np.ndarray:
    """``scipy.signal.correlate2d(image, accuracy_kernel(k), 'valid')`` in float64, cached on disk.

    Cached per scipy version under the cache directory; the file is replaced atomically, so
    parallel workers may share it.

    Parameters
    ----------
    name : str
        The image's name (the cache file's key).
    image : numpy.ndarray
        float64 image.
    k : int
        Kernel side.

    Returns
    -------
    numpy.ndarray
        The valid correlation.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from tensorconv.accuracy import scipy_reference
    >>> os.environ["TENSORCONV_CACHE"] = tempfile.mkdtemp()
    >>> scipy_reference("ones", np.ones((5, 5)), 3).shape
    (3, 3)
    >>> _ = os.environ.pop("TENSORCONV_CACHE")
    """
    import scipy.signal

    f = reference_dir() / f"{name}_k{k}.npy"
    if f.exists():
        try:
            ref = np.load(f)
            if ref.shape == (image.shape[0] - k + 1, image.shape[1] - k + 1):
                return ref
        except (OSError, ValueError):
            pass
    ref = scipy.signal.correlate2d(image, accuracy_kernel(k), mode="valid")
    tmp = f.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, ref)
    tmp.replace(f)
    return ref


def evaluate(method: str, precision: str, k: int, images) -> dict:
    """One row of the accuracy table: `method` in `precision` with ``accuracy_kernel(k)``.

    MAPE (`tensorconv.metrics.mape`) of the valid correlation of each image against scipy in
    float64: its median over the images, the 95 % band (2.5th-97.5th percentile), the maximum,
    the bound the method is held to, and the images whose output was not finite (their MAPE
    counts as inf). Images smaller than the kernel are left out.

    Parameters
    ----------
    method : str
        A correlate2d method.
    precision : str
        One of the method's precisions.
    k : int
        Kernel side.
    images : iterable of (str, numpy.ndarray)
        (name, float64 image) pairs, e.g. from `load_usc_sipi`.

    Returns
    -------
    dict
        ``method``, ``precision``, ``k``, ``images``, ``mape_median``, ``mape_p2_5``,
        ``mape_p97_5``, ``mape_max``, ``non_finite``, ``bound``.

    Raises
    ------
    ValueError
        No image is at least k x k.
    AssertionError
        A method returned an output of the wrong shape.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from tensorconv.accuracy import evaluate, within_bound
    >>> os.environ["TENSORCONV_CACHE"] = tempfile.mkdtemp()
    >>> rng = np.random.default_rng(0)
    >>> images = [("a", rng.random((40, 40))), ("b", rng.random((32, 48)))]
    >>> row = evaluate("direct", "fp32", 5, images)
    >>> row["images"], within_bound(row)
    (2, True)
    >>> _ = os.environ.pop("TENSORCONV_CACHE")
    """
    import tensorconv as tc

    kernel = accuracy_kernel(k)
    values, bad = [], []
    for name, image in images:
        if k > min(image.shape):
            continue
        out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision)
        ref = scipy_reference(name, image, k)
        if tuple(out.shape) != ref.shape:
            raise AssertionError(f"{method} {precision} k={k} {name}: output shape "
                                 f"{tuple(out.shape)} != {ref.shape}")
        o = np.asarray(out, dtype=np.float64)
        if not np.isfinite(o).all():
            bad.append(name)
            values.append(np.inf)
        else:
            values.append(mape(o, ref))
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError(f"no image is at least {k}x{k}")
    fin = v[np.isfinite(v)] if np.isfinite(v).any() else np.array([np.inf])
    return {"method": method, "precision": precision, "k": int(k), "images": int(v.size),
            "mape_median": float(np.median(v)), "mape_p2_5": float(np.percentile(fin, 2.5)),
            "mape_p97_5": float(np.percentile(v, 97.5)) if np.isfinite(v).all() else float("inf"),
            "mape_max": float(v.max()), "non_finite": bad,
            "bound": _bounds.mape_bound(method, precision)}


def within_bound(row: dict) -> bool:
    """The accuracy suite's rule: median at most the bound, every image at most 5x the bound.

    Parameters
    ----------
    row : dict
        A row from `evaluate`.

    Returns
    -------
    bool

    Examples
    --------
    >>> from tensorconv.accuracy import within_bound
    >>> within_bound({"mape_median": 0.01, "mape_max": 0.04, "bound": 0.01})
    True
    >>> within_bound({"mape_median": 0.01, "mape_max": 0.06, "bound": 0.01})
    False
    """
    return row["mape_median"] <= row["bound"] and row["mape_max"] <= 5 * row["bound"]


def cases(methods=None, precisions=None, available_only=True) -> list:
    """The (method, precision) pairs of the registry's correlate2d methods.

    Parameters
    ----------
    methods : iterable of str, optional
        Keep only these methods.
    precisions : iterable of str, optional
        Keep only these precisions.
    available_only : bool, optional
        Only methods that can run here (default True).

    Returns
    -------
    list of tuple
        (method, precision), in registry order.

    Examples
    --------
    >>> from tensorconv.accuracy import cases
    >>> cases(methods=["direct"])
    [('direct', 'fp16fp32'), ('direct', 'fp32'), ('direct', 'fp64')]
    """
    import tensorconv as tc

    out = []
    for m in tc.methods():
        if m.entry != "correlate2d" or (available_only and not m.available):
            continue
        if methods is not None and m.name not in methods:
            continue
        out += [(m.name, p) for p in m.precisions if precisions is None or p in precisions]
    return out


def report(rows: list, out: Path, meta: dict | None = None, stem: str = "accuracy") -> list:
    """Write the accuracy results: JSON, a Table 5 style Markdown table and a Fig. 11 style PNG.

    The Markdown table holds the median MAPE per method x precision and k with the 95 % band;
    the PNG (when matplotlib is installed) the median and band against k, one panel per
    precision.

    Parameters
    ----------
    rows : list of dict
        Rows from `evaluate`.
    out : pathlib.Path
        The folder to write into (created).
    meta : dict, optional
        Extra fields for the JSON.
    stem : str, optional
        The files' name stem (default ``'accuracy'``).

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from tensorconv.accuracy import report
    >>> row = {"method": "direct", "precision": "fp64", "k": 3, "images": 1, "mape_median": 0.0,
    ...        "mape_p2_5": 0.0, "mape_p97_5": 0.0, "mape_max": 0.0, "non_finite": [],
    ...        "bound": 1e-10}
    >>> files = report([row], pathlib.Path(tempfile.mkdtemp()))
    >>> [f.name for f in files][:2]
    ['accuracy.json', 'accuracy.md']
    """
    import scipy

    import tensorconv as tc

    out.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (r["method"], ORDER.index(r["precision"]), r["k"]))
    doc = {"tensorconv": tc.__version__, "scipy": scipy.__version__, "numpy": np.__version__,
           "cuda_available": tc.cuda_available(), **(meta or {}), "rows": rows}
    files = [out / f"{stem}.json", out / f"{stem}.md"]
    files[0].write_text(json.dumps(doc, indent=1))
    files[1].write_text(table(rows))
    png = figure(rows, out / f"{stem}.png")
    return files + ([png] if png else [])


def table(rows: list) -> str:
    """The accuracy rows as a Markdown table (median MAPE per method x precision and k).

    Each cell holds the median with the 95 % band in brackets, and ``!`` where the suite's
    bound is missed.

    Parameters
    ----------
    rows : list of dict
        Rows from `evaluate`.

    Returns
    -------
    str

    Examples
    --------
    >>> from tensorconv.accuracy import table
    >>> row = {"method": "direct", "precision": "fp64", "k": 3, "images": 1, "mape_median": 0.0,
    ...        "mape_p2_5": 0.0, "mape_p97_5": 0.0, "mape_max": 0.0, "non_finite": [],
    ...        "bound": 1e-10}
    >>> print(table([row]).splitlines()[-1])
    | direct | fp64 | 1e-10 | 0 [0, 0] |
    """
    ks = sorted({r["k"] for r in rows})
    lines = ["MAPE % against scipy.signal.correlate2d in float64 (median over the images; "
             "95 % band in brackets; `!` where the suite's bound is missed)", "",
             "| method | precision | bound | " + " | ".join(f"k={k}" for k in ks) + " |",
             "|---|---|---|" + "---|" * len(ks)]
    for key in sorted({(r["method"], r["precision"]) for r in rows},
                      key=lambda mp: (mp[0], ORDER.index(mp[1]))):
        cells = []
        for k in ks:
            r = next((r for r in rows if (r["method"], r["precision"], r["k"]) == (*key, k)), None)
            cells.append("—" if r is None else
                         f"{r['mape_median']:.3g} [{r['mape_p2_5']:.2g}, {r['mape_p97_5']:.2g}]"
                         + ("" if within_bound(r) else " !"))
        lines.append(f"| {key[0]} | {key[1]} | {_bounds.mape_bound(*key):g} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def figure(rows: list, path: Path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    precs = [p for p in ORDER if any(r["precision"] == p for r in rows)]
    if not precs or len({r["k"] for r in rows}) < 1:
        return None
    cols = min(3, len(precs))
    nrow = -(-len(precs) // cols)
    fig, axes = plt.subplots(nrow, cols, figsize=(4.8 * cols, 3.6 * nrow), squeeze=False)
    for ax, p in zip(axes.flat, precs):
        for m in sorted({r["method"] for r in rows if r["precision"] == p}):
            sel = sorted((r for r in rows if r["method"] == m and r["precision"] == p),
                         key=lambda r: r["k"])
            ks = [r["k"] for r in sel]
            med = [max(r["mape_median"], 1e-16) for r in sel]
            lo = [max(r["mape_p2_5"], 1e-16) for r in sel]
            hi = [max(r["mape_p97_5"], 1e-16) for r in sel]
            (line,) = ax.plot(ks, med, marker="o", ms=2, lw=1, label=m)
            ax.fill_between(ks, lo, hi, color=line.get_color(), alpha=0.2)
        ax.axhline(_bounds.MAPE_PCT[p], color="k", lw=0.8, ls="--", label="bound")
        ax.set_yscale("log")
        ax.set_title(p)
        ax.set_xlabel("kernel size k")
        ax.set_ylabel("MAPE % (median, 95 % band)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(precs):]:
        ax.axis("off")
    fig.suptitle("MAPE against scipy float64 over the USC-SIPI misc images")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


__all__ = ["accuracy_kernel", "cases", "evaluate", "load_usc_sipi", "report", "scipy_reference",
           "table", "within_bound"]
