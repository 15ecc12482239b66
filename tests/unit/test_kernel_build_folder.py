"""The few-row kernel's build folder: one per torch install, and a lock left by a killed build
does not hang the next start."""
from __future__ import annotations

import os
import time

import torch

from logitspec.runtime import fewrows


def test_each_torch_install_builds_in_its_own_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("LOGITSPEC_KERNEL_DIR", str(tmp_path))
    here = fewrows.build_directory("avx2")
    assert here == fewrows.build_directory("avx2") and here.parent == tmp_path  # stable for one install
    monkeypatch.setattr(torch, "__file__", str(tmp_path / "other-venv" / "torch" / "__init__.py"))
    assert fewrows.build_directory("avx2") != here


def test_a_lock_left_by_a_killed_build_is_removed_and_a_live_one_is_kept(tmp_path):
    lock = tmp_path / "lock"
    assert not fewrows.clear_stale_lock(tmp_path)  # no lock: nothing to do
    lock.touch()
    assert not fewrows.clear_stale_lock(tmp_path) and lock.exists()  # a build under way keeps its lock
    old = time.time() - fewrows.STALE_LOCK_SECONDS - 5
    os.utime(lock, (old, old))
    assert fewrows.clear_stale_lock(tmp_path) and not lock.exists()
