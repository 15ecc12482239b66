"""The browser the browser tests share: Debian's chromium through Playwright, one per module."""
from __future__ import annotations

import pytest

from helpers.browser import ARGS, chromium_path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=ARGS)
        yield b
        b.close()
