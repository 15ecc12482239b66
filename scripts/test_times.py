"""Where `make test`'s time goes: seconds per test folder and the slowest files, read from
the JUnit XML pytest writes (`make test` writes artifacts/tests/junit.xml).

    python scripts/test_times.py artifacts/tests/junit.xml
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def per_file(junit: Path) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown, as pytest times a test)."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        path = "/".join(module[:3]) + ".py" if module[:1] == ["tests"] else ".".join(module)
        seconds[path] += float(case.get("time", 0) or 0)
    return dict(seconds)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--files", type=int, default=15, help="how many of the slowest files to list")
    a = ap.parse_args(argv)
    try:
        files = per_file(a.junit)
    except (OSError, ET.ParseError) as e:
        print(f"error: cannot read {a.junit}: {e}", file=sys.stderr)
        return 2
    folders: dict[str, float] = defaultdict(float)
    for path, secs in files.items():
        folders[path.rsplit("/", 1)[0]] += secs
    print("| folder | seconds |\n| --- | --- |")
    for folder, secs in sorted(folders.items(), key=lambda kv: -kv[1]):
        print(f"| {folder} | {secs:.0f} |")
    print(f"| all | {sum(folders.values()):.0f} |\n\n| file | seconds |\n| --- | --- |")
    for path, secs in sorted(files.items(), key=lambda kv: -kv[1])[:a.files]:
        print(f"| {path} | {secs:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
