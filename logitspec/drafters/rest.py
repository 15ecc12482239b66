"""REST (He et al., 2023; FasterDecoding/REST): drafts retrieved from a datastore, not the context.

The datastore is a token array and its suffix array. Each step takes the longest suffix of
the context (the root included, from `rest_suffix` tokens down to 2) that occurs in it, reads
up to `rest_matches` continuations of `rest_span` tokens after its occurrences, counts every
prefix of them, and keeps the `rest_drafts` most frequent prefixes: a trie under the root (a
prefix is at least as frequent as its extensions, so the kept set is closed under prefixes).

REST's own datastores are built from UltraChat (chat) and The Stack (code), gigabytes of text.
Here the corpus is what every Python installation holds: the standard library's own sources
(Python Software Foundation License), tokenised with the model's tokenizer once and cached on
disk. It is small, and it is code; on prose it rarely matches.
"""
from __future__ import annotations

import hashlib
import os
import sysconfig
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.drafter import Draft, Drafter
from ..core.errors import DecodeError
from ..core.retrieval import NgramPool
from ..core.settings import DecodeSettings
from ..core.trace import QueryRecord, TreeNode
from ..core.tree import DraftTree
from ..runtime.files import written_whole

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

ORIGIN = "retrieved"  # TreeNode.origin of a datastore continuation's token
ATTRIBUTE = "logitspec_rest"  # the model's datastore source (attach)
CORPUS_CHARS = 6_000_000  # the standard library read, in characters: a few seconds to tokenise
MIN_SUFFIX = 2  # REST's shortest suffix tried


def suffix_array(tokens: np.ndarray) -> np.ndarray:
    """The start of every suffix of `tokens`, in sorted order (prefix doubling, O(n log^2 n))."""
    n = len(tokens)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    rank = np.unique(np.asarray(tokens), return_inverse=True)[1].astype(np.int64).reshape(-1)
    k = 1
    while True:
        second = np.zeros(n, dtype=np.int64)
        second[: n - k] = rank[k:] + 1  # 0: the suffix ends first, and sorts first
        # One integer key per suffix (rank < n): one sort a round instead of lexsort's two.
        key = rank * (n + 1) + second
        sa = np.argsort(key)
        ordered = key[sa]
        rank = np.empty(n, dtype=np.int64)
        rank[sa] = np.concatenate(([0], np.cumsum(ordered[1:] != ordered[:-1])))
        if rank[sa[-1]] == n - 1 or k >= n:
            return sa
        k *= 2


class Datastore:
    """Tokens and their suffix array; `matches` finds where a token string occurs."""

    def __init__(self, tokens: Sequence[int] | np.ndarray, sa: np.ndarray | None = None, name: str = "tokens") -> None:
        self.tokens = np.asarray(tokens, dtype=np.int64)
        self.sa = suffix_array(self.tokens) if sa is None else np.asarray(sa, dtype=np.int64)
        self.name = name

    def __len__(self) -> int:
        return len(self.tokens)

    def _bound(self, pattern: list[int], upper: bool) -> int:
        """The first suffix-array index whose suffix's first len(pattern) tokens sort after
        `pattern` (upper) or not before it (lower)."""
        lo, hi, m = 0, len(self.sa), len(pattern)
        while lo < hi:
            mid = (lo + hi) // 2
            s = int(self.sa[mid])
            head = self.tokens[s : s + m].tolist()
            if head < pattern or (upper and head == pattern):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def matches(self, pattern: Sequence[int]) -> np.ndarray:
        """Start positions of `pattern`'s occurrences, in suffix-array order."""
        p = [int(t) for t in pattern]
        lo = self._bound(p, False)
        return self.sa[lo : self._bound(p, True)]

    def continuations(self, starts: np.ndarray, span: int) -> np.ndarray:
        """[m, span] tokens from each start, -1 past the end."""
        idx = starts[:, None] + np.arange(span)[None, :]
        inside = idx < len(self.tokens)
        return np.where(inside, self.tokens[np.minimum(idx, len(self.tokens) - 1)], -1)


def frequent_prefixes(conts: np.ndarray, most: int) -> list[tuple[int, list[int]]]:
    """The `most` most frequent prefixes of the rows of `conts` [m, span] (-1: no token), as
    (count, tokens), most frequent first and shorter first among equals: closed under prefixes."""
    m, span = conts.shape
    ids = np.zeros(m, dtype=np.int64)
    alive = np.ones(m, dtype=bool)
    width = int(conts.max(initial=0)) + 2
    found: list[tuple[int, int, int]] = []  # (count, depth, a row holding it)
    for d in range(span):
        alive &= conts[:, d] >= 0
        if not alive.any():
            break
        key = ids * width + conts[:, d] + 1
        rows = np.flatnonzero(alive)
        uniq, first, inverse, counts = np.unique(key[rows], return_index=True, return_inverse=True, return_counts=True)
        ids = np.zeros(m, dtype=np.int64)
        ids[rows] = inverse + 1
        found += [(int(c), d + 1, int(rows[f])) for c, f in zip(counts, first)]
    found.sort(key=lambda x: (-x[0], x[1]))
    return [(c, conts[r, :d].tolist()) for c, d, r in found[:most]]


def retrieve_tree(root: int, context: Sequence[int], store: Datastore, suffix: int, matches: int, span: int,
                  drafts: int) -> tuple[list[TreeNode], QueryRecord]:
    """The step's tree under the root from the longest suffix found, and its query record."""
    tail = [*context[-suffix:], int(root)][-suffix:]
    tried: list[int] = []
    for n in range(min(suffix, len(tail)), MIN_SUFFIX - 1, -1):
        tried.append(n)
        starts = store.matches(tail[-n:])
        if len(starts):
            conts = store.continuations(starts[:matches] + n, span)
            paths = frequent_prefixes(conts, drafts)
            tree = DraftTree(root)
            for _, path in paths:
                tree.add_branch(0, path, keep=len(path), capacity=drafts + 1, origin=ORIGIN, query=0)
            top = max(paths, key=lambda cp: (cp[0], len(cp[1])))[1] if paths else []
            q = QueryRecord("rest", None, tuple(tail), tuple(tried), n, None, top)
            return tree.finalize(), q
    tree = DraftTree(root)
    return tree.finalize(), QueryRecord("rest", None, tuple(tail), tuple(tried), None, None, [])


# ----- the corpus: Python's standard library, tokenised once per tokenizer -------------------------

def corpus_files() -> list[Path]:
    """The standard library's .py sources, tests left out, in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idle_test", "__pycache__"}
    return sorted(p for p in root.rglob("*.py") if not skip & set(p.relative_to(root).parts))


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "logitspec" / "rest"


def tokenizer_key(tokenizer) -> str:
    """A name for the tokenizer's vocabulary, so each tokenizer gets its own datastore file."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    return hashlib.sha1(repr(vocab).encode("utf-8")).hexdigest()[:16]


def build_datastore(tokenizer, chars: int = CORPUS_CHARS) -> Datastore:
    """The standard library's datastore for this tokenizer, read from the cache when built before."""
    path = cache_dir() / f"stdlib-{sysconfig.get_python_version()}-{tokenizer_key(tokenizer)}-{chars}.npz"
    name = f"Python {sysconfig.get_python_version()} standard library"
    if path.exists():
        with np.load(path) as f:
            return Datastore(f["tokens"], f["sa"], name)
    texts, total = [], 0
    for p in corpus_files():
        if total >= chars:
            break
        text = p.read_text(encoding="utf-8", errors="replace")[: chars - total]
        texts.append(text)
        total += len(text)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    tokens = np.fromiter((t for row in ids for t in row), dtype=np.int64)
    store = Datastore(tokens, name=name)
    with written_whole(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, tokens=store.tokens.astype(np.int32), sa=store.sa.astype(np.int32))
    return store


class DatastoreSource:
    """A model's datastore: given, or built from its tokenizer at first use (thread-safe)."""

    def __init__(self, tokenizer=None, store: Datastore | None = None) -> None:
        self.tokenizer, self.store = tokenizer, store
        self.lock = threading.Lock()

    def get(self) -> Datastore | None:
        with self.lock:
            if self.store is None and self.tokenizer is not None:
                self.store = build_datastore(self.tokenizer)
            return self.store


def attach(model, tokenizer=None, store: Datastore | None = None) -> None:
    """Give `model` its datastore: built from `tokenizer` when REST first runs, or `store` as given."""
    vars(model)[ATTRIBUTE] = DatastoreSource(tokenizer, store)


def datastore_of(model) -> Datastore | None:
    source = vars(model).get(ATTRIBUTE) if model is not None else None
    return source.get() if source is not None else None


class RestDrafter(Drafter):
    """REST as a drafter: the tree of the most frequent continuations, in the model's
    datastore, of the longest suffix of the context found there."""

    method = "rest"

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        self.s = s
        self.store = datastore_of(model)
        if self.store is None:
            raise DecodeError("REST has no datastore for this model: load it with logitspec.models.load_model, "
                              "or give it one with logitspec.drafters.rest.attach")
        # A pass holds at most `capacity` tokens, the root included: the one shape a GPU pads every pass to.
        self.drafts = min(s.rest_drafts, s.capacity - 1)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s = self.s
        nodes, query = retrieve_tree(root, pool.tokens, self.store, s.rest_suffix, s.rest_matches, s.rest_span,
                                     self.drafts)
        return Draft(nodes=nodes, queries=[query])
