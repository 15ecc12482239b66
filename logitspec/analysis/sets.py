"""A set file ("logitspec-set/1"): many prompts, each decoded by one or more methods, in one file.

JSON lines, written as the runs finish so a stopped run keeps every prompt it finished:
    line 1   the header: format, model, machine, the runs' labels ("methods"), each one's settings,
             where the prompts came from
    then     per run (a prompt under a method) two lines: the run's record (prompt, method, label and
             its failure summary, analysis/failures.py) and the run's trace (core/trace.py's JSON).
A run's label is its method, or, where one method ran under two settings, the method and the setting
that differs ("logitspec pool=longest"); a record without one (an older file) is named by its method.
The reader parses the headers and records only and remembers where each trace lies, so a set of
hundreds of runs opens at the cost of its summaries; a trace is parsed when it is opened.
A file may be gzipped (.gz). No torch, no model.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.limits import InputError
from ..core.trace import RunTrace, TraceFileError, trace_from_data
from .failures import RunSummary, summarise_run

SET_FORMAT = "logitspec-set/1"
RECORD_KEYS = {"prompt", "question_id", "category", "prompt_text", "method", "summary", "trace_bytes"}


class SetFileError(InputError):
    """A set file that cannot be read; the message says why, in one line."""


@dataclass
class SetEntry:
    """One run of a set: which prompt, which method, its failure summary and where its trace lies."""

    prompt: int  # the prompt's place in the set, from 0
    question_id: Any
    category: str
    prompt_text: str
    method: str
    summary: RunSummary
    label: str = ""  # the run's name in every table: its method, and the setting that differs where one ran twice
    offset: int = 0  # byte offset of the trace line in the (uncompressed) file
    length: int = 0


def run_name(run: str, method: str, settings: dict[str, Any]) -> str:
    """A run's name on screen: its lane's, as every other view names it, and the setting that differs
    where its method ran twice ("LogitSpec (cost tree) pool=longest" for the label "logitspec pool=longest")."""
    from types import SimpleNamespace

    from .lanes import label

    rest = run[len(method):] if run.startswith(method + " ") else ""
    return label(method, SimpleNamespace(method=method, settings=settings)) + rest


@dataclass
class SetFile:
    """A set file's header and runs, in the order written."""

    path: Path
    header: dict
    entries: list[SetEntry] = field(default_factory=list)
    cut_short: bool = False  # the last run was cut off while written: it is left out

    @property
    def runs(self) -> list[str]:
        """The runs' labels, in the order written."""
        return list(dict.fromkeys(e.label for e in self.entries))

    def names(self) -> dict[str, str]:
        """Each run's label -> its name on screen (`run_name`)."""
        settings, out = self.header.get("settings") or {}, {}
        for e in self.entries:
            if e.label not in out:
                out[e.label] = run_name(e.label, e.method, settings.get(e.label) or {})
        return out

    @property
    def prompts(self) -> int:
        return len({e.prompt for e in self.entries})

    def trace(self, entry: SetEntry, vocab_size: int | None = None) -> RunTrace:
        """The entry's trace, read from its place in the file (TraceFileError if it is not a trace)."""
        with _open(self.path) as f:
            f.seek(entry.offset)
            raw = f.read(entry.length)
        try:
            return trace_from_data(json.loads(raw), vocab_size)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise TraceFileError(f"run {entry.prompt} ({entry.label}) of this set holds no readable trace") from None

    def lanes(self, prompt: int) -> dict[str, RunTrace]:
        """Every run's trace of one prompt, by label."""
        return {e.label: self.trace(e) for e in self.entries if e.prompt == prompt}


class SetWriter:
    """Writes a set file run by run; each run is flushed whole before the next starts. `set` is
    what read_set would read back from the file so far, kept as it is written (a long set's
    tables follow each prompt without reading the file again)."""

    def __init__(self, path: str | Path, header: dict) -> None:
        self.path = Path(path)
        self._f: IO[bytes] = gzip.open(self.path, "wb") if self.path.suffix == ".gz" else open(self.path, "wb")
        self._pos = 0  # bytes written, before compression: where the next line starts
        head = {"format": SET_FORMAT, **header}
        self._line(head)
        self.set = SetFile(self.path, json.loads(json.dumps(head)))  # the header as read back

    @property
    def runs(self) -> int:
        return len(self.set.entries)

    def _line(self, raw: bytes | dict) -> int:
        if isinstance(raw, dict):
            raw = json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._f.write(raw + b"\n")
        self._pos += len(raw) + 1
        return len(raw)

    def add(self, prompt: int, question: dict, trace: RunTrace, label: str | None = None) -> RunSummary:
        """One finished run: its record (with the summary counted from its trace), then the trace;
        `label` names the run (its method when None)."""
        raw = json.dumps(trace.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        summary = summarise_run(trace)
        record = {"prompt": prompt, "question_id": question.get("question_id"),
                  "category": question.get("category", ""), "prompt_text": trace.prompt_text,
                  "method": trace.method, "label": label or trace.method, "summary": summary.to_dict(),
                  "trace_bytes": len(raw)}
        entry = _record(json.dumps(record).encode("utf-8"), self.runs + 1)  # as read_set makes it
        self._line(record)
        entry.offset = self._pos
        self._line(raw)
        self._f.flush()
        self.set.entries.append(entry)
        return summary

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "SetWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open(path: Path) -> IO[bytes]:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def read_set(path: str | Path, max_bytes: int | None = None) -> SetFile:
    """The set file's header and runs (traces left in place), or SetFileError saying in one line why not."""
    p = Path(path)
    if p.is_dir():
        raise SetFileError("this is a folder, not a set file")
    if not p.is_file():
        raise SetFileError("no such file")
    if max_bytes is not None and p.stat().st_size > max_bytes:
        raise SetFileError(f"the set file is {p.stat().st_size / 2**20:.1f} MB, over this app's {max_bytes / 2**20:.0f} MB; "
                           f"open it in the app on your own machine: LOGITSPEC_SET_BYTES={p.stat().st_size + 1} python app.py")
    try:
        with _open(p) as f:
            return _read_lines(p, f)
    except (OSError, EOFError) as e:
        raise SetFileError(f"the set file could not be read ({getattr(e, 'strerror', None) or e})") from None


def _read_lines(p: Path, f: IO[bytes]) -> SetFile:
    head = _header(f.readline())
    out = SetFile(p, head)
    try:
        _read_runs(f, out)
    except EOFError:  # a gzipped file whose writer was stopped: its last member has no end
        out.cut_short = True
    if not out.entries:
        raise SetFileError("this set file holds no finished run")
    return out


def _read_runs(f: IO[bytes], out: SetFile) -> None:
    while record := f.readline():
        if not record.strip():
            continue
        offset, line = f.tell(), f.readline()
        entry = _record(record, len(out.entries) + 1)
        if entry is None or len(line.rstrip(b"\n")) != entry.length or not line.endswith(b"\n"):
            if f.read(1):  # a record cut short with more after it: not a file this version wrote
                raise SetFileError(f"run {len(out.entries) + 1} of this set file is damaged (its trace is not whole)")
            out.cut_short = True
            return
        entry.offset = offset
        out.entries.append(entry)


def _header(raw: bytes) -> dict:
    try:
        head = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        head = None
    form = str(head.get("format", "")) if isinstance(head, dict) else ""
    if form.startswith(("logitspec-trace/", "logitspec-race/")):
        kind = "a trace" if form.startswith("logitspec-trace/") else "a race"
        raise SetFileError(f"this is {kind} file, not a set file: open it in the Traces tab")
    if not form.startswith("logitspec-set/"):
        raise SetFileError("this is not a LogitSpec set file: its first line names no logitspec-set format")
    if form != SET_FORMAT:
        raise SetFileError(f"this set file's format {form} is unknown; this version reads {SET_FORMAT}")
    return head


def _record(raw: bytes, n: int) -> SetEntry | None:
    """A run's record, None when it was cut short; SetFileError when it is whole but not a record."""
    try:
        d = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(d, dict) or not RECORD_KEYS <= d.keys():
        raise SetFileError(f"run {n} of this set file lacks a field of {', '.join(sorted(RECORD_KEYS))}")
    try:
        summary = RunSummary.from_dict(d["summary"])
    except TypeError:
        raise SetFileError(f"run {n} of this set file has a summary of the wrong shape") from None
    return SetEntry(int(d["prompt"]), d["question_id"], str(d["category"]), str(d["prompt_text"]), str(d["method"]),
                    summary, str(d.get("label") or d["method"]), length=int(d["trace_bytes"]))
