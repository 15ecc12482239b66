"""Every LOGITSPEC_* variable is declared once in logitspec/environment.py, read there when asked
(never frozen), read nowhere else, and listed in docs/deployment.md's table."""
from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest
from helpers.paths import ROOT

from logitspec import environment
from logitspec.core.limits import InputError, Limits
from logitspec.runtime.fewrows import invariant_rows

NAME = re.compile(r"LOGITSPEC_[A-Z0-9_]+")
# Where the product's code lives; scripts/ only sets variables for the processes it starts.
SOURCES = ("logitspec", "visual", "ui", "serve", "scripts", "custom_generate")
ENVIRONMENT = ROOT / "logitspec" / "environment.py"
DOCS = ROOT / "docs" / "deployment.md"


def test_a_change_between_calls_is_seen(monkeypatch):
    monkeypatch.setenv("LOGITSPEC_CAPACITY", "64")
    assert invariant_rows() == 64 and Limits.from_env().capacity == 64
    monkeypatch.setenv("LOGITSPEC_CAPACITY", "128")
    assert invariant_rows() == 128 and Limits.from_env().capacity == 128
    monkeypatch.delenv("LOGITSPEC_CAPACITY")
    assert invariant_rows() == environment.CAPACITY.default == Limits().capacity


@pytest.mark.parametrize("raw, on_by_default, off_by_default", [
    (None, True, False), ("", True, False), ("0", False, False), ("1", True, True), ("yes", True, False)])
def test_a_flag_leaves_its_default_only_at_its_one_word(raw, on_by_default, off_by_default):
    env = {} if raw is None else {environment.PACKED.name: raw, environment.STEADY_CURVES.name: raw}
    assert environment.PACKED.read(env) is on_by_default
    assert environment.STEADY_CURVES.read(env) is off_by_default


def test_values_are_typed_and_empty_is_unset(monkeypatch):
    monkeypatch.setenv("LOGITSPEC_THREADS", "")
    assert environment.THREADS.read() == 0 and not environment.THREADS.is_set()
    monkeypatch.setenv("LOGITSPEC_THREADS", "3")
    assert environment.THREADS.read() == 3
    monkeypatch.setenv("LOGITSPEC_RUN_SECONDS", "1.5")
    assert environment.RUN_SECONDS.read() == 1.5 and Limits.from_env().run_seconds == 1.5
    monkeypatch.setenv("HOME", "/nowhere")
    monkeypatch.delenv("LOGITSPEC_KERNEL_DIR", raising=False)
    assert environment.KERNEL_DIR.read() == Path("/nowhere/.cache/logitspec")
    monkeypatch.setenv("LOGITSPEC_KERNEL_DIR", "/tmp/kernels")
    assert environment.KERNEL_DIR.read() == Path("/tmp/kernels")
    monkeypatch.setenv("LOGITSPEC_ONE_SHAPE_ROWS", "some")
    with pytest.raises(InputError, match="LOGITSPEC_ONE_SHAPE_ROWS='some' is not a number"):
        Limits.from_env()


def test_each_variable_is_declared_once_and_every_limit_has_one():
    names = [v.name for v in environment.VARIABLES]
    assert len(names) == len(set(names)) and all(NAME.fullmatch(n) for n in names)
    assert set(environment.LIMITS) <= set(environment.VARIABLES)
    assert [environment.limit(f.name) for f in fields(Limits)] == list(environment.LIMITS)
    assert Limits() == Limits(**{f.name: environment.limit(f.name).default for f in fields(Limits)})
    declared = {k for k, v in vars(environment).items() if isinstance(v, environment.Variable)}
    assert {getattr(environment, k) for k in declared} == set(environment.VARIABLES)


def test_the_docs_table_lists_every_variable_and_no_other():
    rows = re.findall(r"^\| `(LOGITSPEC_[A-Z0-9_]+)` \|", DOCS.read_text(), flags=re.M)
    assert len(rows) == len(set(rows)), "a variable has two rows"
    assert set(rows) == {v.name for v in environment.VARIABLES}


def _is_environ(node: ast.AST) -> bool:
    """os.environ or a bare `environ` (from os import environ)."""
    return ((isinstance(node, ast.Attribute) and node.attr == "environ")
            or (isinstance(node, ast.Name) and node.id == "environ"))


def _names_a_variable(key: ast.AST) -> bool:
    """A key that is a LOGITSPEC_ name: a string, an f-string that starts with one, or a
    declared variable's `.name`."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value.startswith("LOGITSPEC_")
    if isinstance(key, ast.JoinedStr) and key.values and isinstance(key.values[0], ast.Constant):
        return str(key.values[0].value).startswith("LOGITSPEC_")
    return isinstance(key, ast.Attribute) and key.attr == "name"


def reads(tree: ast.AST) -> list[int]:
    """The lines that read a LOGITSPEC_ variable from the environment: os.environ.get(...),
    os.getenv(...), os.environ[...], "..." in os.environ, or any mapping's .get("LOGITSPEC_...")."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            key, of_environ = node.args[0], _is_environ(node.func.value) or node.func.attr == "getenv"
            getter = node.func.attr in ("get", "pop", "setdefault", "getenv")
            # a `.name` key counts on the environment only: any record has a name
            if getter and _names_a_variable(key) and (of_environ or not isinstance(key, ast.Attribute)):
                found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            if _names_a_variable(node.slice):
                found.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            if _names_a_variable(node.left):
                found.append(node.lineno)
    return found


def bare_names(tree: ast.AST) -> list[int]:
    """The lines that hold a string that is exactly a variable's name: a name to read by (messages
    and docstrings that mention one hold more words)."""
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and NAME.fullmatch(n.value)]


def project_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in SOURCES:
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if f != ENVIRONMENT]


def test_no_module_but_the_environment_module_reads_a_variable():
    wrong = []
    for path in project_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        lines = reads(tree) + ([] if path.is_relative_to(ROOT / "scripts") else bare_names(tree))
        wrong += [f"{path.relative_to(ROOT)}:{line}" for line in sorted(set(lines))]
    assert not wrong, f"read LOGITSPEC_ variables through logitspec.environment: {wrong}"


@pytest.mark.parametrize("source, caught", [
    ('import os\nos.environ.get("LOGITSPEC_X", "1")', True),
    ('import os\nos.getenv("LOGITSPEC_X")', True),
    ('import os\nos.environ["LOGITSPEC_X"]', True),
    ('import os\n"LOGITSPEC_X" in os.environ', True),
    ('import os\nos.environ.get(f"LOGITSPEC_{name}")', True),
    ('env.get("LOGITSPEC_MODELS", "")', True),
    ('import os\nos.environ.get(environment.THREADS.name)', True),
    ('import os\nos.environ[environment.DEFAULT_MODEL.name] = "m"', False),  # a write, for a child process
    ('import os\nos.environ.get("CXX", "c++")', False),
    ('environment.THREADS.read()', False),
])
def test_the_reads_the_check_catches(source, caught):
    assert bool(reads(ast.parse(source))) is caught
