"""The imports go one way and never round: logitspec/'s units sit in the layers LAYERS lists from
the bottom up, and none imports its own row or a row above; no module reaches itself through its
imports; visual/ draws from the trace types and the analysis of saved runs alone; the app (app.py,
ui/, serve/) sits on top, and nothing below it imports it. Pure `ast`: no module is executed.
Imports inside functions count; those under `if TYPE_CHECKING:` (never run) do not."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from helpers.paths import ROOT

# A unit is a subpackage of logitspec/ or a module directly in it ("__init__": the package's own).
# Bottom up: a unit may import its own modules and any unit on a lower row, nothing else.
LAYERS = (
    ("environment",),  # the LOGITSPEC_* variables, read when asked; imports nothing of the project
    ("runtime",),  # speed tricks invisible to the algorithm: kernels, KV cache, threads
    ("core",),  # the paper's algorithm, a module per step, and the trace types
    ("sizing",),  # the tree sized by what a token of tree costs on this hardware
    ("drafters",),  # the other drafters, each beside its algorithm
    ("decoders", "models", "tokens", "arguments", "analysis", "engines"),  # decoding, loading; saved runs; vLLM's plug-in
    ("runner", "dtype_pick", "export"),  # one decoder over one prompt; a dtype timed at load; export-model
    ("api",),  # logitspec.generate and stream
    ("__init__", "custom_generate", "bench"),  # the package's face; model.generate's hook; the bench
    ("workbench",),  # sets of questions run and summarised, through the bench's runs
    ("cli",),  # python -m logitspec
    ("__main__",),
)
# Units that may import less than their row allows: the analysis of saved runs needs no model and
# no torch, and an engine's plug-in runs the paper's steps inside another's decoding loop.
ONLY = {"analysis": {"environment", "core"}, "engines": {"environment", "core"}}
# Imports that go against LAYERS today, each with why it stays: (importer, imported, why).
EXCEPTIONS: tuple[tuple[str, str, str], ...] = ()
# The figures: the trace, the tree index, the settings' names and limits, and trace-only analysis.
VISUAL_MAY_IMPORT = ("logitspec.core.trace", "logitspec.core.tree", "logitspec.core.settings",
                     "logitspec.core.limits", "logitspec.analysis", "visual")
APP = ("app", "ui", "serve")
FOLDERS = ("logitspec", "visual", "ui", "serve")


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    files = [ROOT / "app.py", *(p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py")))]
    return {module_of(p): p for p in files}


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node`, the bodies of `if TYPE_CHECKING:` left out (their else kept)."""
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            for other in child.orelse:
                yield other
                yield from _nodes(other)
            continue
        yield child
        yield from _nodes(child)


def _resolve(name: str) -> str:
    """The project module `name` is or lies in (an imported function: its module)."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name


def imports_in(tree: ast.AST, module: str, package: list[str]) -> frozenset[str]:
    """The project modules the code `tree` of `module` (in `package`) imports: relative imports
    resolved, `from p import m` as p.m."""
    found = set()
    for node in _nodes(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found |= {_resolve(f"{name}.{a.name}") for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names}
    return frozenset(m for m in found if m and m != module)


@cache
def imports(module: str) -> frozenset[str]:
    path = modules()[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    return imports_in(ast.parse(path.read_text(), filename=str(path)), module, package)


def unit(module: str) -> str:
    """logitspec.core.tree -> core; logitspec.cli -> cli; logitspec -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def row(u: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if u in names)


def allowed(importer: str, imported: str) -> bool:
    a, b = unit(importer), unit(imported)
    if a == b:
        return True
    return b in ONLY[a] if a in ONLY else row(b) < row(a)


def package_modules() -> list[str]:
    return sorted(m for m in modules() if m.split(".")[0] == "logitspec")


def test_the_layers_name_every_unit_once():
    named = [u for names in LAYERS for u in names]
    assert len(named) == len(set(named))
    assert {unit(m) for m in package_modules()} == set(named)
    assert all(row(b) < row(a) for a, only in ONLY.items() for b in only)


@pytest.mark.parametrize("module", package_modules())
def test_no_import_goes_up_or_across(module):
    excepted = {(a, b) for a, b, _ in EXCEPTIONS}
    wrong = sorted(m for m in imports(module) if m.startswith("logitspec")
                   and not allowed(module, m) and (module, m) not in excepted)
    assert not wrong, f"{module} ({unit(module)}, row {row(unit(module))}) imports {wrong}"
    outside = sorted(m for m in imports(module) if not m.startswith("logitspec"))
    assert not outside, f"{module} imports {outside}: the wheel holds logitspec/ alone"


def test_every_exception_is_still_taken():
    stale = [(a, b) for a, b, _ in EXCEPTIONS if b not in imports(a) or allowed(a, b)]
    assert not stale, f"remove these from EXCEPTIONS: {stale}"


def _cycle() -> list[str] | None:
    """One import cycle among the project's modules, as the modules round it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(imports(m)):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    return next((c for m in sorted(modules()) if m not in state and (c := visit(m))), None)


def test_no_import_cycle():
    assert _cycle() is None, " -> ".join(_cycle() or [])


@pytest.mark.parametrize("module", sorted(m for m in modules() if m.split(".")[0] == "visual"))
def test_visual_draws_from_the_trace_alone(module):
    wrong = sorted(m for m in imports(module) if not any(m == a or m.startswith(a + ".") for a in VISUAL_MAY_IMPORT))
    assert not wrong, f"{module} imports {wrong}"


@pytest.mark.parametrize("module", sorted(m for m in modules() if m.split(".")[0] in ("ui", "serve")))
def test_nothing_imports_the_app(module):
    assert "app" not in imports(module)
    if module.startswith("serve"):
        assert not any(m.split(".")[0] == "ui" for m in imports(module)), f"{module} imports the page"


SAMPLE = """
from typing import TYPE_CHECKING
from . import environment
if TYPE_CHECKING:
    from .models import LoadedModel
else:
    from .core import trace
def run():
    from .runner import Run
    import logitspec.bench.run
"""


def test_the_checks_see_what_they_check():
    """Imports in functions count, TYPE_CHECKING's do not, and an upward or sideways import is caught."""
    found = imports_in(ast.parse(SAMPLE), "logitspec.sample", ["logitspec"])
    assert found == {"logitspec.environment", "logitspec.core.trace", "logitspec.runner", "logitspec.bench.run"}
    assert not allowed("logitspec.core.tree", "logitspec.sizing.trie")
    assert not allowed("logitspec.decoders", "logitspec.models")  # one row: neither imports the other
    assert not allowed("logitspec.analysis.race", "logitspec.sizing.curve")
    assert allowed("logitspec.runtime.fewrows", "logitspec.environment")
