"""Accuracy metrics against a float64 reference."""

from __future__ import annotations

import numpy as np


def _pair(result, reference):
    """Both in float64, or complex128 where either is complex (|.| is then the modulus)."""
    result, reference = np.asarray(result), np.asarray(reference)
    dt = np.complex128 if np.iscomplexobj(result) or np.iscomplexobj(reference) else np.float64
    p = np.asarray(result, dtype=dt)
    r = np.asarray(reference, dtype=dt)
    if p.shape != r.shape:
        raise ValueError(f"result shape {p.shape} differs from reference shape {r.shape}")
    return p, r


def mape(result, reference) -> float:
    """Median absolute percentage error, the im2tensor paper's eq. 20, in percent.

    The median over pixels of ``|p - r| / |r|``, with 0 where ``r == 0``.

    Parameters
    ----------
    result : array_like
        The computed array (any float or complex dtype; compared in float64 or complex128).
    reference : array_like
        The reference, e.g. scipy's float64 result, of the same shape.

    Returns
    -------
    float
        Percent.

    Raises
    ------
    ValueError
        The shapes differ.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorconv.metrics import mape
    >>> mape([1.01, 2.0, 3.0], [1.0, 2.0, 3.0])
    0.0
    >>> round(mape([1.01, 2.02, 3.0], [1.0, 2.0, 3.0]), 6)
    1.0
    """
    p, r = _pair(result, reference)
    err = np.abs(p - r)
    nz = r != 0
    rel = np.zeros_like(err)
    rel[nz] = err[nz] / np.abs(r[nz])
    return float(100.0 * np.median(rel))


def relative_l2(result, reference) -> float:
    """Relative L2 error, ``||p - r||_2 / ||r||_2`` (0 when both are zero).

    Parameters
    ----------
    result : array_like
        The computed array (any float or complex dtype; compared in float64 or complex128).
    reference : array_like
        The reference, e.g. scipy's float64 result, of the same shape.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        The shapes differ.

    Examples
    --------
    >>> from tensorconv.metrics import relative_l2
    >>> relative_l2([3.0, 4.0], [3.0, 4.0])
    0.0
    >>> round(relative_l2([3.0, 4.5], [3.0, 4.0]), 3)
    0.1
    """
    p, r = _pair(result, reference)
    den = np.linalg.norm(r)
    num = np.linalg.norm(p - r)
    return float(num / den) if den else float(num)


def max_abs_error(result, reference) -> float:
    """Largest absolute error, ``max |p - r|``.

    Parameters
    ----------
    result : array_like
        The computed array (any float or complex dtype; compared in float64 or complex128).
    reference : array_like
        The reference, e.g. scipy's float64 result, of the same shape.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        The shapes differ.

    Examples
    --------
    >>> from tensorconv.metrics import max_abs_error
    >>> max_abs_error([1.0, 2.5], [1.0, 2.0])
    0.5
    """
    p, r = _pair(result, reference)
    return float(np.max(np.abs(p - r)))


def max_rel_error(result, reference) -> float:
    """The worst error on the reference's own scale, ``max |p - r| / max |r|``.

    Parameters
    ----------
    result : array_like
        The computed array (any float or complex dtype; compared in float64 or complex128).
    reference : array_like
        The reference, e.g. scipy's float64 result, of the same shape.

    Returns
    -------
    float
        (``max |p - r|`` when the reference is all zeros.)

    Raises
    ------
    ValueError
        The shapes differ.

    Examples
    --------
    >>> from tensorconv.metrics import max_rel_error
    >>> max_rel_error([1.0, 2.5], [1.0, 2.0])
    0.25
    """
    p, r = _pair(result, reference)
    scale = np.max(np.abs(r))
    return float(np.max(np.abs(p - r)) / scale) if scale else float(np.max(np.abs(p - r)))
