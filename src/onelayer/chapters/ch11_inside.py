"""Chapter 11's experiments: chapter 10's 宋词 models opened up, on held-out ci. Nothing here
trains a model; every function reads the shipped checkpoints.

- ``Reading``: the held-out ci of one 词牌 as the model reads them, with where each next
  character stands (a line break? a fixed tone? which character starts the line?);
- ``lens_logits``, ``lens_rates``, ``readout_rates``: the logit lens — the residual stream
  after the embeddings and after each block, read through the final norm and the tied
  unembedding;
- ``attention_all``, ``head_scores``: every head's attention, and how much of it goes to the
  line's start, the previous character, the 词牌's colon and position 0;
- ``mean_ablated``: a head or an FFN replaced by its mean output (what it adds on average);
- ``neuron_memories``, ``memory_hits``: each FFN neuron read as a key-value memory (Geva et
  al. 2021): the contexts that excite it most and the characters its output vector promotes;
- ``tone_probe``: a linear probe for the tone of the next character, per depth;
- ``rhyme_attention``: the weight from the positions that write a rhyme to the first line's end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from onelayer import metre
from onelayer.chapters.ch07_tiny_gpt import ffn_off, heads_off
from onelayer.chapters.ch10_longer import slot_ends
from onelayer.chapters.ch10_songci import Form
from onelayer.model import TinyGPT
from onelayer.probes import evaluating, recorded
from onelayer.songci import END, LINE_BREAKS, SEPARATOR, CharVocab

TONE_CLASS = {metre.PING: 0, metre.ZE: 1}


@dataclass(frozen=True)
class Reading:
    """Ci of one 词牌 that all follow its pattern, as a model reads them: ``x`` the ids of
    ``词牌：text``, ``y`` the next ids [B, T]; per position (of x) the start of its line
    ``line_start`` (the last break or colon at or before it), whether the next character is a
    break ``breaks``, and the tone class of the next character ``tone`` (0 平, 1 仄) where it
    stands at a fixed tone place and has one tone, else -1."""

    form: Form
    texts: tuple[str, ...]
    x: torch.Tensor
    y: torch.Tensor
    line_start: torch.Tensor
    breaks: torch.Tensor
    tone: torch.Tensor

    @property
    def prompt(self) -> int:
        """Tokens of the prompt ``词牌：``: position prompt − 1 is the colon."""
        return len(self.form.tune) + len(SEPARATOR)

    @classmethod
    def of(cls, form: Form, vocab: CharVocab, texts: Sequence[str]) -> Reading:
        size = sum(form.pattern) + len(form.pattern)       # 每句末尾恰好一个标点
        kept = tuple(t for t in texts if metre.length_ok(t, form.pattern) and len(t) == size)
        if not kept:
            raise ValueError(f"texts 里应有按 {'·'.join(map(str, form.pattern))} 写、每句末尾"
                             f"一个标点的词，实际 {len(texts)} 首里没有")
        full = [form.tune + SEPARATOR + t + END for t in kept]
        ids = torch.tensor([vocab.encode(s) for s in full])
        P, fixed = len(form.tune) + len(SEPARATOR), set(form.grid.fixed())
        starts, breaks, tones = [], [], []
        for s in full:
            start, line, k = 0, 0, 0                  # line, k：下一个正文字的位置
            for t in range(len(s) - 1):
                start = t if s[t] in LINE_BREAKS + SEPARATOR else start
                nxt, in_text = s[t + 1], t + 1 >= P
                starts.append(start)
                breaks.append(nxt in LINE_BREAKS)
                placed = in_text and nxt not in LINE_BREAKS + END and (line, k) in fixed
                tones.append(TONE_CLASS.get(metre.tone(nxt), -1) if placed else -1)
                if in_text:
                    line, k = (line + 1, 0) if nxt in LINE_BREAKS else (line, k + 1)
        shape = (len(full), len(full[0]) - 1)
        return cls(form, kept, ids[:, :-1], ids[:, 1:], torch.tensor(starts).view(shape),
                   torch.tensor(breaks).view(shape), torch.tensor(tones).view(shape))


# ---- the logit lens ----

@torch.no_grad()
def lens_logits(model: TinyGPT, x: torch.Tensor) -> list[torch.Tensor]:
    """ln_f(h) · Eᵀ for each state h of the residual stream (the embeddings, then each block's
    output): [n_layers + 1] logits [B, T, V]. The last one is the model's own output."""
    with evaluating(model):
        return [model.ln_f(h) @ model.tok.weight.T for h in model.hidden_states(x)]


LENS_RATES = ("交叉熵", "该断句处给标点的概率", "句中给标点的概率", "平仄猜对的比例")


@torch.no_grad()
def lens_rates(model: TinyGPT, reading: Reading, vocab: CharVocab) -> torch.Tensor:
    """``readout_rates`` of each readout of the logit lens: [n_layers + 1, len(LENS_RATES)]."""
    return torch.stack([readout_rates(logits, reading, vocab)
                        for logits in lens_logits(model, reading.x)])


@torch.no_grad()
def readout_rates(logits: torch.Tensor, reading: Reading, vocab: CharVocab) -> torch.Tensor:
    """What ``logits`` [B, T, V] for ``reading`` say, [len(LENS_RATES)]: the cross-entropy of the
    next character (nats); the mean probability on the break marks where the next character is
    one, and where it is not (after the prompt); the share of fixed tone places where the
    characters of the right tone get more probability than those of the other."""
    marks = torch.tensor([c in LINE_BREAKS for c in vocab.chars])
    tones = torch.tensor([TONE_CLASS.get(metre.tone(c), -1) for c in vocab.chars])
    inside = torch.arange(reading.x.shape[1]) >= reading.prompt - 1
    due, mid = reading.breaks & inside, ~reading.breaks & inside
    probs = logits.softmax(-1)
    on_marks = probs[..., marks].sum(-1)
    ping, ze = probs[..., tones == 0].sum(-1), probs[..., tones == 1].sum(-1)
    right = torch.where(reading.tone == 0, ping > ze, ze > ping)[reading.tone >= 0]
    return torch.tensor([F.cross_entropy(logits.flatten(0, 1), reading.y.flatten()).item(),
                         on_marks[due].mean().item(), on_marks[mid].mean().item(),
                         right.float().mean().item()])


# ---- attention: where each head looks ----

@torch.no_grad()
def attention_all(model: TinyGPT, x: torch.Tensor) -> torch.Tensor:
    """The attention weights of every block and head: [n_layers, B, n_heads, T, T]."""
    attns = [block.attn for block in model.blocks]
    with evaluating(model), ExitStack() as stack:
        seen = [stack.enter_context(recorded(a, which="input")) for a in attns]
        model(x)
    return torch.stack([a.weights(inputs[0]) for a, inputs in zip(attns, seen)])


HEAD_TARGETS = ("句首", "前一字", "冒号", "位置 0", "词牌")


def head_scores(maps: torch.Tensor, reading: Reading) -> torch.Tensor:
    """The mean weight each head gives, from the positions after the prompt, to the start of
    the current line (its last break, or the colon), the previous character, the 词牌's colon,
    position 0, and (summed) the whole prompt ``词牌：``: [len(HEAD_TARGETS), n_layers, n_heads].
    ``uniform_weight`` is what a head that spreads evenly would give one position."""
    if maps.dim() != 5 or maps.shape[1:2] + maps.shape[-2:] != reading.x.shape[:1] + 2 * \
            reading.x.shape[1:]:
        raise ValueError(f"maps 应为 [n_layers, {reading.x.shape[0]}, n_heads, "
                         f"{reading.x.shape[1]}, {reading.x.shape[1]}]，实际为 {list(maps.shape)}")
    B, T = reading.x.shape
    queries = torch.arange(reading.prompt, T)
    rows = torch.arange(B)[:, None]
    picked = maps[..., queries, :]                                  # [L, B, H, Q, T]

    def weight_on(keys: torch.Tensor) -> torch.Tensor:              # keys [B, Q]
        index = keys[None, :, None, :, None].expand(*picked.shape[:-1], 1)
        return picked.gather(-1, index).squeeze(-1).mean(dim=(1, 3))
    colon = torch.full((B, len(queries)), reading.prompt - 1)
    return torch.stack([weight_on(reading.line_start[rows, queries]),
                        weight_on((queries - 1).expand(B, -1)), weight_on(colon),
                        weight_on(torch.zeros_like(colon)),
                        picked[..., :reading.prompt].sum(-1).mean(dim=(1, 3))])


def uniform_weight(reading: Reading) -> float:
    """The mean of 1/(t + 1) over the query positions of ``head_scores``."""
    return (1 / torch.arange(reading.prompt + 1, reading.x.shape[1] + 1).double()).mean().item()


# ---- mean ablation ----

@torch.no_grad()
def component_means(model: TinyGPT, x: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per block, the mean over ``x``'s positions of what the heads hand to W_O [d_model] and
    of the FFN's output [d_model]."""
    blocks = model.blocks
    with evaluating(model), ExitStack() as stack:
        merged = [stack.enter_context(recorded(b.attn.proj, which="input")) for b in blocks]
        ffn = [stack.enter_context(recorded(b.mlp)) for b in blocks]
        model(x)
    return [(m[0].mean(dim=(0, 1)), f[0].mean(dim=(0, 1))) for m, f in zip(merged, ffn)]


@contextmanager
def mean_ablated(model: TinyGPT, means: list[tuple[torch.Tensor, torch.Tensor]], layer: int,
                 head: int | None = None) -> Iterator[TinyGPT]:
    """Inside the ``with`` block, head ``head`` of block ``layer`` (or, with ``head=None``, its
    FFN) hands on its mean over the reference inputs (``component_means``) whatever it reads:
    the same at every position, so the model keeps working when it writes one character at a
    time."""
    merged, ffn = means[layer]
    if head is None:
        with ffn_off(model, layer, fill=ffn):
            yield model
    else:
        fill = merged.expand(model.config.block_size, -1)
        with heads_off(model, [head], layer, fill=fill):
            yield model


# ---- the FFN as a key-value memory ----

@dataclass(frozen=True)
class NeuronReading:
    """One neuron of one FFN: the contexts that excite it most (the key), the next character
    after each, and the characters its output vector promotes (the value)."""

    layer: int
    neuron: int
    contexts: tuple[str, ...]
    nexts: str
    promoted: str


@torch.no_grad()
def neuron_memories(model: TinyGPT, x: torch.Tensor, y: torch.Tensor, vocab: CharVocab,
                    layer: int, top: int = 10, span: int = 6) -> list[NeuronReading]:
    """For every neuron of block ``layer``'s FFN: its ``top`` contexts (the ``span`` characters
    up to the position where it is most active) over the windows ``x``, the characters that came
    next there, and the ``top`` characters whose embedding has the largest dot product with its
    output vector (column of W2), as Geva et al. 2021 read a value."""
    mlp = model.blocks[layer].mlp
    with evaluating(model), recorded(mlp, which="input") as inputs:
        model.hidden_states(x)                                      # 不必算最后的 logits
    acts = mlp.hidden(inputs[0]).flatten(0, 1)                     # [B·T, d_ff]
    best = acts.topk(top, dim=0).indices.T                           # [d_ff, top]
    values = (mlp.w2.weight.T @ model.tok.weight.T).topk(top, dim=-1).indices  # [d_ff, top]
    T = x.shape[1]
    text = [vocab.decode(row) for row in x.tolist()]
    readings = []
    for i, (where, promoted) in enumerate(zip(best.tolist(), values.tolist())):
        contexts = tuple(text[p // T][max(0, p % T - span + 1):p % T + 1] for p in where)
        nexts = "".join(vocab.chars[y[p // T, p % T]] for p in where)
        readings.append(NeuronReading(layer, i, contexts, nexts, vocab.decode(promoted)))
    return readings


def memory_hits(readings: Sequence[NeuronReading], pairing: Sequence[int] | None = None
                ) -> float:
    """The share of (neuron, top context) pairs whose next character is among the characters
    the neuron promotes; ``pairing`` gives neuron i the value of neuron ``pairing[i]`` (the
    baseline: a value read beside another neuron's key)."""
    order = range(len(readings)) if pairing is None else pairing
    if sorted(order) != list(range(len(readings))):
        raise ValueError(f"pairing 应是 0..{len(readings) - 1} 的一个排列，"
                         f"实际为 {list(order)[:8]}…")
    hits = [c in readings[j].promoted for r, j in zip(readings, order) for c in r.nexts]
    return sum(hits) / len(hits)


# ---- where the tone comes from: a linear probe per depth ----

def _fit_probe(features: torch.Tensor, labels: torch.Tensor, steps: int = 200,
               weight_decay: float = 1e-3) -> torch.nn.Linear:
    probe = torch.nn.Linear(features.shape[1], 2).double()
    optimiser = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        loss = F.cross_entropy(probe(features), labels) + weight_decay * probe.weight.pow(2).sum()
        loss.backward()
        return loss
    optimiser.step(closure)
    return probe


def tone_probe(states: Sequence[torch.Tensor], tone: torch.Tensor, train: torch.Tensor,
               generator: torch.Generator | None = None) -> torch.Tensor:
    """How well a linear probe reads the next character's tone (0/1, -1 = not counted) from
    each of ``states`` ([B, T, d] each): trained on the rows ``train`` ([B] bool), tested on the
    others; with ``generator`` the training labels are shuffled first (the baseline). Returns
    the test accuracy per state [len(states)]."""
    counted = tone >= 0
    rows = torch.arange(tone.shape[0])[:, None].expand_as(tone)[counted]
    labels = tone[counted]
    in_train = train[rows]
    fit_labels = labels[in_train]
    if generator is not None:
        fit_labels = fit_labels[torch.randperm(len(fit_labels), generator=generator)]
    accuracy = []
    for h in states:
        features = h[counted].detach().double()
        mean, std = features[in_train].mean(0), features[in_train].std(0) + 1e-6
        features = (features - mean) / std
        with torch.enable_grad():
            probe = _fit_probe(features[in_train], fit_labels)
        with torch.no_grad():
            guess = probe(features[~in_train]).argmax(-1)
        accuracy.append((guess == labels[~in_train]).double().mean().item())
    return torch.tensor(accuracy)


# ---- rhyme: does any head look back at the first line's end? ----

def rhyme_queries(reading: Reading) -> list[tuple[int, int]]:
    """(row, position) of every position that writes a rhyme slot's last character."""
    form, P = reading.form, reading.prompt
    pairs = [(b, P + end - 1) for b, text in enumerate(reading.texts)
             for end in slot_ends(text, form)]
    if not pairs:
        raise ValueError(f"{form.tune} 没有韵脚（form.slots 为空）")
    return pairs


def rhyme_attention(maps: torch.Tensor, reading: Reading) -> torch.Tensor:
    """The mean weight each head gives, from the position that writes a rhyme slot's last
    character, to the first line's last character: [n_layers, n_heads]."""
    b, q = map(torch.tensor, zip(*rhyme_queries(reading)))
    anchor = reading.prompt + reading.form.pattern[0] - 1
    return maps[:, b, :, q, anchor].mean(0)      # 花式下标的维排在最前：[配对, L, H]


def rhyme_uniform(reading: Reading) -> float:
    """What a head that spreads evenly gives one position, at the rhyme-writing positions."""
    queries = [q for _, q in rhyme_queries(reading)]
    return sum(1 / (q + 1) for q in queries) / len(queries)
