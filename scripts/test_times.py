"""Where `make test`'s time goes: each run's wall time, seconds per test folder and the slowest
files, read from the JUnit XML pytest writes (`make test` writes artifacts/tests/tests.xml).

    python scripts/test_times.py artifacts/tests/tests.xml [more.xml ...] [--machine]

`--machine` (as `make test` runs it) first prints the CPU this run had, its cores and its vector
instruction sets, and the caps in force (ATEN_CPU_CAPABILITY and the like), beside the minutes.

On two workers a folder's seconds are summed over both, so they exceed the run's wall time.
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def per_file(root: ET.Element) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown, as pytest times a test)."""
    seconds: dict[str, float] = defaultdict(float)
    for case in root.iter("testcase"):
        module = case.get("classname", "").split(".")
        path = "/".join(module[:3]) + ".py" if module[:1] == ["tests"] else ".".join(module)
        seconds[path] += float(case.get("time", 0) or 0)
    return dict(seconds)


def wall_seconds(root: ET.Element) -> float:
    """The run's own clock: pytest writes it on each testsuite."""
    return sum(float(s.get("time", 0) or 0) for s in root.iter("testsuite"))


def machine() -> str:
    """This machine as docs/testing.md names it: the CPU, its cores and instruction sets, the caps."""
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from logitspec.bench.machine import ISA_CAP_VARIABLES, instruction_sets
    from logitspec.runtime.fewrows import cpu_model

    caps = [f"{v}={os.environ[v]}" for v in ISA_CAP_VARIABLES if os.environ.get(v)]
    return (f"{cpu_model()}, {os.cpu_count()} cores, {' '.join(instruction_sets()) or 'no vector sets listed'}"
            + (f" (capped: {' '.join(caps)})" if caps else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", type=Path, nargs="+")
    ap.add_argument("--files", type=int, default=15, help="how many of the slowest files to list")
    ap.add_argument("--machine", action="store_true", help="name this machine's CPU beside the minutes")
    a = ap.parse_args(argv)
    files: dict[str, float] = {}
    where = f" on {machine()}" if a.machine else ""
    print("| run | wall minutes |\n| --- | --- |")
    for path in a.junit:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"error: cannot read {path}: {e}", file=sys.stderr)
            return 2
        print(f"| {path.name} | {wall_seconds(root) / 60:.1f} |")
        if where:
            print(f"\npytest: {wall_seconds(root) / 60:.1f} minutes{where}\n")
        files.update(per_file(root))
    folders: dict[str, float] = defaultdict(float)
    for path, secs in files.items():
        folders[path.rsplit("/", 1)[0]] += secs
    print("\n| folder | test seconds |\n| --- | --- |")
    for folder, secs in sorted(folders.items(), key=lambda kv: -kv[1]):
        print(f"| {folder} | {secs:.0f} |")
    if a.files:
        print("\n| file | test seconds |\n| --- | --- |")
        for path, secs in sorted(files.items(), key=lambda kv: -kv[1])[:a.files]:
            print(f"| {path} | {secs:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
