"""The app's page stays readable: app.py only creates the services and serves the page, each part
of the page is its own module under ui/, and no function in either runs over 60 lines."""
from __future__ import annotations

import ast

import pytest
from helpers.paths import ROOT

APP_MAX_LINES = 150
MAX_FUNCTION_LINES = 60
PAGE_FILES = ["app.py", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "ui").glob("*.py"))]


def test_app_py_is_short():
    lines = (ROOT / "app.py").read_text(encoding="utf-8").count("\n")
    assert lines <= APP_MAX_LINES, lines


@pytest.mark.parametrize("path", PAGE_FILES)
def test_no_page_function_runs_over_sixty_lines(path):
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path}: {long}"


def test_every_part_of_the_page_builds_itself():
    from ui.page import Page
    from ui.services import Services

    page = Page(Services.create())
    page.build()
    parts = [page.race, page.explorer, page.debugger, page.observations, page.explain, page.files]
    assert all(callable(getattr(p, "build", None)) for p in parts)
    unwired = [p for p in parts if not callable(getattr(p, "wire", None))]
    assert unwired == [page.observations]  # it only shows figures: nothing to wire
    assert len({type(p).__module__ for p in parts}) == len(parts)  # a module each
