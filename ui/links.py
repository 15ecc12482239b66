"""Deep links: `?trace=NAME&step=N&tab=TAB` opens a recorded run at a step, on a tab (any of TABS; and
`&present=1` in large type: ui/present.py, in the browser alone).

A teacher can put such a link on a slide. The trace is looked up by name among the shipped
files only (never a path); a bad value is named in one line and the page works as usual.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

TABS = ("explorer", "debugger", "observations", "explain", "traces", "workbench")
ECHO_CHARS = 40  # how much of a bad value the message repeats


@dataclass
class Link:
    """What a page's query string asked for, and what was wrong with it."""

    trace: str | None = None  # a shipped trace's file name
    step: int | None = None
    tab: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        """One line for the status ("" when the link was fine)."""
        return "; ".join(self.problems)


def _echo(value: str) -> str:
    """A value from the address, safe to quote in markdown: short, no markup characters."""
    text = "".join(ch for ch in value if ch.isprintable() and ch not in "`*_<>[]\\|#")[:ECHO_CHARS]
    return f"“{text}”"


def parse_link(params: Mapping[str, str], shipped: Sequence[str]) -> Link:
    """The link in `params` (a page's query parameters); `shipped` holds the shipped file names."""
    link = Link()
    name = (params.get("trace") or "").strip()
    if name:
        wanted = name if name.endswith(".json") else name + ".json"
        if wanted in shipped:
            link.trace = wanted
        else:
            link.problems.append(f"no recorded run is called {_echo(name)} (there are: "
                                 f"{', '.join(n.removesuffix('.json') for n in shipped) or 'none'})")
    step = (params.get("step") or "").strip()
    if step:
        if step.isdigit():
            link.step = int(step)
        else:
            link.problems.append(f"step must be a whole number ≥ 0, not {_echo(step)}")
    tab = (params.get("tab") or "").strip().lower()
    if tab:
        if tab in TABS:
            link.tab = tab
        else:
            link.problems.append(f"there is no tab {_echo(tab)} (tabs: {', '.join(TABS)})")
    return link


def check_step(link: Link, n_steps: int) -> int | None:
    """The link's step when the opened run has it; else None, with the reason noted."""
    if link.step is None:
        return None
    if link.step < n_steps:
        return link.step
    link.problems.append(f"step {link.step} is past this run's last step, {n_steps - 1}; showing step 0")
    link.step = None
    return None


# A link that names a tab lands on it: once the link's tab and step are drawn, the tabs are
# scrolled to the top of the screen, so a slide shows the panel rather than the race above it.
# A link with a problem lands on its one-line message instead (the status, just above the tabs).
SCROLL_JS = """
() => {
  const tab = new URLSearchParams(window.location.search).get('tab');
  const status = document.getElementById('status');
  const bad = !!status && /This link:/.test(status.innerText || '');
  const target = bad ? status : document.getElementById('tabs');
  if (tab && target) requestAnimationFrame(() => target.scrollIntoView({block: 'start'}));
}
"""


def request_params(request) -> dict[str, str]:
    """A Gradio request's query parameters (none for a call without a request)."""
    return dict(getattr(request, "query_params", None) or {})
