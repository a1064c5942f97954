"""Chapter 10's rhyme study, the arm "the place known": SongNet's symbols (Li et al. 2020) given
to the longer model. With each token the model reads two facts about the token it is to write
next: how many characters its line has left after it (0 = it ends the line; a separate symbol
when it is not a character of a line — punctuation, the 词牌, the line break), and whether it
ends a rhyme slot. Both are learned embeddings added to the token's (zeros at the start).

In training both are read from the ci itself (its own template, as SongNet does): the rhyme
slots are the line ends that rhyme with the first line's (``rhyme_ends``) and the first line's
end when one does. In writing, and in every measurement on held-out ci, they come from the
form: its line lengths and its slots (``form_places``), so the flag never tells whether a
held-out line rhymes.
"""

from __future__ import annotations

import torch
from torch import nn

from onelayer.chapters.ch10_rhyme import rhyme_ends
from onelayer.chapters.ch10_songci import Form
from onelayer.metre import LINE_BREAKS, SEPARATOR
from onelayer.model import TinyGPT, sampling_logits
from onelayer.songci import END, CharVocab, CiCorpus

LONGEST = 15             # countdowns above this read as 15
OUTSIDE = LONGEST + 1    # the next token is not a character of a line


def text_places(text: str, book: str) -> list[tuple[int, int]]:
    """Per character of ``text`` (a 词牌, "：", a ci, maybe its line break and more after it):
    (characters left in its line after it, or OUTSIDE; 1 if it ends a rhyme slot, else 0). A
    line counts as one only once its punctuation is in ``text``."""
    places = [(OUTSIDE, 0)] * len(text)
    start = text.find(SEPARATOR) + 1
    stop = text.find(END, start)
    stop = len(text) if stop < 0 else stop
    line: list[int] = []
    for k in range(start, stop):
        if text[k] not in LINE_BREAKS:
            line.append(k)
        elif line:                                  # 连着的标点不算一句
            for left, at in enumerate(reversed(line)):
                places[at] = (min(left, LONGEST), 0)
            line = []
    ends = rhyme_ends(text[:stop], book)
    if ends:
        first_end = next(k for k in range(start, stop) if text[k + 1] in LINE_BREAKS)
        ends = [first_end, *ends]
    for k in ends:
        places[k] = (places[k][0], 1)
    return places


class PlacedCorpus:
    """A ``CiCorpus`` whose windows carry each next token's place: inputs [B, T, 3] (the token,
    then the next token's countdown and rhyme-slot flag, ``text_places`` of its ci) and the
    targets [B, T]."""

    def __init__(self, corpus: CiCorpus, book: str) -> None:
        if not isinstance(corpus.vocab, CharVocab):
            raise ValueError("位置符号按字读，需要 CharVocab，"
                             f"实际为 {type(corpus.vocab).__name__}")
        self.corpus, self.vocab = corpus, corpus.vocab
        chars = corpus.vocab.chars
        texts = ["".join(chars[i] for i in corpus.ids[s:s + n].tolist())
                 for s, n in zip(corpus.starts.tolist(), corpus.lengths.tolist())]
        self.places = torch.tensor([p for t in texts for p in text_places(t, book)])

    def __len__(self) -> int:
        return len(self.corpus)

    def _placed(self, x: torch.Tensor, y: torch.Tensor, starts: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        index = (starts[:, None] + torch.arange(1, x.shape[1] + 1)) % len(self.places)
        return torch.cat([x[..., None], self.places[index]], -1), y

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator
              ) -> tuple[torch.Tensor, torch.Tensor]:
        pick = torch.randint(len(self.corpus.starts), (batch_size,), generator=generator)
        starts = self.corpus.starts[pick]                    # 与 CiCorpus.batch 抽的窗口相同
        return self._placed(*self.corpus.windows(starts, seq_len), starts)

    def every_ci(self, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self._placed(*self.corpus.every_ci(seq_len), self.corpus.starts)


class PlacedGPT(nn.Module):
    """A TinyGPT that reads, with each token, the next token's countdown and rhyme-slot flag.
    Inputs [B, T, 3] (``PlacedCorpus``), or token ids [B, T] of ci of ``self.form``, read with
    the places that form gives (``form_places``, as in writing; set ``form`` first): what the
    chapter's measurements on held-out ci feed it. A 2-D input is read as ids."""

    def __init__(self, gpt: TinyGPT, vocab: CharVocab) -> None:
        super().__init__()
        self.gpt, self.chars = gpt, vocab.chars
        self.config = gpt.config
        self.form: Form | None = None
        d = gpt.config.block.d_model
        self.countdown = nn.Embedding(OUTSIDE + 1, d)
        self.slot = nn.Embedding(2, d)
        nn.init.zeros_(self.countdown.weight)
        nn.init.zeros_(self.slot.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 3:
            x = self.read_places(x)
        extra = self.countdown(x[..., 1]) + self.slot(x[..., 2])
        # 加在词嵌入上（只加在输入一端：输出层直接用词嵌入表的权重，不经过这个模块）
        added = self.gpt.tok.register_forward_hook(lambda module, args, out: out + extra)
        try:
            return self.gpt(x[..., 0])
        finally:
            added.remove()

    def read_places(self, ids: torch.Tensor) -> torch.Tensor:
        """[..., T] token ids → [..., T, 3], the places ``self.form`` gives the text they spell."""
        if self.form is None:
            raise ValueError("按字读位置需要词牌的格式：先设 model.form（一个 Form），实际为 None")
        rows = ids.reshape(-1, ids.shape[-1]).tolist()
        places = [form_places(self.form, "".join(self.chars[i] for i in row)) for row in rows]
        return torch.cat([ids[..., None], torch.tensor(places).view(*ids.shape, 2)], -1)


def form_place(form: Form, line: int, count: int) -> tuple[int, int]:
    """The next token's place when ``count`` characters of line ``line`` are written."""
    if line >= len(form.pattern) or count >= form.pattern[line]:
        return OUTSIDE, 0
    left = form.pattern[line] - count - 1
    slot = left == 0 and bool(form.slots) and (line == 0 or line in form.slots)
    return min(left, LONGEST), int(slot)


def form_places(form: Form, text: str) -> list[tuple[int, int]]:
    """Per character of ``text`` (a 词牌, "：", then a ci being written), the place ``form``
    gives the token after it: lines are counted as written (punctuation right after
    punctuation does not start a line), nothing after the line break."""
    places, line, count, started = [], 0, 0, False
    for char in text:
        if not started:
            started = char == SEPARATOR
        elif char == END:
            line = len(form.pattern)
        elif char in LINE_BREAKS:
            line, count = line + (count > 0), 0
        else:
            count += 1
        places.append(form_place(form, line, count) if started else (OUTSIDE, 0))
    return places


@torch.no_grad()
def sample_placed(model: PlacedGPT, vocab: CharVocab, form: Form, n: int,
                  temperature: float = 0.8, generator: torch.Generator | None = None
                  ) -> list[str]:
    """``n`` ci of ``form.tune`` written by ``model``, each position told its place by the
    form (``form_places`` of what the row has written); □ never written; each ci up to its
    line break (``sample_ci``'s rules)."""
    model.eval()
    prompt = vocab.encode(form.tune + SEPARATOR)
    unknown, end = vocab.encode(CharVocab.UNKNOWN)[0], vocab.encode(END)[0]
    tokens = torch.tensor(prompt).repeat(n, 1)
    for _ in range(model.config.block_size - len(prompt)):
        places = [form_places(form, vocab.decode(row)) for row in tokens.tolist()]
        logits = model(torch.cat([tokens[..., None], torch.tensor(places)], -1))[:, -1]
        logits[:, unknown] = float("-inf")
        probs = sampling_logits(logits, temperature).softmax(-1)
        tokens = torch.cat([tokens, torch.multinomial(probs, 1, generator=generator)], 1)
        if (tokens[:, len(prompt):] == end).any(-1).all():
            break
    return [vocab.decode(row[len(prompt):]).split(END)[0] for row in tokens.tolist()]
