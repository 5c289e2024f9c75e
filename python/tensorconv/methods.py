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


def methods_table() -> str:
    """methods() as a Markdown table."""
    lines = ["| method | device | precisions | available |", "|---|---|---|---|"]
    for m in methods():
        avail = "yes" if m.available else f"no: {m.reason}"
        if m.available and m.note:
            avail += f" ({m.note})"
        precs = ", ".join(m.precisions) if m.precisions else f"uint8, via {m.entry}"
        lines.append(f"| {m.name} | {m.device} | {precs} | {avail} |")
    return "\n".join(lines)
