"""The package version, kept in one place: pyproject.toml's [project] version. An installed
package reads it from its metadata; a source checkout (PYTHONPATH=python) from pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path


def version() -> str:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.is_file():  # a checkout: its own pyproject, not an older installed copy
        text = pyproject.read_text(encoding="utf-8")
        project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        body = project.group(1) if project else ""
        found = re.search(r'^version\s*=\s*"([^"]+)"', body, re.M)
        if found and re.search(r'^name\s*=\s*"tensorconv"', body, re.M):
            return found.group(1)
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("tensorconv")
    except PackageNotFoundError:
        return "0+unknown"
