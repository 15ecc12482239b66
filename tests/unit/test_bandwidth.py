"""The memory floor of a one-token pass (logitspec.runtime.bandwidth) and the bench's cost of a
pass per dtype (logitspec.bench.passcost): what they count, and the report and figure they give."""
from __future__ import annotations

import pytest
import torch

from helpers.paths import SPEC_BENCH
from helpers.tiny_models import tiny_from_config
from logitspec.runtime.bandwidth import (BUFFER_BYTES, cpu_buffer_bytes, last_level_cache_bytes, memory_floor,
                                         read_rate, weight_bytes)


def _tiny(tied: bool):
    return tiny_from_config("LlamaConfig", "LlamaForCausalLM", tie_word_embeddings=tied,
                            max_position_embeddings=1024)


def test_weight_bytes_counts_a_tied_table_once_and_an_untied_input_table_not_at_all():
    untied, tied = _tiny(False), _tiny(True)
    table = untied.get_input_embeddings().weight
    every = sum(p.numel() * p.element_size() for p in untied.parameters())
    # the input table gives one row a token; the head reads all of its own
    assert weight_bytes(untied) == every - table.numel() * table.element_size()
    assert tied.get_output_embeddings().weight.data_ptr() == tied.get_input_embeddings().weight.data_ptr()
    assert weight_bytes(tied) == sum(p.numel() * p.element_size() for p in tied.parameters())
    assert weight_bytes(tied.to(torch.bfloat16)) * 2 == weight_bytes(_tiny(True))


@pytest.mark.slow  # reads buffers past the last-level cache (960 MiB where 480 are listed)
def test_the_floor_is_the_weights_over_the_read_rate_on_the_threads_asked_and_leaves_torch_as_it_was():
    was = torch.get_num_threads()
    model = _tiny(True)
    f = memory_floor(model, threads=1)
    assert torch.get_num_threads() == was and f.threads == 1
    assert f.seconds == pytest.approx(weight_bytes(model) / f.read_bytes_per_second)
    d = f.to_dict()
    assert d["floor_ms"] == pytest.approx(f.seconds * 1e3, rel=1e-3) and d["weight_bytes"] == weight_bytes(model)
    # a buffer twice as large takes about twice as long to read: the rate is one of memory, not of a
    # cache (each is past the last-level cache; a 64 MiB buffer read 2.7x as fast as 256 MiB on a
    # Xeon listing 480 MiB of L3). Interleaved, best of each: both sizes see the same other work.
    small = large = 0.0
    for _ in range(2):
        small = max(small, read_rate(rounds=3))
        large = max(large, read_rate(nbytes=2 * cpu_buffer_bytes(), rounds=3))
    assert 0.4 < small / large < 2.5


def test_the_buffer_is_past_the_largest_cache_listed(tmp_path):
    for index, size in (("index0", "48K"), ("index2", "2048K"), ("index3", "491520K")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(size + "\n")
    assert last_level_cache_bytes(tmp_path) == 480 << 20
    assert last_level_cache_bytes(tmp_path / "none") == 0
    assert cpu_buffer_bytes() >= max(BUFFER_BYTES, 2 * last_level_cache_bytes())


def test_pass_cost_times_c_of_n_up_to_64_and_reports_it_against_the_floor():
    from types import SimpleNamespace

    from logitspec.bench.passcost import CONTEXT, describe, pass_cost
    from visual.bench import pass_cost_figure

    lm = SimpleNamespace(model=_tiny(True), dtype="float32")
    e = pass_cost(lm).to_dict()
    c = e["curve"]
    assert c["sizes"][0] == 1 and c["sizes"][-1] == 64 and c["context_len"] == e["context_len"] == CONTEXT
    assert e["c1_ms"] == pytest.approx(c["seconds"][0] * 1e3, rel=1e-3)
    assert e["c1_over_floor"] == pytest.approx(e["c1_ms"] / e["memory_floor"]["floor_ms"], rel=1e-2)
    assert 1.0 <= e["c16_over_c1"] <= e["c64_over_c1"]  # c(n) never falls with n (isotonic)
    assert e["memory_floor"]["threads"] == c["threads"]
    line = describe(e)
    assert line.startswith("float32: c(1) ") and "memory floor" in line and "c(64)/c(1)" in line
    bf16 = dict(e, dtype="bfloat16")
    fig = pass_cost_figure({"pass_cost": [e, bf16], "settings": {"hardware": "a CPU", "device": "cpu"}})
    names = [t.name for t in fig.data]
    assert len(names) == 4 and sum("memory floor" in n for n in names) == 2
    assert pass_cost_figure({"settings": {}}) is None


def test_bench_refuses_an_unknown_pass_cost_dtype_in_one_line(capsys):
    from logitspec.bench.command import main

    assert main(["--questions", str(SPEC_BENCH), "--pass-cost-dtypes", "float32,int8"]) == 2
    err = capsys.readouterr().err
    assert "int8" in err and len(err.strip().splitlines()) == 1
