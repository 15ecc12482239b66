"""Decoder settings: plain values with the paper's defaults (no torch, cheap to import)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

POOLS = ("recent", "longest")  # DecodeSettings.pool: which occurrence of an n-gram a lookup continues
# generate's logits-processor options (GenerationConfig names) the decoders apply per position
# (logitspec/core/processors.py); temperature, top_k and top_p are fields of their own below.
PROCESSOR_OPTIONS = (
    "repetition_penalty", "no_repeat_ngram_size", "min_length", "min_new_tokens", "bad_words_ids",
    "suppress_tokens", "begin_suppress_tokens", "sequence_bias", "forced_eos_token_id",
    "exponential_decay_length_penalty", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff",
)
# The values generate's prepared config gives options that apply nothing.
INERT = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "min_length": 0, "min_new_tokens": 0,
         "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0}


@dataclass(frozen=True)
class PruningRule:
    """The paper's rank-based rule: how many tokens a candidate's branch may keep."""

    top_ranks: int = 8
    top_keep: int = 4
    mid_ranks: int = 32
    mid_keep: int = 3
    rest_keep: int = 1

    def keep(self, rank: int) -> int:
        if rank <= self.top_ranks:
            return self.top_keep
        if rank <= self.mid_ranks:
            return self.mid_keep
        return self.rest_keep


@dataclass
class DecodeSettings:
    """Decoder parameters: the paper's defaults, and the cost-aware tree as the default tree."""

    max_new_tokens: int = 128
    k: int = 64  # next-next candidates taken from the last logits
    capacity: int = 64  # verified tree tokens, root included
    # The cost-aware tree's capacity on a CPU: past 16 tokens its chances run high and a pass
    # costs more than it earns (docs/performance.md, "Extraction and coding").
    cpu_capacity: int = 16
    ngram_sizes: tuple[int, ...] = (1, 2, 3)
    continuation: int = 20  # g1 continuation length
    pld_tokens: int = 10  # prompt lookup's chain length
    # Which occurrence of an n-gram the pool continues (retrieval.py): "recent", the latest; or
    # "longest", the paper's code: the one with the longest continuation (up to `continuation`).
    pool: str = "recent"
    tree: str = "cost"  # "cost" (sized by measured cost) or "static" (the paper's rule)
    # Token Recycling (logitspec/drafters/recycling.py); its static tree is the paper's fixed template.
    recycle_k: int = 8  # successors kept per token in the matrix (the paper's top-8)
    recycle_depth: int = 6  # the cost-aware recycled tree's deepest node below the root
    recycle_across_runs: bool = True  # the paper's hot start: the matrix (and its rank chances) outlive a run
    # Each the authors' code's by default: the verified nodes whose rows update the matrix ("every":
    # each one, its head row computed where the lazy head skipped it; "computed": those the walk
    # computed), and in the static template a token with no row yet ("zeros": token 0 in every
    # rank, their zero-filled matrix; "none": no children; the cost tree grows from rows seen only).
    recycle_rows: str = "every"
    recycle_unseen_rows: str = "zeros"
    # Lookahead decoding (lookahead.py), the authors' defaults: window W, n-gram size N, guess set G.
    lookahead_window: int = 7
    lookahead_ngram: int = 5
    lookahead_guesses: int = 7
    # REST (rest.py), its code's defaults: the longest suffix tried, continuations read per
    # match, their length, and the most draft tokens in the tree.
    rest_suffix: int = 16
    rest_matches: int = 5000
    rest_span: int = 10
    rest_drafts: int = 64
    # RACER (racer.py), its code's defaults (hkr04/RACER, evaluation/inference_racer.py): n-grams
    # the automaton holds, its most nodes (LRU), the shortest match drafted from, the logits' top-k
    # kept per token, and the most draft tokens (on a CPU the cost tree sizes it, as LogitSpec's).
    racer_ngram: int = 10
    racer_nodes: int = 10000
    racer_min_depth: int = 2
    racer_breadth: int = 8
    racer_drafts: int = 64
    # Each the reference's by default (racer.py, racer_automaton.py cite its lines): the Logits Tree's
    # breadths ("paper": the root's children 8, 4, 2..., the paper's figure 9 and the authors' revision
    # that tests it, 4b25165; "first-release": 4, 2, 1..., their first public code, fc494a3), the
    # automaton's fail links ("reference": built after the prompt, reset to the root as nodes are
    # touched; "exact": kept exact), a token with no row ("zeros": read as token 0's top-k, the
    # reference's zero-filled matrix; "none": no children), and the rows kept ("every": every prompt
    # position's, the head run over the prefill's hidden states, and every verified node's, computed
    # where the lazy head skipped it; "computed": the prefill's last row and the rows the walk
    # computed).
    racer_logits_rule: str = "paper"
    racer_links: str = "reference"
    racer_unseen_rows: str = "zeros"
    racer_rows: str = "every"
    racer_across_runs: bool = True  # one automaton and matrix for every run on the model (inference_racer.py:262, 285)
    # SuffixDecoding (suffix.py), vLLM's `suffix` defaults: the trees' depth, the draft's length per
    # matched token (max_spec_factor), the least path probability drafted (min_token_prob), and the
    # runs' outputs the model's output tree keeps (max_cached_requests; the oldest go first). Not
    # vLLM's: the draft is a tree (the paper's mode, arctic-inference's use_tree_spec; False: vLLM's
    # chain), and a bound on the finished outputs' tokens may be set (None: none, as vLLM's; this
    # trie is not path-compressed, so its memory grows with depth x tokens).
    suffix_depth: int = 24
    suffix_spec_factor: float = 1.0
    suffix_min_prob: float = 0.1
    suffix_cache_requests: int = 10_000
    suffix_tree: bool = True
    suffix_cache_tokens: int | None = None
    rule: PruningRule = field(default_factory=PruningRule)
    # Sampling (logitspec/core/sampling.py): temperature 0 is greedy and draws no noise at all.
    temperature: float = 0.0
    top_p: float = 1.0  # 1.0 keeps the whole vocabulary
    top_k: int = 0  # 0 keeps the whole vocabulary
    seed: int = 0  # the same seed gives the same tokens in every decoder
    # PROCESSOR_OPTIONS by name, e.g. {"repetition_penalty": 1.1}: applied to each position with
    # its own prefix, as generate applies them; empty applies none.
    processors: dict = field(default_factory=dict)
    # A run copies the prompt's prefill from an earlier run of the same prompt on the same model
    # (runtime/prefills.py), as the lanes of one race do; timed runs (the bench) turn it off.
    share_prefill: bool = True

    def to_dict(self) -> dict:
        return asdict(self)
