"""tensorconv-accuracy: the USC-SIPI MAPE sweep of each method and precision against scipy.
Also python -m tensorconv.accuracy: every available method x precision x kernel size against
scipy float64, written as JSON, a Table 5 style Markdown table and a Fig. 11 style PNG.

  tensorconv-accuracy --kernels 3,15                 # every method and precision that runs here
  tensorconv-accuracy --methods direct,fft_cpu --precisions fp32 --kernels 1-60 --data ~/misc"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import tensorconv as tc

from . import cases, evaluate, load_usc_sipi, report, within_bound


def _ints(text: str) -> tuple:
    out = []
    for tok in text.split(","):
        a, _, b = tok.strip().partition("-")
        try:
            out += list(range(int(a), int(b) + 1)) if b else [int(a)]
        except ValueError:
            raise SystemExit(f"tensorconv-accuracy: error: --kernels takes integers such as 3,15 "
                             f"or 1-60; got {text!r}") from None
    if not out or min(out) < 1:
        raise SystemExit("tensorconv-accuracy: error: --kernels must list positive integers")
    return tuple(out)


def _choices(text, valid, what):
    if text in (None, "all"):
        return None
    got = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in got if t not in valid]
    if bad:
        raise SystemExit(f"tensorconv-accuracy: error: unknown {what} "
                         f"{', '.join(map(repr, bad))}; valid {what}s: {', '.join(valid)}")
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tensorconv-accuracy", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[4:]))
    ap.add_argument("--methods", help="comma list or 'all' (default: every one available here)")
    ap.add_argument("--precisions", help="comma list or 'all': " + ", ".join(tc.PRECISIONS))
    ap.add_argument("--kernels", default="1-60", help="kernel sides, e.g. 3,15 or 1-60")
    ap.add_argument("--data", help="USC-SIPI misc images: a folder of FITS or TIFFs, or "
                    "misc.tar.gz (default: $TENSORCONV_DATA, then the cache)")
    ap.add_argument("--out", default="tensorconv-accuracy-results")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    names = [m.name for m in tc.methods() if m.entry == "correlate2d"]
    methods = _choices(a.methods, names, "method")
    precisions = _choices(a.precisions, tc.PRECISIONS, "precision")
    ks = _ints(a.kernels)
    todo = cases(methods, precisions)
    unavailable = [m for m in tc.methods() if m.entry == "correlate2d" and not m.available
                   and (methods is None or m.name in methods)]
    for m in unavailable:
        print(f"{m.name} skipped: {m.reason}", file=sys.stderr)
    if not todo:
        raise SystemExit("tensorconv-accuracy: error: none of the methods asked for can run here")
    try:
        images = list(load_usc_sipi(a.data))
    except FileNotFoundError as e:
        raise SystemExit(f"tensorconv-accuracy: error: {e}") from None
    bar = None
    if not a.no_progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo) * len(ks), desc="accuracy", unit="case")
        except ImportError:
            pass
    rows, t0 = [], time.time()
    for method, prec in todo:
        for k in ks:
            rows.append(evaluate(method, prec, k, images))
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    files = report(rows, Path(a.out), {"images": len(images), "seconds": round(time.time() - t0, 1)})
    missed = [r for r in rows if not within_bound(r)]
    for r in missed:
        print(f"over bound: {r['method']} {r['precision']} k={r['k']} median "
              f"{r['mape_median']:.3g} % (bound {r['bound']:g} %)", file=sys.stderr)
    print("wrote", *map(str, files))
    return 1 if missed else 0
