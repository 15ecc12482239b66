"""Marks every test of a folder carries, whatever its module says (tests/conftest.py applies them):
`make test-fast` leaves them out, and imports only the other folders (FAST_FOLDERS in the Makefile)."""
from __future__ import annotations

FOLDER_MARKS = {"browser": ("browser", "slow"), "notebooks": ("slow",), "package": ("slow",), "engines": ("slow",)}
