"""A page's link (?trace=…&step=…&tab=…): what it opens, and the one line that says what was wrong
with it. The browser checks that the line shows and the page works as without a link
(tests/browser/test_teach_browser.py); the words are checked here."""
from __future__ import annotations

from ui.links import TABS, check_step, parse_link

SHIPPED = ["coding-122.json", "translation-161.json"]


def test_a_good_link_names_its_run_step_and_tab():
    link = parse_link({"trace": "coding-122", "step": "5", "tab": "explorer"}, SHIPPED)
    assert (link.trace, link.step, link.tab, link.message) == ("coding-122.json", 5, "explorer", "")
    assert check_step(link, 40) == 5 and link.message == ""


def test_every_bad_value_is_named_in_one_line():
    link = parse_link({"trace": "../../etc/passwd", "step": "x7", "tab": "nope"}, SHIPPED)
    assert (link.trace, link.step, link.tab) == (None, None, None)
    msg = link.message
    assert "\n" not in msg and "no recorded run is called “../../etc/passwd”" in msg
    assert "there are: coding-122, translation-161" in msg
    assert "step must be a whole number ≥ 0, not “x7”" in msg
    assert f"there is no tab “nope” (tabs: {', '.join(TABS)})" in msg


def test_a_step_past_the_run_opens_step_0_and_says_so():
    link = parse_link({"trace": "coding-122.json", "step": "999"}, SHIPPED)
    assert link.trace == "coding-122.json" and check_step(link, 40) is None
    assert link.message == "step 999 is past this run's last step, 39; showing step 0"


def test_markup_in_a_link_is_not_echoed():
    link = parse_link({"tab": "**x**<script>"}, SHIPPED)
    assert "*" not in link.message and "<" not in link.message
