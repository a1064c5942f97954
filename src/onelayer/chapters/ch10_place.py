"""Chapter 10's rhyme study, the arm "the place known": SongNet's symbols (Li et al. 2020) given
to the longer model. With each token the model reads two facts about the token it is to write
next: how many characters its line has left after it (0 = it ends the line; a separate symbol
when it is not a character of a line — punctuation, the 词牌, the line break), and whether it
ends a rhyme slot. Both are learned embeddings added to the token's (zeros at the start).

In training both are read from the ci itself (its own template, as SongNet does): the rhyme
slots are the line ends that rhyme with the first line's (``rhyme_ends``) and the first line's
end when one does. In writing they come from the form: its line lengths and its slots.
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
    Inputs [B, T, 3] (``PlacedCorpus``), or token ids [B, T] of whole ci, whose places are then
    read from the ids themselves (``text_places``; the last position's next token is unknown,
    so it is OUTSIDE): what the chapter's measurements on held-out ci feed it. Inputs [B, T, 3]
    must be batched (a 2-D input is read as ids)."""

    def __init__(self, gpt: TinyGPT, vocab: CharVocab, book: str) -> None:
        super().__init__()
        self.gpt, self.chars, self.book = gpt, vocab.chars, book
        self.config = gpt.config
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
        """[..., T] token ids → [..., T, 3], the places read from the text the ids spell."""
        rows = ids.reshape(-1, ids.shape[-1]).tolist()
        places = [text_places("".join(self.chars[i] for i in row), self.book)[1:] + [(OUTSIDE, 0)]
                  for row in rows]
        return torch.cat([ids[..., None], torch.tensor(places).view(*ids.shape, 2)], -1)


def form_place(form: Form, line: int, count: int) -> tuple[int, int]:
    """The next token's place when ``count`` characters of line ``line`` are written."""
    if line >= len(form.pattern) or count >= form.pattern[line]:
        return OUTSIDE, 0
    left = form.pattern[line] - count - 1
    slot = left == 0 and bool(form.slots) and (line == 0 or line in form.slots)
    return min(left, LONGEST), int(slot)


@torch.no_grad()
def sample_placed(model: PlacedGPT, vocab: CharVocab, form: Form, n: int,
                  temperature: float = 0.8, generator: torch.Generator | None = None
                  ) -> list[str]:
    """``n`` ci of ``form.tune`` written by ``model``, each position told its place by the
    form (``form_place``: the line and count follow what the row has written); □ never
    written; each ci up to its line break (``sample_ci``'s rules)."""
    model.eval()
    prompt = vocab.encode(form.tune + SEPARATOR)
    unknown, end = vocab.encode(CharVocab.UNKNOWN)[0], vocab.encode(END)[0]
    places = [(OUTSIDE, 0)] * (len(prompt) - 1) + [form_place(form, 0, 0)]
    tokens = torch.tensor(prompt).repeat(n, 1)
    rows = torch.tensor(places).repeat(n, 1, 1)
    line, count = [0] * n, [0] * n
    breaks = {vocab.encode(c)[0] for c in LINE_BREAKS if c in vocab.chars}
    for _ in range(model.config.block_size - len(prompt)):
        logits = model(torch.cat([tokens[..., None], rows], -1))[:, -1]
        logits[:, unknown] = float("-inf")
        probs = sampling_logits(logits, temperature).softmax(-1)
        new = torch.multinomial(probs, 1, generator=generator)
        for r, i in enumerate(new.flatten().tolist()):
            if i in breaks:
                line[r], count[r] = line[r] + (count[r] > 0), 0
            elif i != end:
                count[r] += 1
        nxt = torch.tensor([form_place(form, a, b) for a, b in zip(line, count)])
        tokens, rows = torch.cat([tokens, new], 1), torch.cat([rows, nxt[:, None]], 1)
        if (tokens[:, len(prompt):] == end).any(-1).all():
            break
    return [vocab.decode(row[len(prompt):]).split(END)[0] for row in tokens.tolist()]

