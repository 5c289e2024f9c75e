"""The examples in the public API's docstrings run, and give what they show.

Every name in the ``__all__`` of the public modules (their own public functions and classes for
modules without ``__all__``) must have a numpydoc ``Examples`` section; each example runs as a
doctest against the installed package and fails on any mismatch. The examples are written for a
CPU-only install (small arrays, CPU methods), so none needs a GPU.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import numpy as np
import pytest

PUBLIC_MODULES = ("tensorconv", "tensorconv.filters", "tensorconv.astropy", "tensorconv.dask",
                  "tensorconv.metrics", "tensorconv.datasets", "tensorconv.accuracy",
                  "tensorconv.torch")
NEEDS = {"tensorconv.dask": "dask", "tensorconv.astropy": "astropy", "tensorconv.torch": "torch"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public(modname):
    """(qualified name, object) of every public function and class of a module."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, o in vars(mod).items() if not n.startswith("_")
                 and (inspect.isfunction(o) or inspect.isclass(o))
                 and getattr(o, "__module__", None) == modname]
    out = []
    for n in names:
        o = getattr(mod, n)
        if inspect.isfunction(o) or inspect.isclass(o) or inspect.isbuiltin(o) or (
                callable(o) and hasattr(o, "__wrapped__")):
            out.append((f"{modname}.{n}", o))
    return out


def _params():
    seen, out = set(), []
    for modname in PUBLIC_MODULES:
        need = NEEDS.get(modname)
        if need is not None and importlib.util.find_spec(need) is None:
            out.append(pytest.param(modname, None, marks=pytest.mark.skip(
                reason=f"{modname}'s examples need {need}, which is not installed"), id=modname))
            continue
        for qual, obj in _public(modname):
            if id(obj) in seen:  # a re-export: its examples run once, under its first name
                continue
            if not getattr(obj, "__module__", "").startswith("tensorconv"):
                continue  # another library's object re-exported (astropy's KernelSizeError)
            seen.add(id(obj))
            out.append(pytest.param(qual, obj, id=qual))
    return out


@pytest.mark.parametrize("qual, obj", _params())
def test_examples(qual, obj):
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc and ">>>" in doc, f"{qual} has no Examples section"
    finder = doctest.DocTestFinder(recurse=inspect.isclass(obj), exclude_empty=True)
    tests = [t for t in finder.find(obj, qual, globs={"np": np}) if t.examples]
    assert tests, f"{qual}: no doctest found"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for t in tests:
        runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{qual}: {res.failed} of {res.attempted} examples failed (output above)"
