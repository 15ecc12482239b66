"""The app's words: one definition per technical word, for the lesson's hovers and glossary and
for the main page's terms (the race's table). Pure: text in, HTML out."""
from __future__ import annotations

import html
import re

# One definition per word, used for every hover and for the lesson's glossary at its end.
GLOSSARY: dict[str, str] = {
    "token": "A piece of text the model reads and writes: a word, part of a word or a punctuation mark.",
    "forward pass": "One run of the whole model over its input; it scores what token should come next.",
    "plain decoding": "Writing text one token per forward pass, always taking the model's top choice.",
    "logits": "The model's score for every possible next token; the highest score is its choice.",
    "draft": "A guessed token, written before the model has confirmed it.",
    "context": "Everything the model has seen so far: the prompt and the tokens written since.",
    "n-gram": "A run of n tokens in a row, such as the last 2 or 3 tokens written.",
    "g1": "LogitSpec's first lookup: find the latest tokens earlier in the context and copy what followed.",
    "next-next guess": ("A guess for the token after the next one, taken from the same logits that chose the "
                        "next token (the paper's twist)."),
    "g2": "LogitSpec's second lookup: for a next-next guess, find it earlier in the context and copy what followed.",
    "draft tree": "All the guesses of one step, joined where they share a beginning, checked together.",
    "tree attention mask": ("The rule that lets each guessed token, in the one checking pass, see the text "
                            "before it and its own branch only, as if it had been written alone."),
    "bonus token": "The model's own choice right after the last accepted guess; it comes free with the same pass.",
    "lossless": "The output is exactly what plain decoding would have written, token for token.",
    "sampling": ("Drawing each token at random by the model's probabilities, with a fixed seed, instead of "
                 "taking the top one."),
    "vanilla": "The race's baseline: plain decoding, one token per forward pass, no guessing.",
    "greedy": "Always taking the model's top choice, so the same prompt always gives the same text.",
    "prompt lookup": ("Guessing the next tokens by copying what followed the latest few tokens earlier in the "
                      "text, then checking the copy in one forward pass."),
    "cost tree": ("A tree of guesses sized by what one more guessed token costs to check on this machine: "
                  "a few tokens on a CPU."),
    "static tree": ("The paper's fixed tree of 64 guessed tokens, sized for a GPU, which checks them all in "
                    "about the time of one."),
    "tokens per pass": "Tokens written per forward pass: 1 for plain decoding, more when guesses are accepted.",
    "compute clock": ("A method's own seconds of work, its prompt's first pass and any one-off measuring of this "
                      "machine included: the methods take turns, so each clock runs only while its method works."),
}


# Words defined in the sentence where they first appear, not only in their hover: a student
# reading the screen cannot guess them from the sentence around them.
ON_SCREEN: dict[str, str] = {
    "token": "a word or a piece of a word",
    "logits": "the model's score for every possible next token",
    "context": "the prompt and every token written since",
}


def term(word: str, shown: str | None = None, define: bool = False) -> str:
    """`shown` (default `word`) wearing its definition as a hover; `define`: its ON_SCREEN
    definition follows it in the sentence."""
    said = (f'<abbr class="lesson-term" data-term="{html.escape(word)}" title="{html.escape(GLOSSARY[word])}">'
            f"{html.escape(shown or word)}</abbr>")
    if define:
        said += f' <span class="lesson-def" data-term="{html.escape(word)}">({html.escape(ON_SCREEN[word])})</span>'
    return said


def defined(text: str) -> str:
    """Plain `text` as HTML, each glossary word in it wearing its definition (term): a lane's label
    such as "LogitSpec (cost tree)" gets its "cost tree" defined where it stands. Case counts: the
    "Token" of a name ("Token Recycling") is no glossary word."""
    found = [(m.start(), m.end(), w) for w in GLOSSARY
             if (m := re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text))]
    out, at = [], 0
    for start, end, w in sorted(found):
        if start < at:
            continue  # inside a longer word already marked
        out += [html.escape(text[at:start]), term(w, text[start:end])]
        at = end
    return "".join(out) + html.escape(text[at:])
