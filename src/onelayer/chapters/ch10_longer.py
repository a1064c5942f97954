"""Chapter 10's longer-trained models, kept in the repository: the model that read the whole
全宋词 (tools/train_songci_gpt.py, ``models/songci-gpt/``) and the rhyme study, its recipe with
one setting changed at a time (tools/train_rhyme_study.py, ``models/rhyme-study/``); and what
a model thinks at the rhyme slots: ``slot_logprob`` of the characters written there,
``rhyme_mass`` on the first line's rhyme (with that line's end swapped by
``other_rhyme_ends``, or not)."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from onelayer import metre
from onelayer.block import BlockConfig
from onelayer.chapters.ch10_place import PlacedCorpus, PlacedGPT
from onelayer.chapters.ch10_rhyme import (
    RhymeWeights,
    fold_rhyme_classes,
    reversed_ci,
    with_rhyme_classes,
)
from onelayer.chapters.ch10_songci import Form, rhyming_mask
from onelayer.metre import LINE_BREAKS, SEPARATOR
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.songci import (
    LOST,
    CharVocab,
    Ci,
    CiCorpus,
    char_vocab,
    ci_text,
    load_songci,
    split_by_ci,
)
from onelayer.train import Progress, seeded, train_adamw


def slot_ends(text: str, form: Form) -> list[int]:
    """Where in ``text`` the last character of each rhyme slot stands (the text follows the
    form's pattern)."""
    ends, line, count = [], 0, 0
    for k, char in enumerate(text):
        if char in LINE_BREAKS:
            line, count = line + 1, 0
        else:
            count += 1
            if line in form.slots and count == form.pattern[line]:
                ends.append(k)
    return ends


@torch.no_grad()
def slot_logprob(model: TinyGPT, vocab: CharVocab, form: Form, texts: Sequence[str]) -> float:
    """The mean log-probability (nats, temperature 1) ``model`` gives the character at the end
    of each rhyme slot of ``texts``, read after the 词牌 prompt and the text before it; only
    texts that follow the pattern count."""
    kept = [t for t in texts if metre.length_ok(t, form.pattern)]
    if not kept:
        raise ValueError(f"texts 里没有句长为 {'·'.join(map(str, form.pattern))} 的词")
    prompt = vocab.encode(form.tune + SEPARATOR)
    rows = [prompt + vocab.encode(t) for t in kept]
    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    logprobs = model(ids[:, :-1]).log_softmax(-1)       # 位置 t 预测第 t + 1 个词元
    picked = [logprobs[r, len(prompt) + k - 1, ids[r, len(prompt) + k]]
              for r, t in enumerate(kept) for k in slot_ends(t, form)]
    return torch.stack(picked).mean().item()


@torch.no_grad()
def rhyme_mass(model: TinyGPT, vocab: CharVocab, form: Form, texts: Sequence[str],
               anchors: Sequence[str] | None = None) -> float:
    """The mean probability ``model`` puts, at the end of the first rhyme slot of ``texts`` (there
    the first line is the only rhyme it has read), on the characters that rhyme with the first
    line's end. ``anchors``: one character per text written over the first line's end before
    the model reads it (the rhyme is still judged against the original end): if the model
    links the lines, the probability falls."""
    kept = [t for t in texts if metre.length_ok(t, form.pattern)]
    if not kept:
        raise ValueError(f"texts 里没有句长为 {'·'.join(map(str, form.pattern))} 的词")
    ends = [metre.ci_lines(t)[0][-1] for t in kept]
    fed = kept if anchors is None else [
        t[:form.pattern[0] - 1] + a + t[form.pattern[0]:] for t, a in zip(kept, anchors)]
    prompt = vocab.encode(form.tune + SEPARATOR)
    rows = [prompt + vocab.encode(t) for t in fed]
    width = max(map(len, rows))
    probs = model(torch.tensor([r + [0] * (width - len(r)) for r in rows])).softmax(-1)
    tone = form.slot_tone(form.slots[0])
    masses = [probs[r, len(prompt) + slot_ends(t, form)[0] - 1][
        rhyming_mask(vocab.chars, end, tone, form.book)].sum()
        for r, (t, end) in enumerate(zip(kept, ends))]
    return torch.stack(masses).mean().item()


def other_rhyme_ends(texts: Sequence[str], form: Form) -> list[str]:
    """For each text, the first line's end of the next text (in order, wrapping around) whose
    end does not rhyme with its own at the first rhyme slot: what ``rhyme_mass`` writes over
    the first line's end."""
    ends = [metre.ci_lines(t)[0][-1] for t in texts]
    tone = form.slot_tone(form.slots[0])
    return [next(ends[(i + k) % len(ends)] for k in range(1, len(ends))
                 if metre.rhymes(end, ends[(i + k) % len(ends)], tone, form.book) is False)
            for i, end in enumerate(ends)]


# The longer-trained model (tools/train_songci_gpt.py): all 词牌 of the training split, a larger
# TinyGPT, thousands of steps; its checkpoint and loss log are kept in the repository.
SONGCI_GPT_DIR = Path(__file__).resolve().parents[3] / "models" / "songci-gpt"
JINTISHI_PATH = SONGCI_GPT_DIR.parents[1] / "data" / "jintishi.jsonl"     # make jintishi
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
    rope_theta: float | None = None   # a base θ: RoPE (chapter 9) in place of the position table
    # The rhyme study's changes (onelayer.chapters.ch10_rhyme), all off in the recipe:
    rhyme_classes: str | None = None  # a rhyme book: each character's classes as an embedding
    rhyme_weight: float = 1.0         # the loss at line ends that rhyme with the first line × this
    weight_from: int = 0              # … from this step on
    reverse_lines: bool = False       # each line written end first
    place_known: bool = False         # each token read with the next one's place (ch10_place)
    shi_share: float = 0.0            # this share of the training ci are 近体诗 (make jintishi)
    rhyme_book: str = "词林正韵"       # the book the weighted line ends are read with


def long_corpus(cis: Sequence[Ci], run: LongRun = LongRun()) -> tuple[CiCorpus, CiCorpus]:
    """(train, valid) for the longer model: every ci without a lost character, split by ci,
    one character vocabulary from the training split."""
    kept = [ci for ci in cis if LOST not in ci.text]
    train_cis, valid_cis = split_by_ci(kept)
    if run.reverse_lines:                                  # 每句倒着写：韵脚字先写
        train_cis = [reversed_ci(ci) for ci in train_cis]
        valid_cis = [reversed_ci(ci) for ci in valid_cis]
    vocab = char_vocab([ci_text(ci) for ci in train_cis], min_count=run.min_count)
    if run.shi_share:               # 词表仍只由宋词定；诗里词表没有的字读作 □
        train_cis = train_cis + more_rhymed_text(len(train_cis), run.shi_share)
    return CiCorpus(train_cis, vocab), CiCorpus(valid_cis, vocab)


def more_rhymed_text(n_ci: int, share: float, path: Path = JINTISHI_PATH) -> list[Ci]:
    """The 近体诗 to add to ``n_ci`` ci so that they are ``share`` of the whole: the first of
    ``path`` in one fixed shuffled order (the same poems for every seed)."""
    if not 0 < share < 1:
        raise ValueError(f"shi_share 应在 0 与 1 之间，实际为 {share!r}")
    if not path.is_file():
        raise FileNotFoundError(f"没有找到近体诗 {path}：请在仓库根目录运行 make jintishi")
    poems = [p for p in load_songci(path) if LOST not in p.text]
    order = torch.randperm(len(poems), generator=torch.Generator().manual_seed(0)).tolist()
    return [poems[i] for i in order[:round(n_ci * share / (1 - share))]]


def long_gpt_config(vocab_size: int, run: LongRun = LongRun()) -> GPTConfig:
    return GPTConfig(vocab_size, run.seq_len, n_layers=run.n_layers,
                     block=BlockConfig(d_model=run.d_model, n_heads=run.n_heads, fused=True,
                                       rope_theta=run.rope_theta))


def train_long_songci(train: CiCorpus, valid: CiCorpus, run: LongRun = LongRun(),
                      progress: Progress | None = None) -> tuple[TinyGPT, dict[str, list[float]]]:
    """The longer model, trained with ``train_adamw`` for the run's schedule: returns it and
    its log (the training loss of every step; the validation loss at step 0, every
    ``run.every`` steps and at the end; what float16 weights change)."""
    with seeded(run.seed):
        model = TinyGPT(long_gpt_config(len(train.vocab), run))
    if run.rhyme_classes:
        with_rhyme_classes(model, train.vocab.chars, run.rhyme_classes)
    gpt = model
    if run.place_known:                               # 每个字带着下一个字的位置符号读
        model = PlacedGPT(gpt, train.vocab)
        train, valid = PlacedCorpus(train, run.rhyme_book), PlacedCorpus(valid, run.rhyme_book)
    weigh = None if run.rhyme_weight == 1 else RhymeWeights(
        train.vocab.chars, run.rhyme_book, run.rhyme_weight, run.weight_from)
    losses, measured = train_adamw(
        model, train, run.steps, run.lr, run.warmup, run.batch_size, run.seq_len,
        seed=run.seed + 1000, evaluate=lambda m: validation_loss(m, valid, run.seq_len),
        every=run.every, progress=progress, weigh=weigh)
    fold_rhyme_classes(gpt)
    return model, {"train_loss": losses.tolist(), "valid_step": list(measured),
                   "valid_loss": list(measured.values()),
                   "float16_logit_change": float16_logit_change(
                       model.eval(), valid.every_ci(run.seq_len)[0][:256])}


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


# The rhyme study (tools/train_rhyme_study.py): the longer model's recipe with one setting
# changed at a time, three seeds each. The recipe's own seed 0 is the model above. The loss
# weight k = 10 starts halfway (step 1500), so that the model first learns the language;
# k = 3 is a second weight. Neither number was tuned.
RHYME_STUDY_DIR = SONGCI_GPT_DIR.parent / "rhyme-study"
RHYME_SEEDS = (0, 1, 2)
_CLASSES, _WEIGHTED = {"rhyme_classes": "词林正韵"}, {"rhyme_weight": 10.0, "weight_from": 1500}
RHYME_ARMS = {
    "table": lambda seed: LongRun(seed=seed),
    "rope": lambda seed: LongRun(seed=seed, rope_theta=1e4),
    "classes": lambda seed: LongRun(seed=seed, **_CLASSES),
    "weighted": lambda seed: LongRun(seed=seed, **_WEIGHTED),
    "classes+weighted": lambda seed: LongRun(seed=seed, **_CLASSES, **_WEIGHTED),
    "classes+weighted3": lambda seed: LongRun(seed=seed, **_CLASSES, rhyme_weight=3.0,
                                              weight_from=1500),
    "reversed": lambda seed: LongRun(seed=seed, reverse_lines=True),
    "place": lambda seed: LongRun(seed=seed, place_known=True),
    "classes+place": lambda seed: LongRun(seed=seed, **_CLASSES, place_known=True),
    "shi": lambda seed: LongRun(seed=seed, shi_share=0.25),
}


def rhyme_study_folder(arm: str, seed: int) -> Path:
    """Where the study keeps one arm's model for one seed."""
    if arm not in RHYME_ARMS or seed not in RHYME_SEEDS:
        raise ValueError(f"arm 应为 {list(RHYME_ARMS)} 之一、seed 应为 {RHYME_SEEDS} 之一，"
                         f"实际为 {arm!r}、{seed!r}")
    if arm == "table" and seed == 0:
        return SONGCI_GPT_DIR
    return RHYME_STUDY_DIR / f"{arm}-{seed}"


def load_rhyme_study(arms: Sequence[str]) -> dict[str, list[TinyGPT]]:
    """Each of the ``arms``' models, one per seed of ``RHYME_SEEDS`` (they share one
    vocabulary: the longer model's, made from the same training split)."""
    return {arm: [load_songci_gpt(rhyme_study_folder(arm, seed))[0] for seed in RHYME_SEEDS]
            for arm in arms}


def load_songci_gpt(folder: Path = SONGCI_GPT_DIR) -> tuple[TinyGPT, CharVocab, dict]:
    """The longer model (float32, eval mode), its vocabulary and what ``run.json`` records."""
    if not (folder / "weights.pt").is_file():
        script = "train_rhyme_study.py（每个模型约 15 分钟）" if folder.parent == RHYME_STUDY_DIR \
            else "train_songci_gpt.py（约 11 分钟）"
        raise FileNotFoundError(f"没有找到长时间训练的模型 {folder}：在 2 个核上运行 "
                                f"python tools/{script}重新训练")
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    vocab = CharVocab(record["vocab"])
    run = LongRun(**record["run"])
    model = TinyGPT(long_gpt_config(len(vocab), run))
    if run.place_known:
        model = PlacedGPT(model, vocab)
    weights = torch.load(folder / "weights.pt", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in weights.items()})
    return model.eval(), vocab, record
