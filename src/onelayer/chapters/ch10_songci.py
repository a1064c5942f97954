"""Chapter 10's experiments: the tiny GPT learns to write 宋词.

- ``tune_subset``: the ci of some 词牌 with no lost character (□);
- ``Bigram``: the baseline — next character from the previous one, counted on the training
  split (smoothed towards the unigram), its cross-entropy and its samples;
- ``Form``: a 词牌's form read from the training split (line lengths, the tone grid, the rhyme
  slots) and the three rates a set of ci is judged by: 句长, 平仄 and 押韵 (``onelayer.metre``);
- ``sample_ci``: ci written from a 词牌 prompt by a TinyGPT or a stack (batched, one forward
  per new character), if asked with the rhyme imposed at the rhyme slots (``rhyme_filter``);
- ``train_songci_models``: one TinyGPT per seed, trained side by side as a ``TinyGPTStack``
  with ``onelayer.train.train_adamw``, with validation loss and the three rates along the way;
- ``bpe_tokenizer``, ``BpeVocab``: the BPE vocabularies the controls page compares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from onelayer import metre
from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.model import GPTConfig, KVCache, TinyGPT, lm_loss, sampling_logits
from onelayer.songci import (
    END,
    LINE_BREAKS,
    LOST,
    SEPARATOR,
    CharVocab,
    Ci,
    CiCorpus,
)
from onelayer.stack import TinyGPTStack
from onelayer.train import Progress, seeded, train_adamw

BATCH_SIZE, SEQ_LEN = 16, 56  # the chapter's batches: 16 windows of 56 characters


def tune_subset(cis: Sequence[Ci], tunes: Sequence[str]) -> list[Ci]:
    """The ci of ``tunes`` that have no lost character, in the corpus's order."""
    chosen = [ci for ci in cis if ci.rhythmic in tunes and LOST not in ci.text]
    if not chosen:
        raise ValueError(f"tunes 应为语料里有的词牌，实际为 {list(tunes)}")
    return chosen


@dataclass(frozen=True)
class Bigram:
    """P(b | a) = (count(a, b) + k·P(b)) / (count(a) + k): bigram counts smoothed towards the
    unigram P(b) with strength k (k → 0: raw counts; k → ∞: the unigram)."""

    pairs: torch.Tensor    # [V, V] counts of (previous, next)
    unigram: torch.Tensor  # [V] probabilities

    @classmethod
    def count(cls, corpus: CiCorpus) -> Bigram:
        v = len(corpus.vocab)
        ids = corpus.ids
        pairs = torch.zeros(v * v).index_add_(0, ids[:-1] * v + ids[1:], torch.ones(len(ids) - 1))
        unigram = torch.bincount(ids, minlength=v).double()
        return cls(pairs.view(v, v).double(), unigram / unigram.sum())

    def probs(self, k: float) -> torch.Tensor:
        """[V, V]: row a is P(· | a)."""
        if not k > 0:
            raise ValueError(f"平滑强度 k 应为正数，实际为 {k!r}")
        return (self.pairs + k * self.unigram) / (self.pairs.sum(1, keepdim=True) + k)

    def loss(self, x: torch.Tensor, y: torch.Tensor, k: float) -> float:
        """Cross-entropy (nats per character) of the targets ``y`` after ``x``."""
        return -self.probs(k)[x, y].log().mean().item()

    def unigram_loss(self, y: torch.Tensor) -> float:
        return -self.unigram[y].log().mean().item()

    def sample(self, vocab: CharVocab, prompt: str, n: int, max_len: int, k: float,
               generator: torch.Generator, temperature: float = 1.0) -> list[str]:
        """``n`` ci written character by character from the last one, up to the line break,
        at ``temperature`` (probabilities raised to 1/temperature, as dividing logits by it);
        never □: it stands for any rare character, not one that can be written."""
        if not temperature > 0:
            raise ValueError(f"temperature 应为正数，实际为 {temperature!r}")
        probs = self.probs(k).pow(1 / temperature).float()
        probs[:, vocab.encode(CharVocab.UNKNOWN)[0]] = 0.0
        last = torch.full((n,), vocab.encode(prompt)[-1])
        written = []
        for _ in range(max_len):
            last = torch.multinomial(probs[last], 1, generator=generator)[:, 0]
            written.append(last)
        return [_until_break(vocab, row) for row in torch.stack(written, 1).tolist()]


def _until_break(vocab: CharVocab, ids: list[int]) -> str:
    return vocab.decode(ids).split(END)[0]


@torch.no_grad()
def sample_ci(model: TinyGPT | TinyGPTStack, vocab: CharVocab, tune: str, n: int,
              temperature: float = 0.8, top_p: float | None = None,
              generator: torch.Generator | None = None,
              rhyme: Form | None = None) -> list[list[str]]:
    """``n`` ci per member written after the prompt ``tune + "："`` (each up to its line
    break, or the end of the context), [members][n]; a TinyGPT counts as one member. Each
    member keeps its keys and values (``KVCache``), so a step runs on the new token only.
    □ is never written: it stands for any rare character, not one that can be written.
    ``rhyme``: a ``Form``; at the last character of each of its rhyme slots only characters
    that rhyme with the first line's end may be written (``rhyme_filter``'s masking).
    Stops early once every ci has its line break."""
    check_positive_int("n", n)
    if rhyme is not None and not isinstance(vocab, CharVocab):
        raise ValueError(f"押韵约束需要按字的词表（CharVocab），实际为 {type(vocab).__name__}")
    if isinstance(model, TinyGPTStack):
        with torch.random.fork_rng(devices=[]):     # 建模型时的初始化不动全局的随机数
            members = [model.member(i) for i in range(len(model))]
    else:
        members = [model]
    caches = [KVCache(len(member.blocks)) for member in members]
    prompt = vocab.encode(tune + SEPARATOR)
    unknown = vocab.encode(CharVocab.UNKNOWN) if isinstance(vocab, CharVocab) else []
    end = vocab.encode(END)
    rows = len(members) * n
    at_slots = None if rhyme is None else _RhymeAtSlots(rhyme, vocab, rows)
    tokens = new = torch.tensor(prompt).repeat(len(members), n, 1)
    for _ in range(model.config.block_size - len(prompt)):
        logits = torch.stack([member.cached_logits(ids, cache)[:, -1, :]
                              for member, ids, cache in zip(members, new, caches)])
        logits[..., unknown] = float("-inf")
        if at_slots is not None:
            logits = at_slots.mask(logits.view(rows, -1)).view_as(logits)
        scores = sampling_logits(logits, temperature, top_p=top_p)
        probs = scores.softmax(-1).view(rows, -1)
        new = torch.multinomial(probs, 1, generator=generator).view(len(members), n, 1)
        if at_slots is not None:
            at_slots.update(new.flatten().tolist())
        tokens = torch.cat([tokens, new], -1)
        if len(end) == 1 and (tokens[..., len(prompt):] == end[0]).any(-1).all():
            break
    return [[_until_break(vocab, row[len(prompt):]) for row in member.tolist()]
            for member in tokens]


# The printed 词谱 (《钦定词谱》, the 正体 after 韩偓), 中 = 可平可仄, typed from the book: the
# chapter draws it beside the grid read from the ci and checks that they agree where it fixes
# a tone.
PRINTED_SCORES = {"浣溪沙": ("中仄中平中仄平", "中平中仄仄平平", "中平中仄仄平平",
                          "中仄中平平仄仄", "中平中仄仄平平", "中平中仄仄平平")}
RATES = ("句长合格率", "平仄合格率", "押韵率")
AT_LEAST = 20   # 平仄、押韵：可量的字或韵脚少于这么多，就说不准，记作 nan


@dataclass(frozen=True)
class Form:
    """A 词牌's form as its ci show it: the line lengths ``pattern``, the tone ``grid`` (majority
    tone per place), per line how often its end rhymes with the first line's (``line_rhymes``)
    and the rhyme ``slots`` (the lines where most ci rhyme), rhyming by ``book``."""

    tune: str
    pattern: tuple[int, ...]
    grid: metre.ToneGrid
    line_rhymes: tuple[float | None, ...]
    slots: tuple[int, ...]
    book: str = "平水韵"

    @classmethod
    def read(cls, cis: Sequence[Ci], tune: str, pattern: Sequence[int],
             book: str = "平水韵") -> Form:
        """The form of ``tune`` read from the ci of ``cis`` that follow ``pattern``."""
        texts = [ci.text for ci in tune_subset(cis, [tune])]
        grid = metre.tone_grid(texts, pattern)
        return cls(tune, tuple(pattern), grid, tuple(metre.line_rhymes(texts, grid, book)),
                   tuple(metre.rhyme_slots(texts, grid, book)), book)

    def slot_tone(self, line: int) -> str:
        """The tone the rhyme of ``line`` is judged in: its last character's in the grid."""
        return self.grid.end_tone(line)

    def rates(self, texts: Sequence[str]) -> torch.Tensor:
        """[句长合格率, 平仄合格率, 押韵率] of ``texts``: the share whose line lengths are the
        pattern; the share of characters at the fixed tone places that have the majority tone,
        and the share of rhyme slots that rhyme with the first line, both over the lines that
        have their pattern length (``metre.tone_rate``, ``metre.rhyme_rate``); nan when fewer
        than ``AT_LEAST`` characters or slots could be counted."""
        if not texts:
            raise ValueError("texts 不能为空")
        length = sum(metre.length_ok(t, self.pattern) for t in texts) / len(texts)
        tone = metre.tone_rate(texts, self.grid, at_least=AT_LEAST)
        rhyme = metre.rhyme_rate(texts, self.grid, self.slots, self.book, at_least=AT_LEAST)
        return torch.tensor([length, math.nan if tone is None else tone,
                             math.nan if rhyme is None else rhyme])

    def rhyme_chance(self, texts: Sequence[str]) -> float:
        """The 押韵率 of ``texts`` if their lines were not linked (``metre.rhyme_chance``)."""
        chance = metre.rhyme_chance(texts, self.grid, self.slots, self.book)
        return math.nan if chance is None else chance


def random_ci(texts: Sequence[str], pattern: Sequence[int], n: int,
              generator: torch.Generator) -> list[str]:
    """``n`` texts of ``pattern``'s line lengths whose characters are drawn one by one, each
    with its frequency among the characters of ``texts`` (punctuation left out): 句长 is right
    by construction, and nothing else is there but the frequencies."""
    check_positive_int("n", n)
    chars = [c for t in texts for c in t if c not in LINE_BREAKS]
    picks = torch.randint(len(chars), (n, sum(pattern)), generator=generator).tolist()
    ends = torch.tensor(pattern).cumsum(0).tolist()
    return ["".join(chars[k] + ("，" if j + 1 in ends else "") for j, k in enumerate(row))
            for row in picks]


def rhyme_filter(logits: torch.Tensor, chars: str, anchor: str, tone: str,
                 book: str = "平水韵") -> torch.Tensor:
    """``logits`` [..., len(chars)] with every character that does not rhyme with ``anchor``
    at a slot of ``tone`` set to -inf (characters the rhyme table lacks are dropped too).
    Unchanged when ``anchor`` is not in the table or nothing in ``chars`` rhymes with it."""
    if logits.shape[-1] != len(chars):
        raise ValueError(f"logits 的最后一维应为字表大小 {len(chars)}，实际为 {logits.shape[-1]}")
    keep = rhyming_mask(chars, anchor, tone, book)
    return logits if not keep.any() else logits.masked_fill(~keep, float("-inf"))


def rhyming_mask(chars: str, anchor: str, tone: str, book: str = "平水韵") -> torch.Tensor:
    """[len(chars)]: True for each character that rhymes with ``anchor`` at a slot of
    ``tone`` in ``book``."""
    return torch.tensor([metre.rhymes(anchor, c, tone, book) is True for c in chars])


class _RhymeAtSlots:
    """Follows each row of a batch as it is written (line, characters in the line, the first
    line's end) and, at the last character of a rhyme slot, keeps only characters that rhyme
    with the first line's end; at the first line's end (the 起韵), only characters with a
    reading in the slots' tone, so that a rhyme can follow."""

    def __init__(self, form: Form, vocab: CharVocab, rows: int) -> None:
        self.form, self.chars = form, vocab.chars
        self.line, self.count = [0] * rows, [0] * rows
        self.anchor: list[str | None] = [None] * rows
        self.last = [""] * rows
        self.breaks = set(LINE_BREAKS + SEPARATOR + END)
        self.masks: dict[tuple[str, str], torch.Tensor] = {}

    def mask(self, logits: torch.Tensor) -> torch.Tensor:
        """logits [rows, V] with the rhyme imposed on the rows at a slot's last character."""
        pattern = self.form.pattern
        for row, (line, count, anchor) in enumerate(zip(self.line, self.count, self.anchor)):
            if line == 0 and self.form.slots and count == pattern[0] - 1:
                key = ("", self.form.slot_tone(self.form.slots[0]))
            elif anchor and line in self.form.slots and count == pattern[line] - 1:
                key = (anchor, self.form.slot_tone(line))
            else:
                continue
            if key not in self.masks:
                self.masks[key] = self._mask(*key)
            if self.masks[key].any():
                    logits[row] = logits[row].masked_fill(~self.masks[key], float("-inf"))
        return logits

    def _mask(self, anchor: str, tone: str) -> torch.Tensor:
        if anchor:
            return rhyming_mask(self.chars, anchor, tone, self.form.book)
        return torch.tensor([bool(metre.rhyme_groups(c, self.form.book, tone)) for c in self.chars])

    def update(self, new: list[int]) -> None:
        for row, i in enumerate(new):
            char = self.chars[i]
            if char in self.breaks:
                if self.count[row]:              # 连着的标点不算一句（同 metre.ci_lines）
                    if self.line[row] == 0:
                        self.anchor[row] = self.last[row]
                    self.line[row] += 1
                    self.count[row] = 0
            else:
                self.count[row] += 1
            self.last[row] = char


def songci_gpt_config(vocab: CharVocab, seq_len: int, position_table: bool = True) -> GPTConfig:
    """The chapter's model: 2 Pre-Norm blocks, d_model 64, 4 heads, GELU FFN of 4·d_model."""
    return GPTConfig(len(vocab), seq_len, n_layers=2, position_table=position_table,
                     block=BlockConfig(d_model=64, n_heads=4))


@dataclass(frozen=True)
class SongciRuns:
    """Models trained side by side: training loss [members, steps], and at each measured step
    the validation loss [members] and the three rates of their samples [members, 3]
    (``RATES``: 句长, 平仄, 押韵)."""

    stack: TinyGPTStack
    train_loss: torch.Tensor
    valid_loss: dict[int, torch.Tensor]
    rates: dict[int, torch.Tensor]


def train_songci_models(train: CiCorpus, valid: CiCorpus, seeds: Sequence[int], steps: int,
                        form: Form, position_table: bool = True,
                        lr: float = 3e-3, warmup: int = 20, batch_size: int = BATCH_SIZE,
                        seq_len: int = SEQ_LEN, every: int = 50, samples: int = 16,
                        progress: Progress | None = None) -> SongciRuns:
    """One model per seed (built from that seed; batches from seed + 1000), trained with
    ``train_adamw``; every ``every`` steps the validation loss on every validation ci and
    the three rates (``Form.rates``) of ``samples`` ci written per model from the form's 词牌
    at temperature 0.8."""
    members = []
    for seed in seeds:
        with seeded(seed):
            members.append(TinyGPT(songci_gpt_config(train.vocab, seq_len, position_table)))
    stack = TinyGPTStack(members)
    x, y = valid.every_ci(seq_len)
    generator = torch.Generator().manual_seed(seeds[0])

    def measure(model: TinyGPTStack) -> tuple[torch.Tensor, torch.Tensor]:
        loss = lm_loss(model(x.expand(len(seeds), -1, -1)), y.expand(len(seeds), -1, -1))
        written = sample_ci(model, train.vocab, form.tune, samples, generator=generator)
        return loss, torch.stack([form.rates(texts) for texts in written])

    losses, measured = train_adamw(stack, train, steps, lr, warmup, batch_size, seq_len,
                                   seed=[s + 1000 for s in seeds], evaluate=measure,
                                   every=every, progress=progress)
    return SongciRuns(stack, losses, {s: m[0] for s, m in measured.items()},
                      {s: m[1] for s, m in measured.items()})


def bpe_tokenizer(texts: Sequence[str], vocab_size: int):
    """A byte-level BPE vocabulary (GPT-2's kind) of ``vocab_size`` tokens learned from
    ``texts`` with Hugging Face ``tokenizers``: it starts from the 256 bytes and merges the
    most frequent adjacent pair until the vocabulary is full."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    check_positive_int("vocab_size", vocab_size)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


class BpeVocab:
    """A ``tokenizers`` tokenizer used where a ``CharVocab`` goes (``CiCorpus``, ``sample_ci``,
    ``train_songci_models``): ``encode``, ``decode`` and ``len``."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def __len__(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))
