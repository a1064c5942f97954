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

import copy
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.model import GPTConfig, KVCache, TinyGPT, lm_loss, sampling_logits
from onelayer.songci import (
    END,
    LOST,
    SEPARATOR,
    CharVocab,
    Ci,
    CiCorpus,
    char_vocab,
    ci_text,
    line_lengths,
    split_by_ci,
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
              generator: torch.Generator | None = None) -> list[list[str]]:
    """``n`` ci per member written after the prompt ``tune + "："`` (each up to its line
    break, or the end of the context), [members][n]; a TinyGPT counts as one member. Each
    member keeps its keys and values (``KVCache``), so a step runs on the new token only.
    □ is never written: it stands for any rare character, not one that can be written.
    Stops early once every ci has its line break."""
    check_positive_int("n", n)
    if isinstance(model, TinyGPTStack):
        with torch.random.fork_rng(devices=[]):     # 建模型时的初始化不动全局的随机数
            members = [model.member(i) for i in range(len(model))]
    else:
        members = [model]
    caches = [KVCache(len(member.blocks)) for member in members]
    prompt = vocab.encode(tune + SEPARATOR)
    unknown = vocab.encode(CharVocab.UNKNOWN) if isinstance(vocab, CharVocab) else []
    end = vocab.encode(END)
    tokens = new = torch.tensor(prompt).repeat(len(members), n, 1)
    for _ in range(model.config.block_size - len(prompt)):
        logits = torch.stack([member.cached_logits(ids, cache)[:, -1, :]
                              for member, ids, cache in zip(members, new, caches)])
        logits[..., unknown] = float("-inf")
        scores = sampling_logits(logits, temperature, top_p=top_p)
        probs = scores.softmax(-1).view(len(members) * n, -1)
        new = torch.multinomial(probs, 1, generator=generator).view(len(members), n, 1)
        tokens = torch.cat([tokens, new], -1)
        if len(end) == 1 and (tokens[..., len(prompt):] == end[0]).any(-1).all():
            break
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


def tokens_per_line(tokenizer, lines: Sequence[str]) -> torch.Tensor:
    """How many tokens ``tokenizer`` makes of each line, [len(lines)]."""
    return torch.tensor([len(e.ids) for e in tokenizer.encode_batch(list(lines))])


# The longer-trained model (tools/train_songci_gpt.py): all 词牌 of the training split, a larger
# TinyGPT, thousands of steps; its checkpoint and loss log are kept in the repository.
SONGCI_GPT_DIR = Path(__file__).resolve().parents[3] / "models" / "songci-gpt"
WRITER_TUNES = {"浣溪沙": (7, 7, 7, 7, 7, 7), "鹧鸪天": (7, 7, 7, 7, 3, 3, 7, 7, 7),
                "菩萨蛮": (7, 7, 5, 5, 5, 5, 5, 5), "西江月": (6, 6, 7, 6, 6, 6, 7, 6)}


@dataclass(frozen=True)
class LongRun:
    """How the longer model is trained: every setting the script uses, saved beside it."""

    steps: int = 3000
    lr: float = 2e-3
    warmup: int = 100
    batch_size: int = 32
    seq_len: int = 80          # a 鹧鸪天 with its 词牌, punctuation and line break is 69 characters
    min_count: int = 10        # characters seen fewer times in the training split become □
    d_model: int = 96
    n_layers: int = 3
    n_heads: int = 4
    seed: int = 0
    every: int = 250           # validation loss every this many steps


def long_corpus(cis: Sequence[Ci], run: LongRun = LongRun()) -> tuple[CiCorpus, CiCorpus]:
    """(train, valid) for the longer model: every ci without a lost character, split by ci,
    one character vocabulary from the training split."""
    kept = [ci for ci in cis if LOST not in ci.text]
    train_cis, valid_cis = split_by_ci(kept)
    vocab = char_vocab([ci_text(ci) for ci in train_cis], min_count=run.min_count)
    return CiCorpus(train_cis, vocab), CiCorpus(valid_cis, vocab)


def long_gpt_config(vocab_size: int, run: LongRun = LongRun()) -> GPTConfig:
    return GPTConfig(vocab_size, run.seq_len, n_layers=run.n_layers,
                     block=BlockConfig(d_model=run.d_model, n_heads=run.n_heads, fused=True))


def train_long_songci(train: CiCorpus, valid: CiCorpus, run: LongRun = LongRun(),
                      steps: int | None = None, progress: Progress | None = None
                      ) -> tuple[TinyGPT, dict[str, list[float]]]:
    """The longer model, trained with ``train_adamw`` for the run's schedule: returns it and
    its log (the training loss of every step; the validation loss at step 0 and every
    ``run.every`` steps; what float16 weights change). ``steps`` runs only the first steps of
    the schedule (to check that they repeat a log): its log then holds the training losses
    only, since one validation pass costs about as much as 20 training steps."""
    with seeded(run.seed):
        model = TinyGPT(long_gpt_config(len(train.vocab), run))
    whole = steps is None or steps == run.steps
    losses, measured = train_adamw(
        model, train, run.steps, run.lr, run.warmup, run.batch_size, run.seq_len,
        seed=run.seed + 1000, evaluate=(lambda m: validation_loss(m, valid, run.seq_len))
        if whole else None, every=run.every, progress=progress, stop=steps)
    log = {"train_loss": losses.tolist()}
    if whole:
        log |= {"valid_step": list(measured), "valid_loss": list(measured.values()),
                "float16_logit_change": float16_logit_change(
                    model.eval(), valid.every_ci(run.seq_len)[0][:256])}
    return model, log


@torch.no_grad()
def validation_loss(model: TinyGPT, corpus: CiCorpus, seq_len: int, size: int = 256) -> float:
    """Cross-entropy (nats per token) on the first ``seq_len`` tokens of every ci of
    ``corpus``, computed ``size`` ci at a time."""
    x, y = corpus.every_ci(seq_len)
    total = sum(lm_loss(model(x[i:i + size]), y[i:i + size]).item() * len(x[i:i + size])
                for i in range(0, len(x), size))
    return total / len(x)


@torch.no_grad()
def float16_logit_change(model: TinyGPT, x: torch.Tensor) -> float:
    """The largest change in ``model``'s logits on the windows ``x`` when its weights are
    rounded to float16 (as the page and the checkpoint store them)."""
    half = copy.deepcopy(model)
    for p in half.parameters():
        p.copy_(p.half().float())
    return (half(x) - model(x)).abs().max().item()


def save_songci_gpt(model: TinyGPT, vocab: CharVocab, run: LongRun, log: dict,
                    seconds: float, folder: Path = SONGCI_GPT_DIR) -> None:
    """The checkpoint (float16 weights), the vocabulary, the settings, the loss log and what
    the rounding to float16 changed in the logits (measured on the log's validation windows:
    ``log["float16_logit_change"]``)."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.half() for k, v in model.state_dict().items()}, folder / "weights.pt")
    (folder / "run.json").write_text(json.dumps(
        {"run": asdict(run), "vocab": vocab.chars, "seconds": round(seconds),
         "torch": torch.__version__, **log}, ensure_ascii=False, indent=0) + "\n",
        encoding="utf-8")


def load_songci_gpt(folder: Path = SONGCI_GPT_DIR) -> tuple[TinyGPT, CharVocab, dict]:
    """The longer model (float32, eval mode), its vocabulary and what ``run.json`` records."""
    if not (folder / "weights.pt").is_file():
        raise FileNotFoundError(f"没有找到长时间训练的模型 {folder}：运行 "
                                "python tools/train_songci_gpt.py 重新训练（2 个核上约 11 分钟）")
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    vocab = CharVocab(record["vocab"])
    model = TinyGPT(long_gpt_config(len(vocab), LongRun(**record["run"])))
    weights = torch.load(folder / "weights.pt", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in weights.items()})
    return model.eval(), vocab, record
