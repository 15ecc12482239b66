"""Which tests catch which fault: a pytest selection run once per mutation (tests/helpers/mutations.py),
each run's failures listed, so a slow test is kept only for what no cheaper one catches.

    python scripts/mutation_catch.py --mutations mask,positions,cache,accept,label -- tests/lossless -n 2

Prints, per mutation, how many tests failed and their ids (docs/testing.md, "What each slow test
alone catches"). A mutation no test catches prints "CAUGHT BY NOTHING" and the exit status is 1.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def failures(junit: Path) -> list[str]:
    """The ids of the tests that failed or erred, as file::name."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            module = case.get("classname", "").replace(".", "/")
            out.append(f"{module}.py::{case.get('name')}")
    return out


def run(mutation: str, args: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "run.xml"
        env = dict(os.environ, LOGITSPEC_TEST_MUTATION=mutation, OMP_WAIT_POLICY="PASSIVE")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "helpers.mutations", "-p", "no:cacheprovider",
                        f"--junitxml={junit}", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        return failures(junit)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutations", default="mask,positions,cache,accept,label")
    ap.add_argument("pytest_args", nargs="+", help="the selection, after --")
    a = ap.parse_args(argv)
    missed = 0
    for mutation in a.mutations.split(","):
        failed = run(mutation, a.pytest_args)
        missed += not failed
        print(f"## {mutation}: {len(failed)} failed" + ("" if failed else " (CAUGHT BY NOTHING)"))
        for test in failed:
            print(f"- {test}")
        sys.stdout.flush()
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
