"""Chapter 7's experiments: tiny GPTs that learn a table of facts (recall against training
steps, for several FFN widths), and the FFN read as a key-value memory (Geva et al. 2021)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
                       progress: Progress | None = None) -> FactsRuns:
    """Train one ``facts_gpt_config`` model per seed (weights and batches from that seed) as
    one ``TinyGPTStack``, measuring every member's fact recall after every ``every`` steps."""
    check_positive_int("every", every)
    if not seeds:
        raise ValueError("seeds 不能为空：至少要有 1 个随机种子")
    config = facts_gpt_config(corpus, d_ff=d_ff, d_model=d_model)
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
