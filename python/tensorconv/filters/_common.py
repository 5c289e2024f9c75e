"""Argument checks and boundary handling shared by tensorconv.filters.gaussian and .bilateral."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._api import PRECISIONS, _check_fillvalue

# scipy.ndimage's boundary modes -> the padding the array backends do (_arrays.py):
# reflect (d c b a | a b c d) is np.pad's 'symmetric', mirror (d c b | a b c d) np.pad's
# 'reflect', nearest np.pad's 'edge'.
MODES = {"reflect": "symm", "constant": "fill", "nearest": "edge", "mirror": "reflect",
         "wrap": "wrap"}


def check_mode(mode) -> str:
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: " + ", ".join(MODES))
    return MODES[mode]


def check_cval(cval) -> float:
    return _check_fillvalue(cval)


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
