"""Faults a whole test run can be given, to measure which tests catch each one:
`LOGITSPEC_TEST_MUTATION=mask python -m pytest -p helpers.mutations ...` (scripts/mutation_catch.py
runs a selection under each and tabulates the failures; docs/testing.md keeps the table).

Each breaks one thing a lossless or labelled view depends on, in this process (and so in every
pytest-xdist worker, which loads the plugin too; not in a started app server)."""
from __future__ import annotations

import os

VARIABLE = "LOGITSPEC_TEST_MUTATION"


def _mask(mp):
    from helpers import faults
    from logitspec.core import verify

    mp.setattr(verify, "layered_tree_inputs", faults.all_visible(verify.layered_tree_inputs))


def _positions(mp):
    from helpers import faults
    from logitspec.core import verify

    mp.setattr(verify, "layered_tree_inputs", faults.flat_positions(verify.layered_tree_inputs))


def _window(mp):
    """A sliding layer's tree nodes see one key further back than their window allows."""
    from logitspec.core import tree

    real = tree.window_mask
    mp.setattr(tree, "window_mask", lambda anc, depth, context_len, window, dtype, device:
               real(anc, depth, context_len, None if window is None else window + 1, dtype, device))


def _cache(mp):
    """The accepted path's entries are not moved next to the context: the cache keeps the tree's first rows."""
    from logitspec.core import loop

    real = loop.compact_cache
    mp.setattr(loop, "compact_cache", lambda cache, context_len, path: real(cache, context_len, range(len(path))))


def _accept(mp):
    """The walk takes one child more than the model agreed to, where there is one."""
    from logitspec.core import verify

    real = verify.accept_walk

    def walk(nodes, preds, index=None):
        path, bonus = real(nodes, preds, index)
        kids = [n for n in nodes if n.parent == path[-1]] if len(nodes) > 1 else []
        return (path + [kids[0].id], bonus) if kids else (path, bonus)
    mp.setattr(verify, "accept_walk", walk)


def _prefix(mp):
    """A drafted node's logits are processed with its parent's prefix instead of its own."""
    from logitspec.core import verify

    real = verify.LazyHead.prefix
    mp.setattr(verify.LazyHead, "prefix",
               lambda self, node: real(self, node)[:-1] if self.index.depth[node] > 0 else real(self, node))


def _label(mp):
    """Prompt lookup's lane row is labelled as LogitSpec's cost tree is, on every view drawn in this process."""
    import dataclasses

    from logitspec.analysis import lanes

    table = tuple(dataclasses.replace(ln, label=lanes.lane("logitspec").label) if ln.name == "pld" else ln
                  for ln in lanes.LANES)
    mp.setattr(lanes, "LANES", table)


MUTATIONS = {"mask": _mask, "positions": _positions, "window": _window, "cache": _cache, "accept": _accept,
             "prefix": _prefix, "label": _label}


def pytest_configure(config):
    name = os.environ.get(VARIABLE)
    if not name:
        return
    import pytest

    mp = pytest.MonkeyPatch()
    MUTATIONS[name](mp)
    config.add_cleanup(mp.undo)
