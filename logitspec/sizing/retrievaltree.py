"""LogitSpec's cost tree: g1's continuation and every next-next candidate's g2 branch in one trie,
each node's chance its kind's (`first_key`, `cont_key`), sized by measured cost (`CostSizer`).

Every step reveals the true next tokens, so all drafted nodes (verified or not) whose parent was
right teach the chances, and so do the candidates left out of the trie and each chain's tokens
past where the trie cut it (`ChainTail`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.trace import Candidate, QueryRecord, TreeNode, TreeSizing
from .costtree import AcceptanceStats, CostSizer, evidence, rank_bucket, walk_tests
from .curve import CostCurve
from .trie import Trie

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def first_key(cand: Candidate | None, g1n: int, g2n: int) -> tuple:
    """The kind of a guess for x_{i+2}: its rank bucket (0 for g1's own guess) and the
    evidence (`evidence`) by which g1 and its g2 query back it."""
    return ("first", rank_bucket(cand.rank if cand is not None else None), g1n, g2n)


def cont_key(n: int, depth: int) -> tuple:
    """The kind of a continuation token at `depth` after a match with evidence n (`evidence`)."""
    return ("cont", n, min(depth, 8))


@dataclass
class ChainTail:
    """What a drafted chain held past the deepest node the truth reached: its next tokens,
    tested against the text as later steps commit it, as if they had been verified. The
    trie stops a chain where its chance falls under the floor, so without these tests a
    node kind cut early (a copy after a bare 1-gram) never shows how often it was right."""

    tokens: list[int]
    n: int  # the chain's evidence (`evidence`)
    origin: str
    depth: int  # the depth tokens[0] would have had in its tree

    def test(self, text: Sequence[int], tests: dict[tuple, list[bool]]) -> "ChainTail | None":
        """Test the tail against `text`, the tokens that follow its last tested one; return
        what is left to test against the text after it (None: a miss, or nothing left)."""
        for i, (tok, right) in enumerate(zip(self.tokens, text)):
            key = cont_key(self.n, self.depth + i)
            tests.setdefault((key, self.origin), []).append(tok == right)
            if tok != right:
                return None
        used = min(len(self.tokens), len(text))
        rest = self.tokens[used:]
        return ChainTail(rest, self.n, self.origin, self.depth + used) if rest else None


class RetrievalCostTree:
    """Builds each step's tree from LogitSpec's queries, by expected gain per measured second."""

    def __init__(self, model: PreTrainedModel | None, stats: AcceptanceStats | None = None,
                 curve: CostCurve | None = None,
                 first: Callable[[Candidate | None, int, int], tuple] = first_key) -> None:
        self.sizer = CostSizer(model, stats, curve)
        self.first_key = first  # the kind of a guess for x_{i+2}
        self.skipped: list[tuple[int, tuple]] = []  # first tokens left out of the trie, for learning
        self.tail: ChainTail | None = None  # the last step's chain past the truth, for learning
        self._chains: tuple = (None, 0, ())  # the step's g1 query, its length and g2 pairs

    @property
    def calibration_seconds(self) -> float:
        return self.sizer.calibration_seconds

    @property
    def trie(self) -> Trie | None:
        return self.sizer.trie

    def build(
        self,
        root: int,
        g1: QueryRecord | None,
        g2: Sequence[tuple[Candidate, QueryRecord]],
        capacity: int,
        g1_len: int,
        context_len: int,
    ) -> tuple[list[TreeNode], TreeSizing]:
        """Insert the drafted branches into one trie, then keep the prefix that gains most over the
        run's rate (`CostSizer.size`)."""
        return self.sizer.size(lambda floor: self._grow(root, g1, g2, g1_len, floor), capacity, context_len)

    def _grow(self, root: int, g1: QueryRecord | None, g2: Sequence[tuple[Candidate, QueryRecord]],
              g1_len: int, floor: float) -> Trie:
        """The trie of g1's chain and every candidate's branch, nodes under `floor` left out."""
        trie, self.skipped = Trie(root), []
        self._chains = (g1, g1_len, g2)
        g1n = evidence(g1)
        if g1 is not None and g1.continuation:
            self._add_g1(trie, g1.continuation[:g1_len], g1n, floor)
        for i, (cand, q) in enumerate(g2):
            self._add_candidate(trie, cand, q, 1 + i, g1n, floor)
        # A node's chance can never exceed its parent's (an upgraded parent lifts nothing here).
        for nid in range(1, len(trie.token)):
            par = trie.parent[nid]
            if par > 0 and trie.p[nid] > trie.p[par]:
                trie.p[nid] = trie.p[par]
        return trie

    def _add_g1(self, trie: Trie, chain: Sequence[int], g1n: int, floor: float) -> None:
        """g1's continuation as one chain under the root; its first token guesses x_{i+2}."""
        node, prob = 0, 1.0
        for d, tok in enumerate(chain):
            key = self.first_key(None, g1n, 0) if d == 0 else cont_key(g1n, d + 1)
            prob *= self.sizer.chance(key, "g1")
            if d > 0 and prob < floor:
                break
            node = trie.grow(node, int(tok), "g1", None, 0, key, prob)

    def _add_candidate(self, trie: Trie, cand: Candidate, q: QueryRecord, query: int, g1n: int,
                       floor: float) -> None:
        """A candidate and its g2 continuation. A candidate under `floor` stays out of the
        trie but is kept in `skipped`, to learn from."""
        g2n = evidence(q)
        first = trie.child.get((0, cand.token))
        key = self.first_key(cand, g1n if first is not None else 0, g2n)
        prob = self.sizer.chance(key, "g2")
        if first is not None:  # g1 drafted the same token: more evidence, one node
            trie.key[first], trie.rank[first] = key, cand.rank
            trie.p[first] = prob = max(prob, trie.p[first])
            node = first
        elif prob < floor:
            self.skipped.append((cand.token, key))
            return
        else:
            node = trie.grow(0, cand.token, "g2", cand.rank, query, key, prob)
        for d, tok in enumerate(q.continuation, start=2):
            key = cont_key(g2n, d)
            prob *= self.sizer.chance(key, "g2")
            if prob < floor:
                break
            nxt = trie.child.get((node, int(tok)))
            if nxt is None:
                nxt = trie.grow(node, int(tok), "g2", cand.rank, query, key, prob)
            elif prob > trie.p[nxt]:  # a shared node takes its best-backed branch's chance
                trie.p[nxt], trie.key[nxt] = prob, key
            node = nxt

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        """Learn from the step's truth: root, the accepted drafts, then the bonus token; and
        check the cost curve against the step's measured forward time (`verified` tokens in
        `seconds`).

        Every drafted node whose parent lies on the true path was, in effect, tested, and so
        was every candidate left out of the trie for its low chance, and so is the chain
        through the deepest right node past where the trie or the truth ended (`ChainTail`).
        """
        trie = self.sizer.learn_pass(truth, verified, seconds, threads)
        if trie is None:
            return
        # The outcomes in order, gathered by node kind: a step tests ~60 nodes of a dozen kinds.
        tests: dict[tuple, list[bool]] = {}
        # The last step's chain against this step's new tokens; what is left of it is dropped,
        # as this step's own chains cover the text from here.
        if self.tail is not None:
            self.tail.test(truth[1:], tests)
        second = truth[1]
        for tok, key in self.skipped:
            tests.setdefault((key, "g2"), []).append(tok == second)
        node, reached = walk_tests(trie, truth, tests)
        self.tail = self._tail(trie, node, truth[reached + 1:], tests)
        self.sizer.learn(tests)

    def _tail(self, t: Trie, node: int, after: Sequence[int], tests: dict[tuple, list[bool]]) -> ChainTail | None:
        """The chain through `node`, the deepest right one, past it: tested against `after`
        (the truth past the node) where the trie left it untested; returns what is left."""
        if node == 0:
            return None
        g1, g1_len, g2 = self._chains
        q = t.query[node]
        if q == 0:
            chain, n, origin = g1.continuation[:g1_len], evidence(g1), "g1"
        else:
            cand, rec = g2[q - 1]
            chain, n, origin = [cand.token, *rec.continuation], evidence(rec), "g2"
        depth = t.depth[node]
        tail = ChainTail(chain[depth:], n, origin, depth + 1)
        if not tail.tokens or (after and (node, tail.tokens[0]) in t.child):
            return None  # nothing past it, or its next node was in the trie and tested already
        return tail.test(after, tests) if after else tail
