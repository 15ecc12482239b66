"""The torch threads a test process, and the app server and commands it starts, decode on: under
two pytest-xdist workers (`make test`'s folders without a page) each worker gets one of the
machine's two cores; a test process alone gets both."""
from __future__ import annotations

import os

WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
# Two workers each spinning two threads on two cores wait on each other.
TEST_THREADS = 2 if WORKERS < 2 else 1
