"""Argument checks and boundary handling shared by tensorconv.filters.gaussian and .bilateral."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._api import PRECISIONS, _check_array, _check_fillvalue
from .._arrays import boundary_indices

# scipy.ndimage's boundary modes -> the padding the array backends do (_arrays.py):
# reflect (d c b a | a b c d) is np.pad's 'symmetric', mirror (d c b | a b c d) np.pad's
# 'reflect', nearest np.pad's 'edge'.
MODES = {"reflect": "symm", "constant": "fill", "nearest": "edge", "mirror": "reflect",
         "wrap": "wrap"}
# scipy.ndimage's synonyms (for filters 'grid-constant' is 'constant').
_ALIASES = {"grid-mirror": "reflect", "grid-constant": "constant", "grid-wrap": "wrap"}


def check_mode(mode) -> str:
    if not isinstance(mode, str) or mode not in MODES and mode not in _ALIASES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: " + ", ".join(MODES)
                         + " (aliases " + ", ".join(_ALIASES) + ")")
    return MODES[_ALIASES.get(mode, mode)]


def check_cval(cval) -> float:
    v = _check_fillvalue(cval)
    if isinstance(v, complex):
        raise TypeError(f"cval: fillvalue must be real for a real image, got {cval!r}")
    return v


def check_image(image, b) -> None:
    """A real 2-D non-empty image (the filters are defined on real intensities)."""
    _check_array(image, b, "image")
    if b.dtype_kind(image) == "c":
        raise TypeError(f"image is complex ({b.dtype_str(image)}); the filters take real images "
                        "(filter the real and imaginary parts separately)")


def check_positive(value, name: str) -> float:
    """A finite real number > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be real, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def check_radius(value, name: str = "radius") -> int:
    """A non-negative integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a non-negative integer or None, got {value!r}")
    if int(value) < 0:
        raise ValueError(f"{name} must be >= 0, got {int(value)}")
    return int(value)


def per_axis(value, name: str, check):
    """A scalar or a pair (rows, columns), each passed through check(value, name)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or a pair of numbers, got {value!r}")
    if np.ndim(value) == 0:
        v = check(value, name)
        return v, v
    vals = list(value)
    if len(vals) != 2:
        raise ValueError(f"{name} must be a scalar or one value per axis (2), got {len(vals)}")
    return check(vals[0], name), check(vals[1], name)


def check_precision(precision) -> str | None:
    if precision is None:
        return None
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; valid precisions: "
                         + ", ".join(PRECISIONS))
    return precision


def image_precision(dtype_str: str) -> str:
    """float16 -> fp16fp32, float32 -> fp32, anything else (float64, integers, bool) -> fp64."""
    return {"float16": "fp16fp32", "float32": "fp32"}.get(dtype_str, "fp64")


def to_device(b, like, a):
    """A host NumPy array as an array of b's kind on like's device."""
    if b.name == "torch":
        return b.torch.as_tensor(a, device=like.device)
    return b.xp.asarray(a)


class SplitRun:
    """Runs a window filter (radius rh x rw, 'valid' plans) on an unpadded image, so that the
    image is never padded as a whole (one more pass over it): the interior (pixels at least a
    radius from the edge) is one plan over the image itself, written straight into the output;
    the four border strips are plans over their padded inputs, which one gather (take) fills,
    back to back in one small buffer, on the array's own device. Positions outside the image
    in mode 'fill' take `fill`.

    make_plan(rows, cols) -> a core plan over an input of that shape with output
    (rows - 2 rh, cols - 2 rw)."""

    def __init__(self, make_plan, shape, rh, rw, boundary, fill):
        h, w = shape
        self.shape, self.rh, self.rw, self.fill = shape, rh, rw, fill
        self.main = make_plan(h, w)
        if boundary == "fill":
            rows, cols = np.arange(-rh, h + rh), np.arange(-rw, w + rw)
            rin, cin = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
            ri, ci = np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)
        else:
            ri = boundary_indices(h, rh, rh, boundary)
            ci = boundary_indices(w, rw, rw, boundary)
        flat, outside, off = [], [], 0
        self.strips = []
        for i0, i1, j0, j1 in ((0, rh, 0, w), (h - rh, h, 0, w), (rh, h - rh, 0, rw),
                               (rh, h - rh, w - rw, w)):
            if i1 <= i0 or j1 <= j0:
                continue
            rs, cs = slice(i0, i1 + 2 * rh), slice(j0, j1 + 2 * rw)
            flat.append((ri[rs, None] * w + ci[None, cs]).ravel())
            if boundary == "fill":
                outside.append(~(rin[rs, None] & cin[None, cs]).ravel())
            self.strips.append((i0, i1, j0, j1, off, make_plan(i1 - i0 + 2 * rh,
                                                               j1 - j0 + 2 * rw)))
            off += flat[-1].size
        self._flat = np.concatenate(flat).astype(np.int64)
        out = np.concatenate(outside) if outside else None
        self._outside = out if out is not None and out.any() else None
        self._dev = {}

    def _frame(self, b, x):
        key = (b.name, str(getattr(x, "device", "")))
        if key not in self._dev:
            self._dev[key] = (to_device(b, x, self._flat), None if self._outside is None
                              else to_device(b, x, self._outside))
        flat, outside = self._dev[key]
        frame = b.torch.take(x, flat) if b.name == "torch" else b.xp.take(x, flat)
        if outside is not None:
            frame[outside] = self.fill
        return frame

    def __call__(self, b, x, out, storage, after_strip=None):
        """x: contiguous image in the storage dtype; out: (h, w), contiguous, same device."""
        h, w = self.shape
        rh, rw = self.rh, self.rw
        es = np.dtype(storage).itemsize
        base, stream = b.pointer(out), b.stream(x)
        frame = self._frame(b, x)
        fbase = b.pointer(frame)
        for i0, i1, j0, j1, off, p in self.strips:
            cols = j1 - j0 + 2 * rw
            p.run(fbase + off * es, i1 - i0 + 2 * rh, cols, cols, base + (i0 * w + j0) * es,
                  i1 - i0, j1 - j0, w, storage, b.on_device, stream)
            if after_strip is not None:
                after_strip(i0, i1, j0, j1)
        self.main.run(b.pointer(x), h, w, b.row_stride(x), base + (rh * w + rw) * es,
                      h - 2 * rh, w - 2 * rw, w, storage, b.on_device, stream)
        return out


def can_split(shape, rh, rw) -> bool:
    """An interior exists (and a border to split off)."""
    return (rh > 0 or rw > 0) and shape[0] > 2 * rh and shape[1] > 2 * rw
