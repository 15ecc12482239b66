"""The browser the browser tests share: one Debian chromium through Playwright per test process
(each pytest-xdist worker has its own), started by the first test that asks and closed after the
folder's last test (so no Playwright loop outlives the folder into tests that run their own event
loops); a worker that comes back to the folder starts it again."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.browser import ARGS, chromium_path

HERE = Path(__file__).resolve().parent


class SharedBrowser:
    """Playwright and its chromium, launched on first use."""

    def __init__(self) -> None:
        self._pw = self._browser = None

    def get(self):
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            executable = chromium_path()
            self._pw = sync_playwright().start()
            self._browser = self._pw.chromium.launch(executable_path=executable, args=ARGS)
        return self._browser

    def contexts(self) -> set:
        """The browser contexts open now (none before the browser starts)."""
        return set(self._browser.contexts) if self._browser is not None else set()

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._pw.stop()
        self._pw = self._browser = None


KEY = pytest.StashKey[SharedBrowser]()


@pytest.fixture(scope="module")
def browser(request):
    """The shared chromium, started again if the folder's end closed it (on pytest-xdist a
    worker may come back to the folder after another folder's tests)."""
    shared = request.config.stash.setdefault(KEY, SharedBrowser())
    return shared.get()


@pytest.fixture(scope="module", autouse=True)
def pages_closed(request):
    """Whatever page a module's tests open and leave open (a failed test, most often) is closed
    when the module ends: an open page of the app draws every frame, about 0.05 CPU-seconds a
    second, which every later module on this worker would pay for. (Per module, not per test: a
    test may ask for a module's shared page itself, request.getfixturevalue, mid-test.)"""
    shared = request.config.stash.setdefault(KEY, SharedBrowser())
    before = shared.contexts()  # set up before the module's own fixtures, so torn down after them
    yield
    for context in shared.contexts() - before:
        context.close()


def pytest_sessionfinish(session):
    shared = session.config.stash.get(KEY, None)
    if shared is not None:
        shared.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield  # the test's own fixtures (its pages and contexts) close first
    shared = item.config.stash.get(KEY, None)
    if shared is not None and (nextitem is None or HERE not in Path(str(nextitem.fspath)).resolve().parents):
        shared.close()
    return result
