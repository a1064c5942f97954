"""Chapter 7's experiments: a tiny GPT that learns a table of facts, and its FFN read as a
key-value memory (Geva et al. 2021)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from onelayer.block import BlockConfig
from onelayer.data import FactsCorpus
from onelayer.model import GPTConfig, TinyGPT
from onelayer.probes import evaluating, recorded


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
