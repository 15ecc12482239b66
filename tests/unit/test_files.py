"""Files written whole or not at all (logitspec.runtime.files)."""
from __future__ import annotations

import pytest

from logitspec.runtime.files import written_whole


def test_the_file_appears_whole_only_when_the_block_ends(tmp_path):
    path = tmp_path / "deep" / "curve.json"
    with written_whole(path) as tmp:
        tmp.write_text("half")
        assert not path.exists()  # a reader meanwhile finds nothing, not half a file
        tmp.write_text("whole")
    assert path.read_text() == "whole"
    assert [p.name for p in path.parent.iterdir()] == ["curve.json"]  # no temporary left


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "store.npz"
    path.write_text("old")
    with pytest.raises(OSError), written_whole(path) as tmp:
        tmp.write_text("new, then a full disk")
        raise OSError("no space left on device")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["store.npz"]
