"""Chapter 10 panel: the trained model writes a ci in the page (``panels/songci.js``, with the
forward pass of ``panels/gpt.js``); its weights are stored as float16 to keep the page small."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onelayer.book.panels import PagePanel
from onelayer.book.widgets.ch07_tiny_gpt import gpt_model_data
from onelayer.model import TinyGPT
from onelayer.songci import SEPARATOR, CharVocab


def songci_writer(model: TinyGPT, vocab: CharVocab,
                  tunes: Mapping[str, Sequence[int]]) -> PagePanel:
    """A 词牌 (from ``tunes``: name → line lengths), temperature, top-p and a seed; the model
    writes that 词牌 and each line's length is shown against its pattern. A test compares its
    logits with PyTorch's."""
    if not tunes:
        raise ValueError("tunes 应至少有一个词牌，实际为空")
    for tune, pattern in tunes.items():
        if CharVocab.UNKNOWN in vocab.decode(vocab.encode(tune + SEPARATOR)):
            raise ValueError(f"词牌应由词表里的字组成，实际为 {tune!r}")
        if not pattern or any(type(n) is not int or n < 1 for n in pattern):
            raise ValueError(f"{tune} 的 pattern 应为正整数的句长，实际为 {list(pattern)!r}")
    data = {"tunes": [{"name": t, "pattern": list(p)} for t, p in tunes.items()],
            "model": gpt_model_data(model, vocab.chars, dtype="float16")}
    return PagePanel("songci", data, "在页面里写一首词")
