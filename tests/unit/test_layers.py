"""The packages' imports go one way, as the README's code map draws them: runtime < core < sizing <
drafters < the entry points; the analysis of saved traces on the core alone; visual/ on the trace
types and that analysis; the app (app.py, ui/, serve/) on top, and nothing in the wheel imports it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers.paths import ROOT

# A module's layer is its package under logitspec/ (a module directly in logitspec/ is an entry
# point); each layer may import the layers named here and itself.
MAY_IMPORT = {
    "logitspec.runtime": set(),
    "logitspec.core": {"logitspec.runtime"},
    "logitspec.sizing": {"logitspec.core", "logitspec.runtime"},
    "logitspec.drafters": {"logitspec.sizing", "logitspec.core", "logitspec.runtime"},
    "logitspec.analysis": {"logitspec.core"},
    # an engine's plug-in: the paper's steps from the core, run inside another's decoding loop
    "logitspec.engines": {"logitspec.core"},
    "logitspec.bench": {"logitspec"},
    "logitspec": {"logitspec"},
    # the figures: the trace, the tree index, the settings' names and limits, and trace-only analysis
    "visual": {"logitspec.core.trace", "logitspec.core.tree", "logitspec.core.settings", "logitspec.core.limits",
               "logitspec.analysis"},
}
APP = ("serve", "ui", "app")


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "logitspec":
        return parts[0]
    return ".".join(parts[:2]) if len(parts) > 2 else "logitspec"


def imports(path: Path) -> set[str]:
    """The project modules `path` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module.split(".")[:-1]  # a module's package; for __init__, the package itself
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found |= {name} if node.module else {f"{name}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.split(".")[0] in ("logitspec", "visual", *APP)}


def within(module: str, allowed: set[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


FILES = sorted([*ROOT.glob("logitspec/**/*.py"), *ROOT.glob("visual/*.py")])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_goes_up(path):
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    own = layer(module)
    allowed = MAY_IMPORT[own] | {own}
    wrong = sorted(m for m in imports(path) if not within(m, allowed))
    assert not wrong, f"{module} ({own}) imports {wrong}"


def test_the_layers_cover_every_package():
    packages = {layer(".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in FILES}
    assert packages == set(MAY_IMPORT)
