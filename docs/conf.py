"""Sphinx configuration of the tensorconv documentation site.

Build (strict, offline):  python -m sphinx -W --keep-going -b html docs docs/_build/html

Every table of methods, precisions, plan options, accuracy and benchmark results is generated
at build time by docs/gen_tables.py from the installed package and the committed results
(benchmarks/results/*.json); nothing in those tables is copied by hand.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_tables  # noqa: E402  (docs/gen_tables.py)

import tensorconv  # noqa: E402  (the installed package: its docstrings and registry)

gen_tables.main()

project = "tensorconv"
author = "the tensorconv developers"
copyright = "2026, the tensorconv developers"
release = tensorconv.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
]
if os.environ.get("TENSORCONV_DOCS_INTERSPHINX"):  # optional: needs the network at build time
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "astropy": ("https://docs.astropy.org/en/stable", None),
        "dask": ("https://docs.dask.org/en/stable", None),
    }

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# _generated/*.md: snippets included into the pages (not pages of their own)
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "_generated/*.md"]

# Strict: every internal reference must resolve (-W turns a miss into an error).
nitpicky = True
nitpick_ignore_regex = [
    # types named in numpydoc "Parameters"/"Returns" lines are prose, not cross-references
    (r"py:.*", r"(numpy\.)?ndarray|array_like|optional|dict|list|tuple|str|int|float|bool|None"),
]

myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

autodoc_typehints = "none"  # the types are in the numpydoc sections
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set = set()

html_theme = "pydata_sphinx_theme"
html_title = f"tensorconv {release}"
html_theme_options = {
    "navigation_depth": 3,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "navbar_end": ["theme-switcher"],
}
html_static_path: list = []
html_show_sourcelink = False
