"""Every example in tokamata's docstrings runs and prints what it says (integrations excluded:
they need torch / transformers / llama.cpp and have their own tests), and so does every
``>>>`` example of the README."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import tokamata

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(tokamata.__path__, "tokamata.")
    if ".integrations" not in info.name and not info.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_readme_examples():
    readme = pathlib.Path(__file__).resolve().parents[2] / "README.md"
    result = doctest.testfile(str(readme), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} of {result.attempted} README examples failed"
