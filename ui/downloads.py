"""What the Traces tab serves and clears: the download is always the run on screen, and a note
left by a refused upload goes as soon as another file is chosen."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import gradio as gr

# A file chosen in the upload box clears the last refusal at once, before any reply: a file of
# the wrong type never reaches the server, so no reply would clear it.
UPLOAD_NOTE_JS = """
() => {
  if (window.__logitspecUploadNote) return;
  window.__logitspecUploadNote = true;
  const clear = (e) => {
    const input = e.target;
    if (!input || input.type !== 'file' || !input.closest('#upload')) return;
    const note = document.getElementById('upload-note');
    if (note) note.querySelectorAll('p, .prose, span').forEach(el => { el.textContent = ''; });
  };
  document.addEventListener('change', clear, true);
  document.addEventListener('drop', (e) => { if (e.target.closest && e.target.closest('#upload'))
    clear({target: {type: 'file', closest: () => true}}); }, true);
}
"""


def served_copy(path: str | Path) -> str:
    """A copy of an opened trace or race file in a temp folder of its own, under its own name,
    for the download button (the original may be a shipped file or an upload Gradio deletes)."""
    src = Path(path)
    dest = Path(tempfile.mkdtemp(prefix="logitspec-")) / src.name
    shutil.copyfile(src, dest)
    return str(dest)


def download_of(path: str | Path) -> gr.DownloadButton:
    """The download button serving the file on screen."""
    return gr.DownloadButton(value=served_copy(path), visible=True)
