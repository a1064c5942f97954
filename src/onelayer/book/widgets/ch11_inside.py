"""Chapter 11 panel: inside chapter 10's model, computed in the page (``panels/inside.js``, with
the forward pass of ``panels/gpt.js``, weights stored as float16 as in chapter 10's writer).

Pick a ci, a block, a head and a query position: the head's attention weights from that
position on every earlier character. Pick a block and an FFN neuron: its top 5 contexts over
the panel's ci and the 10 characters its output vector promotes, as
``onelayer.chapters.ch11_inside.neuron_memories`` reads them. A test compares both with
PyTorch on the float16-rounded model."""

from __future__ import annotations

from collections.abc import Sequence

from onelayer.book.panels import PagePanel
from onelayer.book.widgets.ch07_tiny_gpt import gpt_model_data
from onelayer.model import TinyGPT
from onelayer.songci import END, SEPARATOR, CharVocab

MAX_TEXTS = 32        # 每换一首词、一块，页面都要把这些词全部前向一遍
TOP_CONTEXTS, TOP_PROMOTED, SPAN = 5, 10, 6


def inside_panel(model: TinyGPT, vocab: CharVocab, texts: Sequence[str], tune: str) -> PagePanel:
    """The in-page panel of chapter 11 over ``texts`` (ci of the 词牌 ``tune``, all of one
    length), each read as ``tune：text`` as ``Reading`` reads them; a character outside the
    vocabulary is read as ``CharVocab.UNKNOWN``."""
    return PagePanel("inside", inside_panel_data(model, vocab, texts, tune),
                     "拆开模型：注意力头与 FFN 神经元")


def inside_panel_data(model: TinyGPT, vocab: CharVocab, texts: Sequence[str], tune: str) -> dict:
    """What the page needs: the 词牌, the ci (as the model reads them) and the model."""
    if isinstance(texts, str):
        raise ValueError(f"texts 应为若干首词（字符串的序列），实际为一个字符串 {texts[:12]!r}")
    texts = list(texts)
    if not texts:
        raise ValueError("texts 应至少有一首词，实际为空")
    if len(texts) > MAX_TEXTS:
        raise ValueError(f"texts 最多 {MAX_TEXTS} 首，实际为 {len(texts)} 首")
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text:
            raise ValueError(f"texts[{i}] 应为非空的字符串，实际为 {text!r}")
        if len(text) != len(texts[0]):
            raise ValueError(f"texts 应一样长（都是 {len(texts[0])} 个字），"
                             f"实际 texts[{i}] 为 {len(text)} 个字")
    if not isinstance(tune, str) or not tune:
        raise ValueError(f"tune 应为非空的词牌名，实际为 {tune!r}")
    if any(c not in vocab.chars or c == CharVocab.UNKNOWN for c in tune):
        raise ValueError(f"tune 应由词表里的字组成，实际为 {tune!r}")
    if any(c in END + SEPARATOR for text in texts for c in text):
        raise ValueError(f"texts 应为词的正文（不含 {SEPARATOR!r} 与换行），实际有一首含有")
    length, block_size = len(tune) + len(SEPARATOR) + len(texts[0]), model.config.block_size
    if length > block_size:
        raise ValueError(f"“{tune}{SEPARATOR}”加正文应最多 block_size={block_size} 个字，"
                         f"实际为 {length} 个字")
    model_data = gpt_model_data(model, vocab.chars, dtype="float16")   # 也查模型与词表
    if END not in vocab.chars:
        raise ValueError("词表里应有换行（END，词的结尾），实际没有")
    return {"tune": tune, "separator": SEPARATOR, "end": END,
            "texts": [vocab.decode(vocab.encode(text)) for text in texts],
            "top_contexts": TOP_CONTEXTS, "top_promoted": TOP_PROMOTED, "span": SPAN,
            "model": model_data}
