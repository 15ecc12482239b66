"""What the Traces tab serves and clears: the download is always the run on screen, and a note
left by a refused upload goes as soon as another file is chosen."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import gradio as gr

from logitspec.core.limits import Limits, size_words

from .files import RACE_FILE_PREFIX

# A file chosen in the upload box hides the last refusal at once, before any reply (a file of the
# wrong type never reaches the server, so no reply would clear it); the note shows again as soon
# as a reply writes into it. Only a class changes: the note's own nodes stay Gradio's. A trace or
# race file over its limit is refused here, before it is sent: the page's own limit is the larger
# one a set file may have (app.py), so the browser alone would send it.
_UPLOAD_NOTE_JS = """
() => {
  if (window.__logitspecUploadNote) return;
  window.__logitspecUploadNote = true;
  const LIMIT = __TRACE_BYTES__;
  const style = document.createElement('style');
  style.textContent = '#upload-note.stale { display: none; }';
  document.head.appendChild(style);
  const note = () => document.getElementById('upload-note');
  let watched = null;
  const watch = () => {
    const el = note();
    if (!el || el === watched) return;
    watched = el;
    new MutationObserver(() => el.classList.remove('stale'))
      .observe(el, {childList: true, subtree: true, characterData: true});
  };
  const mb = (n) => n < 1000 * 2 ** 10 ? Math.max(1, Math.round(n / 2 ** 10)) + ' kB'
    : (n / 2 ** 20).toFixed(1) + ' MB';  // as logitspec.core.limits.size_words says it
  document.addEventListener('change', (e) => {
    const input = e.target;
    if (!input || input.type !== 'file' || !input.closest || !input.closest('#upload')) return;
    watch();
    note()?.classList.add('stale');
    document.querySelectorAll('.upload-refused').forEach((p) => p.remove());
    const file = input.files && input.files[0];
    if (!file || file.size <= LIMIT) return;
    e.stopImmediatePropagation();  // before Gradio's own listener: nothing is sent
    input.value = '';
    const said = document.createElement('p');
    said.className = 'upload-refused';
    said.textContent = `Not opened: ${file.name}: the trace file is ${mb(file.size)}; the limit is ${mb(LIMIT)}`;
    note()?.after(said);
  }, true);
}
"""


def upload_note_js() -> str:
    """The upload box's page script, with the trace limit the server runs with."""
    return _UPLOAD_NOTE_JS.replace("__TRACE_BYTES__", str(Limits.from_env().trace_bytes))


def served_copy(path: str | Path) -> str:
    """A copy of an opened trace or race file in a temp folder of its own, under its own name,
    for the download button (the original may be a shipped file or an upload Gradio deletes)."""
    src = Path(path)
    dest = Path(tempfile.mkdtemp(prefix="logitspec-")) / src.name
    shutil.copyfile(src, dest)
    return str(dest)


def download_label(path: str | Path) -> str:
    """The download button's words: what it serves, its size, and whether the upload box takes it
    back (a race of many long lanes may be larger than Limits.trace_bytes)."""
    size, limit = Path(path).stat().st_size, Limits.from_env().trace_bytes
    what = "this race" if Path(path).name.startswith(RACE_FILE_PREFIX) else "the file on screen"
    over = f": over the {size_words(limit)} an upload takes" if size > limit else ""
    return f"Download {what} (JSON, {size_words(size)}{over})"


def download_button(path: str | Path) -> gr.DownloadButton:
    """The download button serving `path`, saying what it is."""
    return gr.DownloadButton(download_label(path), value=str(path), visible=True)


def download_of(path: str | Path) -> gr.DownloadButton:
    """The download button serving the file on screen."""
    return download_button(served_copy(path))
