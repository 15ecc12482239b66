"""The torch threads a test process, and the app server it starts, decode on: `make test` runs
each part on two pytest-xdist workers, and each worker gets one of the machine's two cores."""
from __future__ import annotations

import os

WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
# Two workers each spinning two threads on two cores wait on each other.
TEST_THREADS = 2 if WORKERS < 2 else 1
