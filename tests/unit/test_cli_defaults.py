"""The CLI's decoder defaults are DecodeSettings' own, so `generate` runs what the README says."""
from __future__ import annotations

from dataclasses import fields

from logitspec.cli import build_parser
from logitspec.core.settings import DecodeSettings

# DecodeSettings field -> the `generate` option that sets it.
OPTION_OF = {"max_new_tokens": "max_new_tokens", "k": "k", "capacity": "capacity", "cpu_capacity": "cpu_capacity",
             "ngram_sizes": "ngram", "continuation": "continuation", "pool": "pool", "tree": "tree", "temperature": "temperature",
             "top_p": "top_p", "top_k": "top_k", "seed": "seed"}


def test_cli_defaults_equal_decode_settings():
    args = build_parser().parse_args(["generate", "hello"])
    d = DecodeSettings()
    for name, option in OPTION_OF.items():
        assert getattr(args, option) == getattr(d, name), name
    assert args.tree == "cost"  # the cost-aware tree, as the README promises


def test_every_settings_field_is_either_an_option_or_internal():
    # Not offered on the command line: the baselines' own parameters keep their authors' defaults,
    # and one run a process has no earlier run's prefill to share.
    internal = {"pld_tokens", "rule", "recycle_k", "recycle_depth", "recycle_across_runs", "recycle_rows",
                "recycle_unseen_rows", "processors",
                "lookahead_window", "lookahead_ngram", "lookahead_guesses",
                "rest_suffix", "rest_matches", "rest_span", "rest_drafts", "share_prefill",
                "racer_ngram", "racer_nodes", "racer_min_depth", "racer_breadth", "racer_drafts",
                "racer_logits_rule", "racer_links", "racer_unseen_rows", "racer_rows", "racer_across_runs",
                "suffix_depth", "suffix_spec_factor", "suffix_min_prob", "suffix_cache_requests", "suffix_cache_tokens",
                "suffix_tree"}
    assert {f.name for f in fields(DecodeSettings)} == set(OPTION_OF) | internal
