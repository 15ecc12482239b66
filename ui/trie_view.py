"""The Step explorer's draft tree: the lanes or the trie, and the trie's node-link JSON to download."""
from __future__ import annotations

import hashlib
from pathlib import Path

import gradio as gr

import visual
from logitspec.core.trace import RunTrace
from logitspec.runtime.files import written_whole
from visual.tree_key import tree_key_html
from visual.trie import node_link_json, trie_figure, trie_key_html

VIEWS = ("lanes", "trie")


def figure(trace: RunTrace, step: int, view: str, compact: bool = True):
    """The step's tree drawn as lanes (the default; compact: only branches with a verified
    token, fitted to the app's width) or as a tidy trie."""
    return trie_figure(trace, step, fit=True) if view == "trie" else visual.tree_figure(trace, step, fit=True, compact=compact)


def key_html(trace: RunTrace, view: str) -> str:
    """The key beside the tree: the trie's marks while the trie is shown, else the lanes'."""
    return trie_key_html(trace) if view == "trie" else tree_key_html(trace)


def write_json(trace: RunTrace, step: int, folder: Path) -> Path:
    """The step's node-link JSON in `folder`, in a file named by the run, the step and the content,
    so sessions never write different content to one name."""
    text = node_link_json(trace, step)
    i = step % len(trace.steps)
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]
    path = folder / f"logitspec-trie-{trace.method}-step{i}-{digest}.json"
    if not path.exists():
        with written_whole(path) as tmp:  # whole or absent, even with two sessions at once
            tmp.write_text(text, encoding="utf-8")
    return path


def download(trace: RunTrace, step: int, view: str, folder: Path) -> gr.DownloadButton:
    """The download button: the step's trie (written in `folder`) while the trie is shown, hidden with the lanes."""
    if view != "trie":
        return gr.DownloadButton(visible=False)
    return gr.DownloadButton(value=str(write_json(trace, step, folder)), visible=True)
