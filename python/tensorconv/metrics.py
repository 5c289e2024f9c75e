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
    """Median absolute percentage error, im2tensor paper eq. 20, in percent:
    median over pixels of |p - r| / |r|, with 0 where r == 0."""
    p, r = _pair(result, reference)
    err = np.abs(p - r)
    nz = r != 0
    rel = np.zeros_like(err)
    rel[nz] = err[nz] / np.abs(r[nz])
    return float(100.0 * np.median(rel))


def relative_l2(result, reference) -> float:
    """||p - r||_2 / ||r||_2 (0 when both are zero)."""
    p, r = _pair(result, reference)
    den = np.linalg.norm(r)
    num = np.linalg.norm(p - r)
    return float(num / den) if den else float(num)


def max_abs_error(result, reference) -> float:
    """max |p - r|."""
    p, r = _pair(result, reference)
    return float(np.max(np.abs(p - r)))


def max_rel_error(result, reference) -> float:
    """max |p - r| / max |r|: the worst error on the reference's own scale."""
    p, r = _pair(result, reference)
    scale = np.max(np.abs(r))
    return float(np.max(np.abs(p - r)) / scale) if scale else float(np.max(np.abs(p - r)))
