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


SECOND_INSTALL = """
import sys
import torch
from torch.utils import cpp_extension

torch.__file__ = sys.argv[1]  # the same torch version, installed elsewhere (a new venv)

def refuse(*args, **kwargs):
    raise AssertionError("compiled again")

cpp_extension.load = refuse
from logitspec.runtime import fewrows

op = fewrows.few_row_kernel(sys.argv[2])
assert op is not None, fewrows._errors
x, w = torch.randn(3, 4 * fewrows.FEATURE_MULTIPLE), torch.randn(5, 4 * fewrows.FEATURE_MULTIPLE)
torch.testing.assert_close(op(x, w, None), x @ w.T)
print(" ".join(sorted(p.name for p in fewrows.build_directory(sys.argv[2]).glob("*.so"))))
"""


def test_a_new_install_of_the_same_torch_loads_the_shared_build_without_compiling(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    isa = fewrows.isa_choice()[0]
    if isa is None or fewrows.few_row_kernel(isa) is None:
        pytest.skip(f"no few-row kernel here: {fewrows.kernel_variant()[1]}")
    shared = fewrows.shared_library(isa)
    assert shared.is_file()  # published by the build this process loaded
    root = tmp_path / "cache"
    (root / "shared").mkdir(parents=True)
    shutil.copyfile(shared, root / "shared" / shared.name)  # a cache holding that library alone
    elsewhere = str(tmp_path / "venv" / "torch" / "__init__.py")
    env = {**os.environ, "LOGITSPEC_KERNEL_DIR": str(root)}
    done = subprocess.run([sys.executable, "-c", SECOND_INSTALL, elsewhere, isa], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [f"logitspec_few_linear_{isa}.so"]  # in the new install's own folder
