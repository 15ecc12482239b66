"""The few-row kernel's build folder: one per torch install, and a lock left by a killed build
does not hang the next start."""
from __future__ import annotations

import pytest
import torch

from logitspec.runtime import fewrows


def test_each_torch_install_builds_in_its_own_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("LOGITSPEC_KERNEL_DIR", str(tmp_path))
    here = fewrows.build_directory("avx2")
    assert here == fewrows.build_directory("avx2") and here.parent == tmp_path  # stable for one install
    monkeypatch.setattr(torch, "__file__", str(tmp_path / "other-venv" / "torch" / "__init__.py"))
    assert fewrows.build_directory("avx2") != here


def test_a_lock_left_by_a_killed_build_is_removed_and_a_live_build_is_waited_for(tmp_path):
    import fcntl

    (tmp_path / "lock").touch()  # torch's marker, left by a build killed mid-way
    with fewrows.build_lock(tmp_path):
        assert not (tmp_path / "lock").exists()  # removed at once, not after a timeout
        with open(tmp_path / "build.flock", "w") as other:  # a second builder must wait its turn
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(tmp_path / "build.flock", "w") as other:  # released when the build ends
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
