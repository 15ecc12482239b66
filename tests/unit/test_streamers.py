"""Streamers through `generate(custom_generate=...)`: a TextStreamer or TextIteratorStreamer
passed as `streamer=` receives exactly the text generate returns, then its end, in the
callable form and the folder form; a refused call ends it too, so no consumer waits for ever."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch
from transformers import TextIteratorStreamer, TextStreamer

from helpers.families import WORKS
from helpers.tiny_models import tiny_prompts
from logitspec.custom_generate import generate as logitspec_generate
from logitspec.core.limits import InputError

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]
FORMS = {"callable": dict(custom_generate=logitspec_generate),
         "folder": dict(custom_generate=str(ROOT), trust_remote_code=True)}
WAIT_S = 60  # a consumer waits at most this long for the next piece: a hang fails the test


class Words:
    """Token ids as words, for the streamers (the tiny models have no tokenizer)."""

    def decode(self, ids, **kw) -> str:
        return " ".join(f"w{int(i)}" for i in (ids if isinstance(ids, list) else ids.tolist()))


def run_with_consumer(model, ids, streamer, **kw) -> tuple[torch.Tensor | Exception, str]:
    """generate in a thread, the streamer read here as a consumer would: (its result, the text)."""
    result: list = []

    def call() -> None:
        try:
            result.append(model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                         max_new_tokens=24, streamer=streamer, **kw))
        except Exception as e:  # handed to the test, which checks it
            result.append(e)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    text = "".join(streamer)  # raises queue.Empty after WAIT_S seconds without a piece or the end
    worker.join(WAIT_S)
    assert not worker.is_alive()
    return result[0], text


@pytest.mark.parametrize("form", FORMS)
def test_an_iterator_streamer_gets_the_returned_text_and_its_end(form):
    model = WORKS[0].build()
    ids = torch.tensor([tiny_prompts(1)[0]])
    streamer = TextIteratorStreamer(Words(), skip_prompt=True, timeout=WAIT_S)
    out, text = run_with_consumer(model, ids, streamer, method="pld", repetition_penalty=1.2, **FORMS[form])
    assert text.split() == Words().decode(out[0, ids.shape[1]:]).split()


@pytest.mark.parametrize("form", FORMS)
def test_a_refused_call_still_ends_the_streamer(form):
    model = WORKS[0].build()
    ids = torch.tensor([tiny_prompts(1)[0]])
    streamer = TextIteratorStreamer(Words(), skip_prompt=True, timeout=WAIT_S)
    err, text = run_with_consumer(model, ids, streamer, method="medusa", **FORMS[form])
    assert isinstance(err, InputError) and "unknown method 'medusa'" in str(err) and text == ""


def test_a_text_streamer_prints_the_returned_text_through_the_folder(capsys):
    model = WORKS[0].build()
    ids = torch.tensor([tiny_prompts(1)[0]])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=24,
                         streamer=TextStreamer(Words(), skip_prompt=True), **FORMS["folder"])
    printed = capsys.readouterr().out
    assert printed.split() == Words().decode(out[0, ids.shape[1]:]).split() and printed.endswith("\n")
