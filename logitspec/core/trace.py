"""The trace: one StepRecord per forward pass, gathered in a RunTrace.

The trace is the one contract between the engine and everything that shows or measures
it. It holds plain Python values only (no tensors), so it round-trips through JSON exactly
and can be redrawn anywhere without torch or a model.
"""
from __future__ import annotations

import dataclasses
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .limits import InputError, size_words

# Format 2 writes each step's candidates, queries (and their attempts) and tree as columns,
# one list per field, instead of one object per entry: a LogitSpec step drafts ~64 guesses
# and queries, and repeating every key name in every entry made format 1 files about three
# times larger. Both formats load.
TRACE_FORMAT = "logitspec-trace/2"

# A step's retrieval outcome, read by the debugger's filter, the pictures and the bench.
G1_MATCHED, G2_RESCUED, BOTH_FAILED = "g1 matched", "g2 rescued", "both failed"
PLD_MATCHED, PLD_FAILED = "matched", "failed"
NO_RETRIEVAL = "no retrieval"
# What a forward step's draft came to, for every drafter: retrieval can match and still draft nothing
# (a cost tree may cut every branch), or draft and have every token rejected.
DRAFT_ACCEPTED, DRAFT_REJECTED, NO_DRAFT = "draft accepted", "draft rejected", "no draft"
DRAFT_OUTCOMES = (DRAFT_ACCEPTED, DRAFT_REJECTED, NO_DRAFT)
# Drafters whose step makes one lookup, matched or failed: prompt lookup, Lookahead's pool, REST's datastore.
ONE_QUERY_KINDS = ("pld", "lookahead", "rest")


# The records a step makes by the dozen (candidates, queries, nodes) are slotted: quicker to create.
@dataclass(slots=True)
class Candidate:
    """A guess for the next-next token x_{i+2}, taken from the last logits."""

    rank: int  # 1 = most likely after x_{i+1}
    token: int
    logit: float
    prob: float


@dataclass(slots=True)
class NgramAttempt:
    """One lookup of one n-gram length inside a query (built on demand: `QueryRecord.attempts`)."""

    n: int
    ngram: list[int]
    matched: bool


@dataclass(slots=True)
class QueryRecord:
    """A retrieval query: g1 (for x_{i+1}) or g2 (for one candidate x^_{i+2}).

    A step makes ~65 of them and the run keeps them all, so the lookups are held as two
    tuples of ints, which the garbage collector stops tracking, rather than as objects it
    would walk again at every collection of the run (docs/performance.md).
    """

    kind: str  # "g1" | "g2" | "pld" | "lookahead" (its pool) | "rest" (its datastore)
    candidate_rank: int | None  # for g2: the rank of the candidate it extends
    ngram: tuple[int, ...]  # the longest n-gram tried: the query's tail; () when nothing was tried
    tried: tuple[int, ...]  # the n-gram lengths tried, longest first; the last one matched if matched_n
    matched_n: int | None  # the n-gram length that matched, or None
    match_pos: int | None  # context index where the matched n-gram starts
    continuation: list[int]  # tokens that followed the match (empty when none)
    # Tokens before the continuation that agree with the text being extended: matched_n, or
    # more where the match runs further back (up to retrieval.MATCH_LEN_CAP); None when unmatched
    # or not measured (prompt lookup, older traces).
    match_len: int | None = None

    @property
    def matched(self) -> bool:
        return self.matched_n is not None

    @property
    def attempts(self) -> list[NgramAttempt]:
        """Each lookup in the order tried: the n-gram of each length, the tail of `ngram`."""
        k = len(self.ngram)
        return [NgramAttempt(n, list(self.ngram[k - n:]), n == self.matched_n) for n in self.tried]

    @classmethod
    def of_attempts(cls, kind: str, candidate_rank: int | None, attempts: list[NgramAttempt],
                    matched_n: int | None, match_pos: int | None, continuation: list[int],
                    match_len: int | None = None) -> "QueryRecord":
        """A record from its lookups as objects (trace files hold them so)."""
        ngram = max((a.ngram for a in attempts), key=len, default=())
        return cls(kind, candidate_rank, tuple(ngram), tuple(a.n for a in attempts), matched_n, match_pos,
                   continuation, match_len)


@dataclass(slots=True)
class TreeNode:
    """A node of the draft tree. Node 0 is the root x_{i+1}; parents precede children."""

    id: int
    token: int
    parent: int  # -1 for the root
    depth: int  # root = 0
    # "root" | "g1" | "g2" | "pld" | "recycled" (Token Recycling's matrix: recycling.py) | "pool" and
    # "window" (Lookahead's: lookahead.py) | "retrieved" (REST's datastore: rest.py)
    origin: str
    # g2: the candidate rank of the branch it belongs to; recycled: its rank in the matrix row of
    # its parent's token, the row it was read from (1 = likeliest successor)
    rank: int | None = None
    query: int | None = None  # index into StepRecord.queries that produced it
    pruned: bool = False  # cut before verification; never sent to the model
    prune_reason: str | None = None  # "rank" | "capacity" | "cost"
    accept_prob: float | None = None  # cost-aware tree: estimated chance of acceptance
    # The probability the target gave this token after its parent (the distribution sampled
    # from, or the plain softmax when greedy); only for children of nodes the walk visited.
    target_prob: float | None = None


@dataclass
class SourceLookup:
    """What a drafter that makes no query found in one of its sources at a step (RACER's automaton
    and copied logits, SuffixDecoding's prompt and output trees): what it matched and offered."""

    source: str  # the TreeNode.origin of the nodes it drafts
    matched: int  # tokens ending the text, x_{i+1} last, the source matched (copied logits: 1 when it held x_{i+1}'s); 0: none
    offered: int  # draft nodes it proposed, before the tree was sized or merged


@dataclass
class TreeSizing:
    """Why the tree has the size it has (cost-aware mode), for the app to explain."""

    mode: str  # "static" | "cost"
    size: int  # nodes verified, root included
    expected_accepted: float | None  # expected tokens per forward pass at this size
    expected_seconds: float | None  # modelled forward cost at this size
    next_gain: float | None  # expected accepted tokens the next node would have added
    next_seconds: float | None  # modelled cost with that node added
    reason: str
    run_rate: float | None = None  # the run's tokens per modelled second, the bar a node must clear


@dataclass
class StepRecord:
    """One forward pass of a decoder, everything it drafted and what it accepted."""

    index: int
    method: str
    context_len: int  # tokens in the KV cache before this forward pass
    root: int  # x_{i+1}; the first token this step commits
    tokens: list[int]  # tokens committed by this step: root + accepted drafts
    bonus: int | None  # the model's argmax after the last accepted node (next root)
    candidates: list[Candidate] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    tree: list[TreeNode] = field(default_factory=list)
    accepted_path: list[int] = field(default_factory=list)  # node ids, root first
    draft_seconds: float = 0.0
    forward_seconds: float = 0.0
    bookkeeping_seconds: float = 0.0
    forward: bool = True  # False only for a final commit that needed no forward pass
    sizing: TreeSizing | None = None
    root_prob: float | None = None  # softmax probability of the root in its logits
    calibration_seconds: float = 0.0  # one-off measuring (c(n), the thread count) in this step, outside `seconds`
    # The token the target took after each node of accepted_path, in order (argmax when
    # greedy, the draw at that position when sampling); empty in older traces.
    sampled: list[int] = field(default_factory=list)
    # Intra-op threads of a CPU pass (runtime.tuner); None on an accelerator or in older traces.
    threads: int | None = None
    # For each committed token, how far it led the next best token when it was chosen, in ulps
    # of the logits' dtype (sampling.Lead; None when nothing else could be drawn), and that
    # next best token: where two kernels' last bits can part two decoders (a near-tie,
    # serve.race). Empty in older traces.
    leads: list[float | None] = field(default_factory=list)
    runners_up: list[int] = field(default_factory=list)
    # What a drafter without queries found in each of its sources; empty for the others and older traces.
    lookups: list[SourceLookup] = field(default_factory=list)

    @property
    def verified_nodes(self) -> list[TreeNode]:
        return [n for n in self.tree if not n.pruned]

    @property
    def accepted(self) -> int:
        return len(self.tokens)

    @property
    def drafts_accepted(self) -> int:
        """Draft tokens the step accepted: what it committed after its root x_{i+1}."""
        return max(0, len(self.tokens) - 1)

    @property
    def outcome(self) -> str:
        """g1 matched / g2 rescued (g1 failed, a g2 query matched) / both failed; pld: matched / failed;
        a drafter of sources without queries (lookups): matched when a source offered a draft, else failed."""
        if not self.queries:
            if self.lookups:
                return PLD_MATCHED if any(lk.offered for lk in self.lookups) else PLD_FAILED
            if self.method == "recycling":  # a trace written before its matrix was recorded as a lookup
                return PLD_MATCHED if any(n.origin == "recycled" for n in self.tree) else PLD_FAILED
            return NO_RETRIEVAL
        first = self.queries[0]
        if first.kind in ONE_QUERY_KINDS:
            return PLD_MATCHED if first.matched else PLD_FAILED
        g1 = next((q for q in self.queries if q.kind == "g1"), None)
        if g1 is not None and g1.matched:
            return G1_MATCHED
        if any(q.matched for q in self.queries if q.kind == "g2"):
            return G2_RESCUED
        return BOTH_FAILED

    @property
    def draft_outcome(self) -> str:
        """draft accepted: it committed a draft token; draft rejected: draft tokens were verified and
        none held; no draft: nothing past the root was sent to the model."""
        if self.drafts_accepted:
            return DRAFT_ACCEPTED
        return DRAFT_REJECTED if any(n.depth > 0 for n in self.verified_nodes) else NO_DRAFT

    @property
    def retrieved(self) -> bool:
        """Whether any query of the step found a continuation."""
        return self.outcome in (G1_MATCHED, G2_RESCUED, PLD_MATCHED)

    @property
    def seconds(self) -> float:
        return self.draft_seconds + self.forward_seconds + self.bookkeeping_seconds

    @property
    def clock_seconds(self) -> float:
        """Every second the step cost its lane: `seconds` and the one-off measuring it did."""
        return self.seconds + self.calibration_seconds


@dataclass
class RunTrace:
    """A whole run: settings, prompt, prefill and the step records in order."""

    method: str
    model: str
    prompt_text: str
    prompt_tokens: list[int]
    settings: dict[str, Any]
    steps: list[StepRecord] = field(default_factory=list)
    prefill_seconds: float = 0.0
    # The prefill was copied from an earlier run of the prompt on this model (runtime/prefills.py);
    # prefill_seconds is then the measured time of the pass that computed it.
    prefill_reused: bool = False
    eos_token_ids: list[int] = field(default_factory=list)
    token_texts: dict[str, str] = field(default_factory=dict)  # id -> decoded piece
    # id -> hex of the token's raw bytes: a byte-level token may hold part of a character,
    # which its decoded piece shows as "\ufffd". Absent from traces written before it existed.
    token_bytes: dict[str, str] = field(default_factory=dict)
    device: str = "cpu"
    dtype: str = "float32"
    format: str = TRACE_FORMAT

    @property
    def tokens(self) -> list[int]:
        """Every generated token, in order."""
        return [t for s in self.steps for t in s.tokens]

    @property
    def forward_steps(self) -> int:
        """Forward passes after prefill."""
        return sum(1 for s in self.steps if s.forward)

    @property
    def decode_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def seconds(self) -> float:
        return self.prefill_seconds + self.decode_seconds

    @property
    def clock_seconds(self) -> float:
        """The run's compute clock: the prefill and every step's whole cost, measuring included."""
        return self.prefill_seconds + sum(s.clock_seconds for s in self.steps)

    @property
    def calibration_seconds(self) -> float:
        """The one-off measuring (c(n), the thread count) the run did inside its steps."""
        return sum(s.calibration_seconds for s in self.steps)

    @property
    def mean_accepted_tokens(self) -> float:
        n = self.forward_steps
        return len(self.tokens) / n if n else 0.0

    def token_ids(self):
        """Every token id the trace holds: prompt, roots, output, bonuses, tree nodes, candidates."""
        yield from self.prompt_tokens
        for s in self.steps:
            yield s.root
            yield from s.tokens
            if s.bonus is not None:
                yield s.bonus
            yield from (n.token for n in s.tree)
            yield from (c.token for c in s.candidates)

    def text_of(self, token: int) -> str:
        return self.token_texts.get(str(token), f"<{token}>")

    def bytes_of(self, token: int) -> bytes:
        """The token's raw bytes; the UTF-8 of its text where the trace holds no bytes (older files)."""
        h = self.token_bytes.get(str(token))
        return bytes.fromhex(h) if h is not None else self.text_of(token).encode("utf-8")

    def as_objects(self) -> dict[str, Any]:
        """The trace as plain JSON values, one object per entry (format 1's layout)."""
        d = dataclasses.asdict(self)
        for step, record in zip(d["steps"], self.steps):
            for q, query in zip(step["queries"], record.queries):
                del q["ngram"], q["tried"]  # files hold the lookups one by one
                q["attempts"] = [dataclasses.asdict(a) for a in query.attempts]
        return d

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain JSON values, in the current file format (columns per step)."""
        d = self.as_objects()
        d["format"] = TRACE_FORMAT
        for step in d["steps"]:
            for q in step["queries"]:
                q["attempts"] = _columns(q["attempts"])
            for key in ("candidates", "queries", "tree"):
                step[key] = _columns(step[key])
        return d

    def to_json(self, indent: int | None = None) -> str:
        compact = (",", ":") if indent is None else None
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, separators=compact)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunTrace":
        """A trace from `to_dict`'s output, or from a format 1 file's (entries as objects)."""
        d = dict(d)
        steps = [_step_from_dict(s) for s in d.pop("steps", [])]
        known = {f.name for f in dataclasses.fields(cls)} - {"format"}
        return cls(steps=steps, **{k: v for k, v in d.items() if k in known})

    @classmethod
    def from_json(cls, text: str) -> "RunTrace":
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> "RunTrace":
        """A trace file, gzipped or not."""
        return cls.from_json(unzipped(Path(path).read_bytes()).decode("utf-8"))


def _columns(rows: list[dict[str, Any]]) -> dict[str, list] | list:
    """Entries as one list per field; an empty list stays a list."""
    if not rows:
        return []
    return {key: [r[key] for r in rows] for key in rows[0]}


def _rows(data: dict[str, list] | list) -> list[dict[str, Any]]:
    """Entries from `_columns`' form, or a format 1 list of objects as it is."""
    if isinstance(data, list):
        return data
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError("a table of entries must map each field to a list")
    if len({len(v) for v in data.values()}) > 1:
        raise ValueError("the columns of a table of entries differ in length")
    keys = list(data)
    return [dict(zip(keys, values)) for values in zip(*data.values())]


def _step_from_dict(d: dict[str, Any]) -> StepRecord:
    d = dict(d)
    d["candidates"] = [Candidate(**c) for c in _rows(d.get("candidates", []))]
    d["queries"] = [
        QueryRecord.of_attempts(**{**q, "attempts": [NgramAttempt(**a) for a in _rows(q["attempts"])]})
        for q in _rows(d.get("queries", []))
    ]
    d["tree"] = [TreeNode(**n) for n in _rows(d.get("tree", []))]
    d["lookups"] = [SourceLookup(**x) for x in d.get("lookups", [])]
    if d.get("sizing") is not None:
        d["sizing"] = TreeSizing(**d["sizing"])
    return StepRecord(**d)


# ---------------------------------------------------------------- checking a trace from outside

# Vocabulary sizes of models whose traces ship or are common, to check files offline.
KNOWN_VOCAB = {"SmolLM2-135M-Instruct": 49152}


class TraceFileError(InputError):
    """A trace file that cannot be trusted; the message says why, in one line."""


def read_trace_file(path: str | Path, max_bytes: int | None = None, vocab_size: int | None = None) -> RunTrace:
    """A RunTrace from a file someone handed us, or TraceFileError saying what is wrong with it.

    Refuses what `read_json_file` refuses, JSON that is not a trace, and token ids outside the
    vocabulary: `vocab_size` when given, else the known size for the trace's model, else the
    token texts the trace carries.
    """
    return trace_from_data(read_json_file(path, max_bytes), vocab_size)


def read_json_file(path: str | Path, max_bytes: int | None = None) -> object:
    """The parsed JSON in the file at `path`, or TraceFileError saying in one line why not: no
    such file, a folder, over `max_bytes`, empty, not text, not JSON, or JSON cut short."""
    p = Path(path)
    try:
        if p.is_dir():
            raise TraceFileError("this is a folder, not a trace file")
        size = p.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise TraceFileError(f"the trace file is {size_words(size)}; the limit is {size_words(max_bytes)}")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise TraceFileError("no such file") from None
    except OSError as e:
        raise TraceFileError(f"the trace file could not be read ({e.strerror or e})") from None
    raw = unzipped(raw, max_bytes)
    if not raw.strip():
        raise TraceFileError("the trace file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceFileError(f"the trace file is not text (bad byte at position {e.start})") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if _cut_short(text, e):
            raise TraceFileError("the trace file is truncated: the JSON ends early") from e
        raise TraceFileError(f"the trace file is not JSON ({e.msg} at line {e.lineno})") from e


def unzipped(raw: bytes, max_bytes: int | None = None) -> bytes:
    """The bytes of a file, gunzipped when they are gzip's (a trace saved as .json.gz); within
    `max_bytes` once unpacked too, else TraceFileError."""
    if raw[:2] != b"\x1f\x8b":
        return raw
    inflate = zlib.decompressobj(wbits=31)  # gzip's header and trailer
    try:
        out = inflate.decompress(raw, 0 if max_bytes is None else max_bytes + 1)  # 0: no bound
    except zlib.error as e:
        raise TraceFileError(f"the trace file is gzip but cannot be unpacked ({e})") from None
    if max_bytes is not None and (len(out) > max_bytes or inflate.unconsumed_tail):
        raise TraceFileError(f"the trace file unpacks to more than {size_words(max_bytes)}, the limit")
    return out


def _cut_short(text: str, e: json.JSONDecodeError) -> bool:
    """Whether the JSON failed only because the text stops: in a string, or after some JSON with
    at most an unfinished word or number left (a file cut while written or copied)."""
    if e.msg.startswith("Unterminated string"):
        return True
    rest = text[e.pos:].rstrip()
    return e.pos > 0 and e.msg != "Extra data" and (len(rest) <= 1 or rest.isalnum())


def trace_from_data(data: object, vocab_size: int | None = None) -> RunTrace:
    """A RunTrace from parsed JSON, checked for shape and token ids; TraceFileError otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise TraceFileError("this JSON is not a LogitSpec trace or race recording: it has no list of steps")
    if not str(data.get("format", "")).startswith("logitspec-trace/"):
        raise TraceFileError("this JSON is not a LogitSpec trace: the format field is missing or unknown")
    try:
        trace = RunTrace.from_dict(data)
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise TraceFileError(f"this trace has the wrong shape: {_shape_problem(e)}") from e
    if not trace.steps:
        raise TraceFileError("this trace holds no steps")
    _check_ids(trace, vocab_size or KNOWN_VOCAB.get(trace.model))
    return trace


def _shape_problem(e: Exception) -> str:
    """What a failed load says, in the file's terms rather than Python's."""
    msg = str(e)
    if isinstance(e, KeyError):
        return f"a step lacks the field {msg}"
    for marker, say in (("unexpected keyword argument ", "a field the format does not know: "),
                        ("missing ", "a field is missing: ")):
        if marker in msg:
            return say + msg.split(marker, 1)[1].replace("required positional argument", "").strip(": ")
    return msg if "__" not in msg and "()" not in msg else "a field holds the wrong kind of value"


def _check_ids(trace: RunTrace, vocab_size: int | None) -> None:
    for t in trace.token_ids():
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise TraceFileError(f"this trace holds a token id that is not a whole number ≥ 0: {t!r}")
        if vocab_size is not None and t >= vocab_size:
            raise TraceFileError(f"this trace holds token id {t}, outside the vocabulary of {vocab_size:,} tokens "
                                 f"of {trace.model}")
        if vocab_size is None and str(t) not in trace.token_texts:
            raise TraceFileError(f"this trace holds token id {t}, which its own token table does not know")
