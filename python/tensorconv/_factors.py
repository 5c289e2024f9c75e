"""The kernel's rank decomposition for methods that filter by rank-1 passes (registry rows with
takes_factors: separable): K = sum_q col[q] row[q]^T, from LAPACK's SVD (numpy.linalg.svd),
passed down to the plan in PlanRequest.

The rank keeps the singular values above the precision's operand roundoff times the largest
(smaller terms are below what the passes' operands resolve); where that leaves full rank, or the
kernel is a single row or column, holds NaN/inf (LAPACK does not take them) or is larger than
512 on its short side (an O(n^3) SVD for no saving), the exact decomposition is used instead:
one term per kernel row (a unit column factor) or per column, whichever is fewer.
"""

from __future__ import annotations

import numpy as np

# Unit roundoff of the operands each precision multiplies.
_OPERAND_EPS = {"fp16": 2.0**-11, "fp16fp32": 2.0**-11, "tf32": 2.0**-11, "bf16": 2.0**-8,
                "fp32": 2.0**-24, "fp64": 2.0**-53}
_MAX_SVD = 512


def _exact(k: np.ndarray):
    kh, kw = k.shape
    if kh <= kw:  # one term per row: col = e_u, row = K[u, :]
        return np.eye(kh), k.copy()
    return k.T.copy(), np.eye(kw)  # one term per column: col = K[:, v], row = e_v


def rank_factors(kernel: np.ndarray, precision: str):
    """(col, row): float64 C-contiguous arrays of shapes (r, kh) and (r, kw) whose outer
    products sum to `kernel` (to the precision's operand roundoff)."""
    k = np.ascontiguousarray(kernel, dtype=np.float64)
    full = min(k.shape)
    if full <= 1 or full > _MAX_SVD or not np.isfinite(k).all():
        return _exact(k)
    u, s, vt = np.linalg.svd(k, full_matrices=False)  # s descending
    rank = int(np.count_nonzero(s > _OPERAND_EPS[precision] * s[0]))
    if rank >= full:
        return _exact(k)
    r = max(rank, 1)  # a zero kernel still runs one (zero) term
    w = np.sqrt(s[:r])
    col = np.ascontiguousarray((u[:, :r] * w).T)
    row = np.ascontiguousarray(vt[:r] * w[:, None])
    return col, row
