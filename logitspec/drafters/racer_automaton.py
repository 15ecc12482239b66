"""RACER's Aho-Corasick automaton over the context's n-grams (hkr04/RACER, racer/automaton/src/automaton.cpp
at fc494a3, cited below as cpp:LINE): a trie with counts, fail links and LRU eviction, its state
advanced token by token.

Fail links (`links`):
- "reference" (the default, as the authors' code): computed for the whole trie once, by `build`,
  after the prompt's n-grams (cpp:308-330); a node made later links to the root (cpp:166-170), and
  every node a transition or a match touches has its own and its ancestors' links reset to the
  root (`touch_prefix`, cpp:140-153, called at cpp:340 and cpp:386-388).
- "exact": the links kept the longest proper suffix in the trie as nodes come and go, as the
  paper's automaton is described: a new node takes its link from its parent's chain and takes over
  the nodes whose paths end in its own; an evicted leaf hands its nodes on to its own link.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence

LINKS = ("reference", "exact")


class Automaton:
    """A trie of token n-grams with occurrence counts, fail links and LRU eviction (node ids reused)."""

    def __init__(self, max_nodes: int, links: str = "reference") -> None:
        if links not in LINKS:
            raise ValueError(f"racer fail links: {links!r} is not one of {LINKS}")
        self.max_nodes = max(2, max_nodes)
        self.exact = links == "exact"
        self.children: list[dict[int, int]] = [{}]
        self.parent, self.token, self.freq, self.depth, self.link = [-1], [-1], [0], [0], [0]
        self.born, self.link_born, self.made = [0], [0], 0  # a link holds while its node is the one it was made to
        self.lru: OrderedDict[int, None] = OrderedDict()  # least recently used first; the root never enters
        self.free: list[int] = []
        self.state = 0  # where the text read so far leaves the automaton (cpp:131 `_cur_state`)
        self.linked: dict[int, dict[int, set[int]]] = {}  # link -> token -> nodes: who to hand on or take over

    def __len__(self) -> int:
        return len(self.children) - len(self.free)

    def path(self, node: int) -> list[int]:
        out = []
        while node > 0:
            out.append(self.token[node])
            node = self.parent[node]
        return out[::-1]

    def walk(self, tokens: Sequence[int]) -> int | None:
        node = 0
        for t in tokens:
            node = self.children[node].get(t)
            if node is None:
                return None
        return node

    def fail(self, node: int) -> int:
        """The node's link; the root where the node it was made to has been evicted since (reference links)."""
        to = self.link[node]
        return to if self.born[to] == self.link_born[node] else 0

    def insert(self, pattern: Sequence[int]) -> None:
        """Count one occurrence of `pattern` and of each of its prefixes (cpp:193-209)."""
        node = 0
        self.freq[0] += 1
        for t in pattern:
            nxt = self.children[node].get(int(t))
            if nxt is None:
                nxt = self._new(node, int(t))
            node = nxt
            self.freq[node] += 1
        self._touch_up(node)
        self._evict()

    def _new(self, parent: int, token: int) -> int:
        nid = self.free.pop() if self.free else len(self.children)
        if nid == len(self.children):
            for col in (self.children, self.parent, self.token, self.freq, self.depth, self.link, self.born,
                        self.link_born):
                col.append(None)
        self.link[nid] = None  # a reused id's old link was dropped with it
        self.made += 1
        self.born[nid] = self.made
        self.children[nid], self.parent[nid], self.token[nid] = {}, parent, token
        self.freq[nid], self.depth[nid] = 0, self.depth[parent] + 1
        self.children[parent][token] = nid
        self.lru[nid] = None
        self._set_link(nid, self._link_of(parent, token) if self.exact else 0)
        if self.exact:
            self._take_over(nid)
        return nid

    def _set_link(self, node: int, to: int) -> None:
        old = self.link[node]
        self.link[node], self.link_born[node] = to, self.born[to]
        if self.exact:  # exact links are handed on when their node goes: each node's linkers are indexed
            if old is not None:
                self.linked.get(old, {}).get(self.token[node], set()).discard(node)
            self.linked.setdefault(to, {}).setdefault(self.token[node], set()).add(node)

    def _link_of(self, parent: int, token: int) -> int:
        """The longest proper suffix of path(parent) + token in the trie (the classic construction)."""
        if parent == 0:
            return 0
        f = self.fail(parent)
        while f and token not in self.children[f]:
            f = self.fail(f)
        return self.children[f].get(token, 0)

    def _take_over(self, node: int) -> None:
        """Nodes whose paths end in the new node's path linked to its own link until now: they link to it."""
        d = self.depth[node]
        for w in list(self.linked.get(self.link[node], {}).get(self.token[node], ())):
            if self.depth[w] > d and self._ends_with(w, node):
                self._set_link(w, node)

    def _ends_with(self, w: int, v: int) -> bool:
        while v > 0:
            if self.token[w] != self.token[v]:
                return False
            w, v = self.parent[w], self.parent[v]
        return True

    def build(self) -> None:
        """Every node's link anew, breadth first from the root (cpp:308-330)."""
        queue = deque(self.children[0].values())
        while queue:
            u = queue.popleft()
            self._set_link(u, self._link_of(self.parent[u], self.token[u]))
            queue.extend(self.children[u].values())

    def _touch_up(self, node: int) -> None:
        """Mark a node and its ancestors used, parents after children: the least recently used node is a leaf."""
        while node > 0:
            self.lru.move_to_end(node)
            node = self.parent[node]

    def _forget(self, node: int) -> None:
        """A touched node and its ancestors: used now; under the reference's links, linked to the root (cpp:140-153)."""
        self._touch_up(node)
        if not self.exact:
            while node > 0:
                self._set_link(node, 0)
                node = self.parent[node]

    def _evict(self) -> None:
        while len(self) > self.max_nodes:
            victim = next(iter(self.lru))
            to = self.fail(victim)
            for tok, nodes in self.linked.pop(victim, {}).items():  # exact links: on to the next shorter suffix
                for w in nodes:
                    self._set_link(w, to)
            self.linked.get(to, {}).get(self.token[victim], set()).discard(victim)
            self.born[victim] = -1  # reference links to it lapse (`fail`)
            del self.lru[victim]
            del self.children[self.parent[victim]][self.token[victim]]
            self.free.append(victim)
            if self.state == victim:
                self.state = to

    def feed(self, tokens: Sequence[int]) -> None:
        """Read tokens (cpp:332-347): to the child that holds the token, else along fail links until a
        node has one (the node reached there touched: `_forget`), else to the root."""
        u = self.state
        for t in tokens:
            t = int(t)
            if t not in self.children[u]:
                while u and t not in self.children[u]:
                    u = self.fail(u)
                self._forget(u)
            u = self.children[u].get(t, 0)
        self.state = u
        self._touch_up(u)

    def matches(self, token: int, min_depth: int) -> tuple[list[int], int | None]:
        """The nodes that follow the state and each node on its fail chain with `token`, the state's
        first, the root's last; those at least `min_depth` deep, and the first of all (cpp:356-384)."""
        out, first, u = [], None, self.state
        while True:
            v = self.children[u].get(token)
            if v is not None:
                first = v if first is None else first
                if self.depth[v] >= min_depth:
                    out.append(v)
            if u == 0:
                return out, first
            u = self.fail(u)

    def advance(self, token: int, min_depth: int) -> list[int]:
        """Read the root token as the reference's retrieval does: the state moves to the first node
        that follows with it (stays if none), and each match is touched (cpp:356-388). The matches."""
        borders, first = self.matches(token, min_depth)
        if first is not None:
            self.state = first
        for b in borders:
            self._forget(b)
        return borders


STD_BUCKETS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229)  # libstdc++'s, as it grows


def std_order(keys: Sequence[int]) -> list[int]:
    """The order a libstdc++ std::unordered_map<int, ...> iterates `keys`, inserted in this order: the
    reference's sibling order (cpp:14), which decides who joins its heap first among equal counts."""
    order: list[int] = []
    room, grown = 0, 0
    for k in keys:
        if len(order) + 1 > room:  # it rehashes before the insert that would pass one key a bucket
            room = STD_BUCKETS[min(grown, len(STD_BUCKETS) - 1)]
            grown += 1
            order = _placed([], order, room)
        _placed(order, [k], room)
    return order


def _placed(order: list[int], keys: Sequence[int], buckets: int) -> list[int]:
    """Each key put first in its bucket's run of the list, or first of all when its bucket is empty."""
    for k in keys:
        b = k % buckets
        order.insert(next((i for i, x in enumerate(order) if x % buckets == b), 0), k)
    return order
