"""Chapter 7's experiments: tiny GPTs that learn a table of facts (recall against training
steps, for several FFN widths), which attention head carries the subject to the answer's
position (and what switching heads or the FFN off shows), and the FFN read as a key-value
memory (Geva et al. 2021)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.data import FactsCorpus
from onelayer.model import GPTConfig, TinyGPT
from onelayer.probes import evaluating, recorded
from onelayer.stack import TinyGPTStack
from onelayer.train import Progress, seeded, train_lm


def fact_queries(corpus: FactsCorpus, context: int = 0, seed: int = 0
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompts [n_facts, 4·context + 2] asking every fact ("猫吃" → "桃") and the answers.

    Each prompt starts with ``context`` other random facts, a context never seen as such.
    """
    generator = torch.Generator().manual_seed(seed)
    n = len(corpus.facts)
    prefix = corpus.stream(n * context, generator).view(n, 4 * context)
    asks = torch.tensor([corpus.encode(s + r) for s, r in corpus.facts])
    answers = torch.tensor(corpus.encode("".join(corpus.facts.values())))
    return torch.cat([prefix, asks], dim=1), answers


@torch.no_grad()
def fact_recall(model: TinyGPT, corpus: FactsCorpus, context: int = 2, seed: int = 0) -> float:
    """Fraction of facts whose object is the model's most likely next token."""
    prompts, answers = fact_queries(corpus, context, seed)
    with evaluating(model):
        logits = model(prompts.to(model.tok.weight.device))[:, -1]
    return (logits.argmax(-1).cpu() == answers).float().mean().item()


@torch.no_grad()
def member_recalls(stack: TinyGPTStack, corpus: FactsCorpus, context: int = 2, seed: int = 0
                   ) -> torch.Tensor:
    """``fact_recall`` of every member of a stack, [members]."""
    prompts, answers = fact_queries(corpus, context, seed)
    logits = stack(prompts.expand(len(stack), *prompts.shape))[:, :, -1]
    return (logits.argmax(-1) == answers).float().mean(dim=-1)


FACTS_BATCH = 32  # 第 7 章每步的批大小


def facts_gpt_config(corpus: FactsCorpus, d_ff: int | None = None, n_layers: int = 1,
                     norm_position: str = "pre", init: str = "gpt2",
                     d_model: int = 32) -> GPTConfig:
    """Chapter 7's model for ``corpus``: GPT-2's block (tanh GELU) with 4 heads, a context of
    4 sentences, fused kernels."""
    block = BlockConfig(d_model=d_model, n_heads=4, d_ff=d_ff, activation="gelu_tanh",
                        norm_position=norm_position, fused=True)
    return GPTConfig(vocab_size=len(corpus.vocab), block_size=16, n_layers=n_layers,
                     block=block, init=init)


@dataclass(frozen=True)
class FactsRuns:
    """Facts models of one shape, one per seed, trained side by side."""

    models: list[TinyGPT]
    losses: torch.Tensor  # [seeds, steps]
    recall: torch.Tensor  # [seeds, checkpoints]: recall after every ``every`` steps
    every: int

    @property
    def steps(self) -> list[int]:
        """The training steps at which ``recall`` was measured."""
        return [self.every * (k + 1) for k in range(self.recall.shape[1])]


def train_facts_models(corpus: FactsCorpus, seeds: Sequence[int], d_ff: int | None = None,
                       d_model: int = 32, steps: int = 500, lr: float = 3e-3, every: int = 50,
                       progress: Progress | None = None,
                       config: GPTConfig | None = None) -> FactsRuns:
    """Train one ``facts_gpt_config`` model per seed (weights and batches from that seed) as
    one ``TinyGPTStack``, measuring every member's fact recall after every ``every`` steps.
    ``config`` replaces ``facts_gpt_config(corpus, d_ff, d_model)`` (chapter 9 trains other
    attention variants this way)."""
    check_positive_int("every", every)
    if not seeds:
        raise ValueError("seeds 不能为空：至少要有 1 个随机种子")
    config = config or facts_gpt_config(corpus, d_ff=d_ff, d_model=d_model)
    members = []
    for seed in seeds:
        with seeded(seed):
            members.append(TinyGPT(config))
    stack = TinyGPTStack(members)
    recalls: list[torch.Tensor] = []

    def measured(step_range: Iterable[int]) -> Iterator[int]:
        for step in (progress or iter)(step_range):
            yield step                                   # 这一步训练完，才回到这里
            if (step + 1) % every == 0:
                recalls.append(member_recalls(stack, corpus))

    losses = train_lm(stack, corpus, steps, lr, batch_size=FACTS_BATCH, seed=list(seeds),
                      progress=measured)
    recall = torch.stack(recalls, dim=1) if recalls else torch.empty(len(seeds), 0)
    return FactsRuns([stack.member(i) for i in range(len(seeds))], losses, recall, every)


@torch.no_grad()
def ffn_activations(model: TinyGPT, idx: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """act(x·W1 + b1) of block ``layer``'s FFN for every position: [..., T, d_ff]."""
    if not 0 <= layer < len(model.blocks) or model.blocks[layer].mlp is None:
        raise ValueError(
            f"layer 应指向一个带 FFN 的块（0..{len(model.blocks) - 1}），实际为 {layer}")
    mlp = model.blocks[layer].mlp
    with evaluating(model), recorded(mlp, which="input") as inputs:
        model(idx)
    return mlp.hidden(inputs[0])


@dataclass(frozen=True)
class NeuronMemory:
    """One FFN neuron read as a key-value memory (Geva et al. 2021)."""

    neuron: int
    keys: list[str]  # the prompts that activate it most
    key_answers: str  # the objects those prompts ask for
    values: str  # the tokens its output vector promotes most, through the unembedding


@torch.no_grad()
def key_value_probe(model: TinyGPT, corpus: FactsCorpus, layer: int = 0, top: int = 5
                    ) -> list[NeuronMemory]:
    """For every neuron of one FFN: its top fact prompts ("猫吃") and its top value tokens."""
    prompts, answers = fact_queries(corpus, context=0)
    device = model.tok.weight.device
    acts = ffn_activations(model, prompts.to(device), layer).cpu()[:, -1]  # [n_facts, d_ff]
    mlp = model.blocks[layer].mlp
    value_logits = (mlp.w2.weight.T @ model.tok.weight.T).cpu()  # [d_ff, vocab]：值向量读出的分数
    memories = []
    for i in range(acts.shape[1]):
        best = acts[:, i].topk(top).indices
        memories.append(NeuronMemory(
            neuron=i,
            keys=[corpus.decode(prompts[j].tolist()) for j in best],
            key_answers=corpus.decode(answers[best].tolist()),
            values=corpus.decode(value_logits[i].topk(top).indices.tolist()),
        ))
    return memories


def value_hits(memories: Sequence[NeuronMemory], pairing: Sequence[int] | None = None) -> float:
    """Share of neurons whose top prompt's answer is among the tokens its value vector
    promotes; ``pairing`` gives neuron i the value of neuron ``pairing[i]`` (a chance baseline)."""
    values = [memories[j].values for j in pairing] if pairing is not None else \
        [m.values for m in memories]
    if len(values) != len(memories):
        raise ValueError(f"pairing 应有 {len(memories)} 个下标，实际为 {len(values)}")
    return sum(m.key_answers[0] in v for m, v in zip(memories, values)) / len(memories)


def greedy_cycle(model: TinyGPT, prompt: list[int], n_new: int
                 ) -> tuple[list[int], int | None, int | None]:
    """Greedy continuation of ``prompt`` by ``n_new`` tokens, and where it starts repeating
    itself token for token: (tokens, the 1-based token where the cycle starts, its period), or
    (tokens, None, None). Greedy decoding is a function of the last block_size tokens, so once
    such a window comes back, everything after it repeats."""
    ids = model.generate(prompt, n_new, top_k=1)
    window = model.config.block_size
    seen: dict[tuple[int, ...], int] = {}
    for end in range(window, len(ids) + 1):
        key = tuple(ids[end - window:end])
        if key in seen:
            period = end - seen[key]
            start = next(i for i in range(period, len(ids))          # 从这里起逐字重复
                         if all(ids[j] == ids[j - period] for j in range(i, len(ids))))
            return ids, start - period + 1, period
        seen[key] = end
    return ids, None, None


# ---- attention in the trained model: which head carries the subject, and what ablation shows ----
# A fact query ends with "subject relation" (猫吃); the answer is predicted at the relation's
# position, which must fetch the subject from the position before it. Switching a head off
# replaces its slice of the input of W_O by zeros (zero ablation) or by its mean over the fact
# queries (mean ablation); the FFN is switched off the same way, for comparison.


def _block(model: TinyGPT, layer: int):
    if not 0 <= layer < len(model.blocks):
        raise ValueError(f"layer 应在 0..{len(model.blocks) - 1} 之间，实际为 {layer}")
    return model.blocks[layer]


@torch.no_grad()
def attention_maps(model: TinyGPT, idx: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """The attention matrices of block ``layer`` for tokens ``idx``: [..., n_heads, T, T]."""
    attn = _block(model, layer).attn
    with evaluating(model), recorded(attn, which="input") as inputs:
        model(idx)
    return attn.weights(inputs[0])


def previous_token_weight(maps: torch.Tensor, positions: Sequence[int] | None = None
                          ) -> torch.Tensor:
    """Mean weight each head gives to the previous token, over the query ``positions`` (each
    ≥ 1; default 1..T−1) and the batch: maps [..., n_heads, T, T] → [n_heads]."""
    if maps.dim() < 3 or maps.shape[-1] != maps.shape[-2] or maps.shape[-1] < 2:
        raise ValueError(f"maps 的形状应为 [..., n_heads, T, T]、T ≥ 2，实际为 {list(maps.shape)}")
    T = maps.shape[-1]
    positions = list(range(1, T)) if positions is None else list(positions)
    if not positions or not all(1 <= t < T for t in positions):
        raise ValueError(f"positions 应非空且在 1..{T - 1} 之间，实际为 {positions}")
    prev = maps.diagonal(offset=-1, dim1=-2, dim2=-1)     # [..., n_heads, T − 1]：位置 t 给 t − 1
    prev = prev[..., [t - 1 for t in positions]]
    return prev.reshape(-1, maps.shape[-3], len(positions)).mean(dim=(0, 2))


@contextmanager
def heads_off(model: TinyGPT, heads: Sequence[int], layer: int = 0,
              fill: torch.Tensor | None = None) -> Iterator[TinyGPT]:
    """Inside the ``with`` block the given heads of block ``layer`` are switched off: their
    slices of the input of W_O become 0, or the matching slices of ``fill`` ([T, d_model],
    e.g. their mean over many inputs). Afterwards the model is as before."""
    attn = _block(model, layer).attn
    d_head = attn.d_model // attn.n_heads
    bad = [h for h in heads if not (isinstance(h, int) and 0 <= h < attn.n_heads)]
    if bad:
        raise ValueError(f"头的编号应在 0..{attn.n_heads - 1} 之间，实际有 {bad}")

    def replace(_module, args):
        merged = args[0].clone()
        for h in heads:
            part = slice(h * d_head, (h + 1) * d_head)
            merged[..., part] = 0 if fill is None else fill[:merged.shape[-2], part]
        return (merged,)

    handle = attn.proj.register_forward_pre_hook(replace)
    try:
        yield model
    finally:
        handle.remove()


@contextmanager
def ffn_off(model: TinyGPT, layer: int = 0, fill: torch.Tensor | None = None
            ) -> Iterator[TinyGPT]:
    """Inside the ``with`` block the FFN of block ``layer`` outputs zeros, or ``fill``
    ([d_model], e.g. its mean output) at every position."""
    mlp = _block(model, layer).mlp
    if mlp is None:
        raise ValueError(f"第 {layer} 块没有 FFN（d_ff = 0）")
    handle = mlp.register_forward_hook(
        lambda _m, _args, out: torch.zeros_like(out) if fill is None else fill.expand_as(out))
    try:
        yield model
    finally:
        handle.remove()


ROLES = ("subject", "relation", "object", "period")  # 一句“猫吃桃。”里四个位置的角色


def role_of(t: int) -> str:
    """The role of position t in a fact prompt: sentences of four characters from position 0."""
    return ROLES[t % 4]


@torch.no_grad()
def swapped_subject_weight(model: TinyGPT, corpus: FactsCorpus, head: int, context: int = 2,
                           layer: int = 0) -> float:
    """The weight ``head`` gives to the previous token at the question's relation when the
    question's subject is replaced by an object character ("……。桃吃", never seen in training):
    does the head look at the previous token, or at the subject?"""
    prompts, _ = fact_queries(corpus, context)
    objects = torch.tensor(corpus.encode("".join(sorted(set(corpus.facts.values())))))
    swapped = prompts.clone()
    swapped[:, -2] = objects[torch.arange(len(prompts)) % len(objects)]
    maps = attention_maps(model, swapped.to(model.tok.weight.device), layer)
    return maps[:, head, -1, -2].mean().item()


@dataclass(frozen=True)
class HeadAblation:
    """One trained model: where its heads look, and the recall without each of them."""

    subject_weight: torch.Tensor  # [n_heads]: mean weight from the last position to the subject
    previous: torch.Tensor  # [n_heads, T − 2]: mean weight on the previous token at the
    #                         query positions 1 … T − 2 (their roles: role_of; the last
    #                         position, the question's relation, is subject_weight)
    recall: float  # all heads on
    without_head: torch.Tensor  # [n_heads]: recall with that one head zeroed
    without_subject_heads: float  # every head whose subject weight > threshold zeroed
    without_other_heads: float  # every other head zeroed
    mean_subject_heads: float  # the subject heads replaced by their mean (mean ablation)
    without_ffn: float
    mean_ffn: float  # the FFN's output replaced by its mean at each position (mean ablation)
    threshold: float

    @property
    def subject_heads(self) -> list[int]:
        return [h for h, w in enumerate(self.subject_weight.tolist()) if w > self.threshold]

    @property
    def top_head(self) -> int:
        """The head that looks at the subject most."""
        return int(self.subject_weight.argmax())

    @property
    def lost(self) -> torch.Tensor:
        """Recall lost with each head off, [n_heads]."""
        return self.recall - self.without_head


@torch.no_grad()
def head_ablation(model: TinyGPT, corpus: FactsCorpus, threshold: float = 0.5,
                  context: int = 2, layer: int = 0) -> HeadAblation:
    """Attention weights on the subject (and on the previous token at each other position)
    and fact recall with heads (or the FFN) switched off, on
    ``fact_queries(corpus, context)`` (``context`` ≥ 1 sentences before the question)."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold 应在 (0, 1) 之间，实际为 {threshold}")
    check_positive_int("context", context)
    prompts, _ = fact_queries(corpus, context)
    prompts = prompts.to(model.tok.weight.device)
    weights = attention_maps(model, prompts, layer)
    subject = weights[:, :, -1, -2].mean(0).cpu()          # 最后一个位置 → 主语（倒数第二个）
    T = weights.shape[-1]
    previous = torch.stack([previous_token_weight(weights, [t]) for t in range(1, T - 1)],
                           dim=1).cpu()
    n_heads = subject.numel()
    proj = _block(model, layer).attn.proj
    with evaluating(model), recorded(proj, which="input") as merged:
        model(prompts)
    mean_fill = merged[0].mean(0)                          # [T, d_model]：各位置上的平均

    def recall_with(heads: Sequence[int], fill: torch.Tensor | None = None) -> float:
        with heads_off(model, list(heads), layer, fill):
            return fact_recall(model, corpus, context)

    carriers = [h for h in range(n_heads) if subject[h] > threshold]
    others = [h for h in range(n_heads) if h not in carriers]
    without_ffn = mean_ffn = float("nan")
    if _block(model, layer).mlp is not None:
        with ffn_off(model, layer):
            without_ffn = fact_recall(model, corpus, context)
        with evaluating(model), recorded(_block(model, layer).mlp) as out:
            model(prompts)
        with ffn_off(model, layer, out[0].mean(0)):          # [T, d_model]：各位置上的平均
            mean_ffn = fact_recall(model, corpus, context)
    return HeadAblation(
        subject_weight=subject, previous=previous,
        recall=fact_recall(model, corpus, context),
        without_head=torch.tensor([recall_with([h]) for h in range(n_heads)]),
        without_subject_heads=recall_with(carriers), without_other_heads=recall_with(others),
        mean_subject_heads=recall_with(carriers, mean_fill),
        without_ffn=without_ffn, mean_ffn=mean_ffn, threshold=threshold)
