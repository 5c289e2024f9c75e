"""The method table, read from the C++ registry (the only place a method is declared)."""

from __future__ import annotations

from typing import NamedTuple

from . import _core


class MethodInfo(NamedTuple):
    name: str
    device: str  # "cpu" or "cuda"
    precisions: tuple
    available: bool
    reason: str  # why it is unavailable here; "" when available
    summary: str
    entry: str = "correlate2d"  # the function that reaches it (simd_u8: filter2d_u8)
    note: str = ""  # which code path runs here and why (e.g. AVX2 or portable)


def methods() -> list[MethodInfo]:
    """Every registered method, with its device, precisions and whether it can run here."""
    return [MethodInfo(*row) for row in _core.methods()]


def takes_complex(m: MethodInfo) -> bool:
    """Complex data runs on any correlate2d method with fp32 or fp64 (complex64 / complex128),
    as real correlations of the parts (tensorconv.Plan says which decomposition)."""
    return m.entry == "correlate2d" and any(p in m.precisions for p in ("fp32", "fp64"))


def methods_table() -> str:
    """methods() as a Markdown table."""
    lines = ["| method | device | precisions | complex | available |", "|---|---|---|---|---|"]
    for m in methods():
        avail = "yes" if m.available else f"no: {m.reason}"
        if m.available and m.note:
            avail += f" ({m.note})"
        precs = ", ".join(m.precisions) if m.precisions else f"uint8, via {m.entry}"
        cplx = "complex64, complex128" if takes_complex(m) else "no"
        lines.append(f"| {m.name} | {m.device} | {precs} | {cplx} | {avail} |")
    return "\n".join(lines)
