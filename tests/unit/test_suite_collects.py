"""Every test command in the README collects: `pytest` over tests/ takes every test module, and
no two share a basename (in folders without __init__.py pytest refuses the second one)."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

from helpers.paths import ROOT

TESTS = ROOT / "tests"


def test_no_two_test_modules_share_a_basename():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1]


@pytest.mark.slow
def test_pytest_collects_every_test_module_under_tests():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    # Plain asserts: a module imports or fails alike unrewritten, and rewriting them all was a fifth of the collection.
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--assert=plain", "-m", "", "tests"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    collected = {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}
    modules = {str(p.relative_to(ROOT)) for p in TESTS.rglob("test_*.py")}
    assert modules == collected, sorted(modules ^ collected)


def test_make_test_fast_leaves_out_only_folders_whose_every_test_is_slow():
    import re

    from helpers.marks import FOLDER_MARKS

    fast = re.search(r"^FAST_FOLDERS := (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    folders = {p.parent.name for p in TESTS.rglob("test_*.py")}
    assert {f.removeprefix("tests/") for f in fast} == folders - set(FOLDER_MARKS)
