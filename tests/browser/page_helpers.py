"""Page helpers shared by the browser tests (not a test module)."""
from __future__ import annotations

ACCORDION = "Decoder parameters (paper defaults)"


def set_max_new(page, n: int) -> None:
    """Max new tokens through the slider's number box (the range input confirms the value)."""
    from playwright.sync_api import expect

    page.get_by_text(ACCORDION).click()
    box = page.locator("#max-new input[type=number]")
    for attempt in range(3):  # on a busy machine the slider can miss a typed value: type it again
        box.fill(str(n))
        box.press("Enter")
        box.blur()
        try:
            expect(page.locator("#max-new input[type=range]")).to_have_value(str(n), timeout=10_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    page.get_by_text(ACCORDION).click()  # fold it again
