"""Retrieval pool: n-grams of the context mapped to where their most recent follower sits.

Pure Python, no torch. The pool grows with the context: each appended token registers the
n-grams that end just before it, so an update costs O(tokens added x n-gram sizes) and the
pool never rescans the context.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from .settings import DecodeSettings
from .trace import Candidate, QueryRecord

PRUNED_SHOWN_PER_BRANCH = 3  # how many cut tokens per branch the trace keeps for the picture
G2_COST_LEN = 8  # g2 continuation fetched for the cost-aware tree, which may keep it all
MATCH_LEN_CAP = 16  # how far back a match's agreement is counted


class NgramPool:
    """Maps each n-gram of the context to the index of the token that followed it last.

    Held by the n-gram's first n - 1 tokens, then its last: a step asks about ~64 n-grams
    that share all but their last token (g2's), and finds what they share once.
    """

    def __init__(self, sizes: Iterable[int] = (1, 2, 3), tokens: Iterable[int] = (), keep: str = "recent",
                 span: int = 20) -> None:
        self.sizes: tuple[int, ...] = tuple(sorted(set(int(n) for n in sizes), reverse=True))
        if not self.sizes or self.sizes[-1] < 1:
            raise ValueError("n-gram sizes must be positive integers")
        if keep not in ("recent", "longest"):
            raise ValueError(f"unknown pool {keep!r}; choose recent or longest")
        self.keep, self.span = keep, span
        self.tokens: list[int] = []
        self.follow: dict[tuple[int, ...], dict[int, int]] = {}  # n-gram head -> {last token: follower index}
        # "longest" only: every follower index of each n-gram, ascending
        self.occurs: dict[tuple[int, ...], list[int]] = {}
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def table(self) -> dict[tuple[int, ...], int]:
        """Every n-gram with a follower -> the index of its latest follower (for inspection)."""
        return {(*head, last): pos for head, lasts in self.follow.items() for last, pos in lasts.items()}

    def extend(self, new_tokens: Iterable[int]) -> None:
        """Append tokens to the context; later occurrences overwrite earlier ones."""
        toks, follow = self.tokens, self.follow
        for tok in new_tokens:
            t = len(toks)
            for n in self.sizes:
                if t >= n:
                    head = tuple(toks[t - n : t - 1])
                    lasts = follow.get(head)
                    if lasts is None:
                        lasts = follow[head] = {}
                    lasts[toks[t - 1]] = t
                    if self.keep == "longest":
                        self.occurs.setdefault((*head, toks[t - 1]), []).append(t)
            toks.append(int(tok))

    def pick(self, first: tuple[int, ...], last: int, latest: int) -> int:
        """The follower index a lookup continues: the latest occurrence ("recent"), or the one
        with the longest continuation up to `span` tokens, the latest among equals ("longest",
        the paper's pool: a newer occurrence wins only when its continuation is as long)."""
        if self.keep == "recent":
            return latest
        occ = self.occurs[(*first, last)]
        full = bisect_right(occ, len(self.tokens) - self.span) - 1  # the latest with `span` tokens after it
        return occ[full] if full >= 0 else occ[0]

    def query(
        self,
        kind: str,
        suffix: Sequence[int],
        max_len: int,
        candidate_rank: int | None = None,
        sizes: Sequence[int] | None = None,
    ) -> QueryRecord:
        """Look up the continuation of `suffix` (the tail of context + pending tokens).

        Tries the longest n-gram first and falls back to shorter ones; records every try.
        """
        if not suffix:
            return QueryRecord(kind, candidate_rank, (), (), None, None, [])
        return self.query_each(kind, suffix[:-1], [suffix[-1]], [max_len], [candidate_rank], sizes)[0]

    def query_each(
        self,
        kind: str,
        head: Sequence[int],
        lasts: Sequence[int],
        max_lens: Sequence[int],
        ranks: Sequence[int | None],
        sizes: Sequence[int] | None = None,
    ) -> list[QueryRecord]:
        """`query` of head + [last] for each of `lasts` (with its max_len and rank)."""
        end = len(head) + 1
        tries = []  # per n-gram size: (n, its first n - 1 tokens, their followers)
        for n in sizes if sizes is not None else self.sizes:
            if n <= end:
                first = tuple(head[end - n:])
                tries.append((n, first, self.follow.get(first)))
        lengths = tuple(n for n, _, _ in tries)
        upto = [lengths[: i + 1] for i in range(len(lengths))]  # the sizes tried when the i-th matched
        top = tries[0][1] if tries else None
        toks, out = self.tokens, []
        for last, max_len, rank in zip(lasts, max_lens, ranks):
            ngram = (*top, last) if top is not None else ()
            for i, (n, first, followers) in enumerate(tries):
                pos = followers.get(last) if followers is not None else None
                if pos is not None:
                    pos = self.pick(first, last, pos)
                    out.append(QueryRecord(kind, rank, ngram, upto[i], n, pos - n, toks[pos:pos + max_len]))
                    break
            else:
                out.append(QueryRecord(kind, rank, ngram, lengths, None, None, []))
        return out


def match_length(pool: NgramPool, q: QueryRecord, pending: Sequence[int]) -> int | None:
    """How far back q's match agrees with the text it extends, the pool's tokens then
    `pending`: matched_n, or more (up to MATCH_LEN_CAP). A long agreement marks copied text,
    where the continuation is far likelier to be right than after a bare 3-gram."""
    if q.matched_n is None:
        return None
    toks, length = pool.tokens, q.matched_n
    a, b = q.match_pos - 1, len(toks) + len(pending) - length - 1  # the tokens before each side
    while length < MATCH_LEN_CAP and a >= 0:
        if toks[a] != (toks[b] if b < len(toks) else pending[b - len(toks)]):
            break
        length, a, b = length + 1, a - 1, b - 1
    return length


def retrieve(root: int, cands: Sequence[Candidate], pool: NgramPool, s: DecodeSettings) -> list[QueryRecord]:
    """g1 for x_{i+1}, then g2 for each candidate x^_{i+2}; g1 is element 0."""
    tail = pool.tokens[-max(pool.sizes):] + [root]
    queries = [pool.query("g1", tail, s.continuation + PRUNED_SHOWN_PER_BRANCH)]
    queries[0].match_len = match_length(pool, queries[0], [root])
    cost_len = min(s.continuation, G2_COST_LEN)
    # A static branch keeps at most rule.keep(rank) tokens, the candidate included; fetch
    # only that plus the few cut tokens the picture shows.
    wants = [cost_len if s.tree == "cost" else min(s.continuation, s.rule.keep(c.rank) - 1 + PRUNED_SHOWN_PER_BRANCH)
             for c in cands]
    g2 = pool.query_each("g2", tail, [c.token for c in cands], wants, [c.rank for c in cands])
    for c, q in zip(cands, g2):
        if q.matched_n is not None:
            q.match_len = match_length(pool, q, (root, c.token))
    return queries + g2
