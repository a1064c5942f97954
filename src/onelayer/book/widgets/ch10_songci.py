"""Chapter 10 panel: the trained model writes a ci in the page (``panels/songci.js``, with the
forward pass of ``panels/gpt.js``); its weights are stored as float16 to keep the page small.
Each written character is marked with its tone, each rhyme slot with whether it rhymes, and a
switch imposes the rhyme at the slots (``sample_ci(..., rhyme=form)``'s masking). A model of the
rhyme study that reads each position's place (``PlacedGPT``) writes with the places the chosen
词牌 gives (``form_places``, as ``sample_placed`` does)."""

from __future__ import annotations

from collections.abc import Mapping

from onelayer import metre
from onelayer.book.panels import PagePanel
from onelayer.book.widgets.ch07_tiny_gpt import gpt_model_data, tensor_base64
from onelayer.chapters.ch10_place import LONGEST, PlacedGPT
from onelayer.chapters.ch10_songci import Form
from onelayer.model import TinyGPT
from onelayer.songci import SEPARATOR, CharVocab

NO_TONE = "·"     # 字表里没有的字；定声格里不定声的位置


def songci_writer(model: TinyGPT | PlacedGPT, vocab: CharVocab, forms: Mapping[str, Form],
                  about: str = "上面读过全宋词的模型") -> PagePanel:
    """A 词牌 (from ``forms``: name → its ``Form``), temperature, top-p, a seed and a switch
    for the rhyme; the model writes that 词牌, each line's length is shown against its
    pattern, each character's tone against the fixed tones of the form's grid, and each rhyme
    slot's end against the first line's. ``about`` names the model in the panel's note. A test
    compares its logits with PyTorch's."""
    if not isinstance(model, (TinyGPT, PlacedGPT)):
        raise ValueError(f"model 应为 TinyGPT 或 PlacedGPT，实际为 {type(model).__name__}")
    if not forms:
        raise ValueError("forms 应至少有一个词牌，实际为空")
    for tune, form in forms.items():
        if not isinstance(form, Form):
            raise ValueError(f"forms[{tune!r}] 应为 Form，实际为 {type(form).__name__}")
        if form.tune != tune:
            raise ValueError(f"forms 的键应为它的词牌 {form.tune!r}，实际为 {tune!r}")
        if CharVocab.UNKNOWN in vocab.decode(vocab.encode(tune + SEPARATOR)):
            raise ValueError(f"词牌应由词表里的字组成，实际为 {tune!r}")
        if not form.pattern or any(type(n) is not int or n < 1 for n in form.pattern):
            raise ValueError(f"{tune} 的 pattern 应为正整数的句长，实际为 {list(form.pattern)!r}")
        if tuple(form.grid.pattern) != tuple(form.pattern):
            raise ValueError(f"{tune} 的平仄格应为 pattern {list(form.pattern)} 的，"
                             f"实际为 {list(form.grid.pattern)}")
        if any(not 0 < i < len(form.pattern) for i in form.slots):
            raise ValueError(f"{tune} 的韵脚句应在 1..{len(form.pattern) - 1} 之间，"
                             f"实际为 {list(form.slots)}")
    books = sorted({form.book for form in forms.values()})
    data = {"tunes": [_tune_data(form) for form in forms.values()],
            "tones": "".join(metre.tone(c) or NO_TONE for c in vocab.chars),
            "rhymes": {book: _rhyme_classes(vocab.chars, book) for book in books},
            "model": _model_data(model, vocab), "about": about}
    return PagePanel("songci", data, "在页面里写一首词")


def _model_data(model: TinyGPT | PlacedGPT, vocab: CharVocab) -> dict:
    """The model's weights in float16; a ``PlacedGPT``'s two place tables beside them."""
    if isinstance(model, TinyGPT):
        return gpt_model_data(model, vocab.chars, dtype="float16")
    data = gpt_model_data(model.gpt, vocab.chars, dtype="float16")
    data["places"] = {"countdown": tensor_base64(model.countdown.weight, "float16"),
                      "slot": tensor_base64(model.slot.weight, "float16"), "longest": LONGEST}
    return data


def _tune_data(form: Form) -> dict:
    """Name, line lengths, the fixed tones (one string per line, ``NO_TONE`` where the ci do
    not agree), the rhyme slots with the tone each is judged in, and the rhyme book."""
    fixed = set(form.grid.fixed())
    grid = ["".join(tone if (i, j) in fixed else NO_TONE for j, tone in enumerate(row))
            for i, row in enumerate(form.grid.majority)]
    return {"name": form.tune, "pattern": list(form.pattern), "grid": grid,
            "slots": list(form.slots), "slotTones": [form.slot_tone(i) for i in form.slots],
            "book": form.book}


def _rhyme_classes(chars: str, book: str) -> dict:
    """The rhyme class names of ``book`` that ``chars`` use; per tone, per character the ids
    of its classes in that tone (a slot of that tone rhymes only through them); and which
    characters the table lacks."""
    groups = {t: [sorted(metre.rhyme_groups(c, book, t)) for c in chars] for t in metre.TONES}
    names = sorted({g for per_char in groups.values() for gs in per_char for g in gs})
    index = {name: k for k, name in enumerate(names)}
    return {"names": names,
            "ids": {t: [[index[g] for g in gs] for gs in per_char]
                    for t, per_char in groups.items()},
            "listed": "".join("1" if metre.rhyme_groups(c, book) else "0" for c in chars)}
