"""Chapter 10's rhyme study: what the longer model's recipe needs to learn to rhyme. Each arm
changes one thing (``LongRun``'s fields in ``ch10_longer``), built here:

- ``rhyme_features`` / ``with_rhyme_classes``: each character's rhyme classes in a rhyme book,
  as an embedding added to its token embedding — at the input and, since the head is tied, in
  the output table too. After training the sum is folded into one table
  (``fold_rhyme_classes``), so the checkpoint is a plain TinyGPT;
- ``RhymeWeights``: the loss at the characters that end a line rhyming with the first line's
  end, read from the training text with the rhyme book, multiplied by k (from a given step on);
- ``reversed_lines``: each line written end first, so the rhyme is the first character a line
  writes (undone before the 格律 is measured: it is its own inverse);
- ``jinti_kind``: which 近体诗 rhymed on 平 a poem is (五绝, 七绝, 五律, 七律), for the arm that
  mixes more rhymed text into training (``tools/jintishi.py`` selects them from 全唐诗).
"""

from __future__ import annotations

import re
from functools import cache

import torch
from torch import nn
from torch.nn.utils import parametrize

from onelayer import metre
from onelayer.model import TinyGPT
from onelayer.songci import END, SEPARATOR, Ci

_LINE = re.compile(f"[^{metre.LINE_BREAKS}]+")


def reversed_lines(text: str) -> str:
    """``text`` with the characters of each line in reverse order, the punctuation kept where
    it is: "一曲新词酒一杯，" → "杯一酒词新曲一，". Applied twice it gives ``text`` back."""
    return _LINE.sub(lambda m: m.group()[::-1], text)


def reversed_ci(ci: Ci) -> Ci:
    """The ci with every line written end first (``reversed_lines``); the 词牌 stays as it is."""
    return Ci(ci.rhythmic, ci.author, tuple(reversed_lines(p) for p in ci.paragraphs))


def rhyme_features(chars: str, book: str) -> tuple[torch.Tensor, list[str]]:
    """[len(chars), C]: per character, its rhyme classes in ``book`` (both tones; the class
    names say the tone), each 1 / the number of its classes, so a 多音字 splits its weight;
    a character the table lacks (punctuation, □) has a row of zeros. And the C class names."""
    groups = [sorted(metre.rhyme_groups(c, book)) if len(c) == 1 and c != END else []
              for c in chars]
    names = sorted({g for gs in groups for g in gs})
    index = {name: k for k, name in enumerate(names)}
    features = torch.zeros(len(chars), len(names))
    for row, gs in enumerate(groups):
        for g in gs:
            features[row, index[g]] = 1 / len(gs)
    return features, names


class RhymeClassEmbedding(nn.Module):
    """A parametrization of the token table E: E + F · G, F the fixed ``rhyme_features`` and G
    one learned vector per rhyme class (zeros at the start, so the model starts as the recipe's)."""

    def __init__(self, features: torch.Tensor, d_model: int) -> None:
        super().__init__()
        self.register_buffer("features", features)
        self.table = nn.Parameter(torch.zeros(features.shape[1], d_model))

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + self.features @ self.table


def with_rhyme_classes(model: TinyGPT, chars: str, book: str) -> TinyGPT:
    """``model`` with each character's rhyme-class embedding added to its token embedding."""
    features, _ = rhyme_features(chars, book)
    if features.shape[0] != model.tok.num_embeddings:
        raise ValueError(f"chars 应有 {model.tok.num_embeddings} 个（词表大小），"
                         f"实际为 {len(chars)}")
    parametrize.register_parametrization(
        model.tok, "weight", RhymeClassEmbedding(features, model.tok.embedding_dim))
    return model


def fold_rhyme_classes(model: TinyGPT) -> TinyGPT:
    """The trained sum E + F · G written into the token table: a plain TinyGPT again."""
    if parametrize.is_parametrized(model.tok, "weight"):
        parametrize.remove_parametrizations(model.tok, "weight", leave_parametrized=True)
    return model


@cache
def _rhymes_in_a_known_tone(a: str, b: str, book: str) -> bool:
    """``b`` rhymes with ``a`` in ``b``'s tone, or in ``a``'s when ``b`` has both."""
    t = metre.tone(b) if metre.tone(b) in metre.TONES else metre.tone(a)
    return t in metre.TONES and a != b and metre.rhymes(a, b, t, book) is True


def rhyme_ends(text: str, book: str) -> list[int]:
    """Where in ``text`` (a 词牌, "：", then the ci, as a model reads it; what follows a line
    break is another ci and is not read) a line ends on a character that rhymes with the first
    line's end: in its own tone (if it has both, in the first line's end's; if both have both,
    it is left out), never a repeat of the first line's end (重韵 is a fault). A line counts
    once its punctuation is in ``text``."""
    start = text.find(SEPARATOR) + 1
    stop = text.find(END, start)
    stop = len(text) if stop < 0 else stop
    ends = [k for k in range(start, min(stop, len(text) - 1))
            if text[k] not in metre.LINE_BREAKS and text[k + 1] in metre.LINE_BREAKS]
    return [k for k in ends[1:] if _rhymes_in_a_known_tone(text[ends[0]], text[k], book)]


JINTI = {(4, 5): "五绝", (4, 7): "七绝", (8, 5): "五律", (8, 7): "七律"}


def jinti_kind(text: str) -> str | None:
    """"五绝", "七绝", "五律" or "七律" when ``text`` is 4 or 8 lines of 5 or 7 characters whose
    even lines end on different characters of one 平 rhyme group of the 平水韵 (the second
    line's); None otherwise."""
    lines = metre.ci_lines(text)
    kind = JINTI.get((len(lines), len(lines[0]) if lines else 0))
    if kind is None or any(len(line) != len(lines[0]) for line in lines):
        return None
    ends = [line[-1] for line in lines[1::2]]
    rhymed = all(metre.rhymes(ends[0], end, "平", "平水韵") is True for end in ends[1:])
    return kind if rhymed and len(set(ends)) == len(ends) else None


class RhymeWeights:
    """Per-token loss weights for a batch: ``weight`` at each target that ends a line rhyming
    with its ci's first line (``rhyme_ends``), from step ``start`` on; 1 elsewhere and before.
    The targets are read as text, so a window must start at a ci's first token (as
    ``CiCorpus.batch``'s windows do): targets row t is token t + 1 of the ci."""

    def __init__(self, chars: str, book: str, weight: float, start: int = 0) -> None:
        if not weight >= 1:
            raise ValueError(f"weight 应 ≥ 1，实际为 {weight!r}")
        if not (isinstance(start, int) and start >= 0):
            raise ValueError(f"start 应为 ≥ 0 的整数（从第几步起加权），实际为 {start!r}")
        self.chars, self.book, self.weight, self.start = chars, book, float(weight), start

    def __call__(self, targets: torch.Tensor, step: int) -> torch.Tensor:
        weights = torch.ones(targets.shape)
        if step < self.start or self.weight == 1:
            return weights
        for row, ids in enumerate(targets.tolist()):
            text = "".join(self.chars[i] for i in ids)
            weights[row, rhyme_ends(text, self.book)] = self.weight
        return weights
