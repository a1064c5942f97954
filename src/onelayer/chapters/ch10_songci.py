"""Chapter 10's experiments: the tiny GPT learns to write 宋词.

- ``tune_subset``: the ci of some 词牌 with no lost character (□);
- ``Bigram``: the baseline — next character from the previous one, counted on the training
  split (smoothed towards the unigram), its cross-entropy and its samples;
- ``sample_ci``: ci written from a 词牌 prompt by a TinyGPT or a stack (batched, one forward
  per new character), ``format_share``: the share of them whose line lengths follow a pattern;
- ``train_songci_models``: one TinyGPT per seed, trained side by side as a ``TinyGPTStack``
  with ``onelayer.train.train_adamw``, with validation loss and format share along the way;
- ``bpe_tokenizer``, ``tokens_per_line``: the BPE vocabularies the chapter compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.model import GPTConfig, TinyGPT, lm_loss, sampling_logits
from onelayer.songci import END, LOST, SEPARATOR, CharVocab, Ci, CiCorpus, line_lengths
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
              generator: torch.Generator | None = None) -> list[list[str]]:
    """``n`` ci per member written after the prompt ``tune + "："`` (each up to its line
    break, or the end of the context), [members][n]; a TinyGPT counts as one member.
    □ is never written: it stands for any rare character, not one that can be written."""
    check_positive_int("n", n)
    stacked = isinstance(model, TinyGPTStack)
    members = len(model) if stacked else 1
    prompt, unknown = vocab.encode(tune + SEPARATOR), vocab.encode(CharVocab.UNKNOWN)[0]
    tokens = torch.tensor(prompt).repeat(members, n, 1)
    for _ in range(model.config.block_size - len(prompt)):
        logits = (model(tokens) if stacked else model(tokens[0])[None])[..., -1, :]
        logits[..., unknown] = float("-inf")
        scores = sampling_logits(logits, temperature, top_p=top_p)
        probs = scores.softmax(-1).view(members * n, -1)
        new = torch.multinomial(probs, 1, generator=generator).view(members, n, 1)
        tokens = torch.cat([tokens, new], -1)
    return [[_until_break(vocab, row[len(prompt):]) for row in member.tolist()]
            for member in tokens]


def format_share(texts: Sequence[str], pattern: tuple[int, ...]) -> float:
    """The share of ``texts`` whose line lengths are exactly ``pattern``."""
    if not texts:
        raise ValueError("texts 不能为空")
    return sum(line_lengths(Ci("", "", (t,))) == tuple(pattern) for t in texts) / len(texts)


def songci_gpt_config(vocab: CharVocab, seq_len: int, position_table: bool = True) -> GPTConfig:
    """The chapter's model: 2 Pre-Norm blocks, d_model 64, 4 heads, GELU FFN of 4·d_model."""
    return GPTConfig(len(vocab), seq_len, n_layers=2, position_table=position_table,
                     block=BlockConfig(d_model=64, n_heads=4))


@dataclass(frozen=True)
class SongciRuns:
    """Models trained side by side: training loss [members, steps], and at each measured step
    the validation loss [members] and the format share of their samples [members]."""

    stack: TinyGPTStack
    train_loss: torch.Tensor
    valid_loss: dict[int, torch.Tensor]
    share: dict[int, torch.Tensor]


def train_songci_models(train: CiCorpus, valid: CiCorpus, seeds: Sequence[int], steps: int,
                        tune: str, pattern: tuple[int, ...], position_table: bool = True,
                        lr: float = 3e-3, warmup: int = 20, batch_size: int = BATCH_SIZE,
                        seq_len: int = SEQ_LEN, every: int = 50, samples: int = 16,
                        progress: Progress | None = None) -> SongciRuns:
    """One model per seed (built from that seed; batches from seed + 1000), trained with
    ``train_adamw``; every ``every`` steps the validation loss on every validation ci and
    the format share of ``samples`` ci written from ``tune`` at temperature 0.8."""
    members = []
    for seed in seeds:
        with seeded(seed):
            members.append(TinyGPT(songci_gpt_config(train.vocab, seq_len, position_table)))
    stack = TinyGPTStack(members)
    x, y = valid.every_ci(seq_len)
    generator = torch.Generator().manual_seed(seeds[0])

    def measure(model: TinyGPTStack) -> tuple[torch.Tensor, torch.Tensor]:
        loss = lm_loss(model(x.expand(len(seeds), -1, -1)), y.expand(len(seeds), -1, -1))
        written = sample_ci(model, train.vocab, tune, samples, generator=generator)
        return loss, torch.tensor([format_share(texts, pattern) for texts in written])

    losses, measured = train_adamw(stack, train, steps, lr, warmup, batch_size, seq_len,
                                   seed=[s + 1000 for s in seeds], evaluate=measure,
                                   every=every, progress=progress)
    return SongciRuns(stack, losses, {s: m[0] for s, m in measured.items()},
                      {s: m[1] for s, m in measured.items()})


def bpe_tokenizer(texts: Sequence[str], vocab_size: int):
    """A byte-level BPE vocabulary (GPT-2's kind) of ``vocab_size`` tokens learned from
    ``texts`` with Hugging Face ``tokenizers``: it starts from the 256 bytes and merges the
    most frequent adjacent pair until the vocabulary is full."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    check_positive_int("vocab_size", vocab_size)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def tokens_per_line(tokenizer, lines: Sequence[str]) -> torch.Tensor:
    """How many tokens ``tokenizer`` makes of each line, [len(lines)]."""
    return torch.tensor([len(e.ids) for e in tokenizer.encode_batch(list(lines))])
