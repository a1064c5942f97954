"""Worked-example tensors, in one place for the chapters and the tests.

Functions return fresh tensors, so a notebook that edits one cannot change another's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch

from onelayer.checks import check_positive_int
from onelayer.ffn import FeedForward

# 猫吃鱼 (seed article 003): three tokens, d_model = 4, values after attention + LayerNorm.
TOKENS = ("猫", "吃", "鱼")


def sentence_x() -> torch.Tensor:
    """X for 猫/吃/鱼, shape [3, 4] (one row per token)."""
    return torch.tensor(
        [
            [0.9, -0.3, 0.1, -0.7],  # 猫
            [-0.4, 1.0, -0.6, 0.2],  # 吃
            [0.6, -0.5, 0.8, -0.4],  # 鱼
        ]
    )


def shown_w1_columns() -> torch.Tensor:
    """The four columns of W1 the article shows, shape [4, 4] = [d_model, 4 detectors]."""
    return torch.tensor(
        [
            [0.5, -1.0, 0.3, -0.6],
            [0.5, 1.0, -0.2, -0.6],
            [0.5, -1.0, 0.4, 0.6],
            [0.5, 1.0, -0.1, 0.6],
        ]
    )


def sentence_ffn(activation: str = "gelu", d_ff: int = 16, seed: int = 0) -> FeedForward:
    """The full 猫吃鱼 FFN: seeded W1/W2 whose first four detectors are the shown columns.

    b1 is zero, as in the article's hand calculation, so ``x_鱼·W1`` starts with
    ``[0.25, -2.30, 0.64, 0.18]``.
    """
    generator = torch.Generator().manual_seed(seed)
    ffn = FeedForward(4, d_ff, activation=activation)
    with torch.no_grad():
        for p in ffn.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        ffn.w1.weight[:4] = shown_w1_columns().T  # nn.Linear stores W1 transposed
        ffn.w1.bias.zero_()
    return ffn


@dataclass(frozen=True)
class TinyExample:
    """Seed article 004's smallest FFN: d_model = 2, d_ff = 3, one output."""

    x: torch.Tensor
    w1: torch.Tensor
    b1: torch.Tensor
    w2: torch.Tensor
    b2: torch.Tensor


def tiny_example() -> TinyExample:
    """x = [1, 2], W1 [2, 3], b1 = [0, 0, 1], W2 = [1, -1, 2]ᵀ, b2 = 0.5."""
    return TinyExample(
        x=torch.tensor([1.0, 2.0]),
        w1=torch.tensor([[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]),
        b1=torch.tensor([0.0, 0.0, 1.0]),
        w2=torch.tensor([[1.0], [-1.0], [2.0]]),
        b2=torch.tensor([0.5]),
    )


# 两条交错的螺旋线（第 3、4 章）：一条直线分不开的二维分类任务。第 3 章里 2 到 8 块的
# 网络就能在 150 步内把它分开；难的是加深以后还训练得动。
def two_spirals(
    n: int = 160, turns: float = 1.5, noise: float = 0.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two interleaved spirals in the plane: x [n, 2] in about [-2, 2]², labels y [n] in {0, 1}.

    Point i belongs to spiral i % 2; the second spiral is the first rotated by 180°.
    """
    check_positive_int("n", n)
    generator = torch.Generator().manual_seed(seed)
    span = turns * 2 * math.pi
    t = torch.rand(n, generator=generator) * span + 0.3  # 角度；从 0.3 起，避开原点
    y = (torch.arange(n) % 2).float()
    angle = t + math.pi * y
    radius = 2 * t / (span + 0.3)
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    x = x + noise * torch.randn(x.shape, generator=generator)
    return x, y


# 合成的“事实”语料（第 5、8 章）：主语 + 关系 + 宾语 + 句号，例如“猫吃桃。”。
# 宾语是随机指定的，所以一条事实只能靠记住它来答对。
SUBJECTS = "猫狗牛羊马猪鸡鸭兔鼠虎狼熊鹿龟蛇鹅鹰蛙鱼蜂蚁猴象狐豹鸽鹤虾蟹蚕雀"
RELATIONS = "吃爱怕找追看咬养"
OBJECTS = "米草肉虫豆菜瓜桃梨花叶蛋奶糖面果茶饼枣栗葱姜蒜笋"
END = "。"


@dataclass(frozen=True)
class FactsCorpus:
    """A table of random facts {(subject, relation): object} and its character vocabulary."""

    facts: dict[tuple[str, str], str]
    vocab: str

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - set(self.vocab))
        if unknown:
            raise ValueError(f"字符应在词表 {self.vocab!r} 里，实际有 {unknown}")
        return [self.vocab.index(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        if any(not 0 <= i < len(self.vocab) for i in ids):
            raise ValueError(f"词元编号应在 [0, {len(self.vocab)}) 内，实际为 {list(ids)[:8]}")
        return "".join(self.vocab[i] for i in ids)

    def sentences(self) -> list[str]:
        return [s + r + o + END for (s, r), o in self.facts.items()]

    @cached_property
    def table(self) -> torch.Tensor:
        """Token ids of every fact's sentence, [n_facts, 4] (encoded once: batches index it)."""
        return torch.tensor([self.encode(s) for s in self.sentences()])

    def stream(self, n_sentences: int, generator: torch.Generator) -> torch.Tensor:
        """Token ids of ``n_sentences`` facts drawn at random (with replacement), end to end."""
        pick = torch.randint(len(self.table), (n_sentences,), generator=generator)
        return self.table[pick].flatten()

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs x and next-token targets y, each [batch_size, seq_len]."""
        check_positive_int("batch_size", batch_size)
        check_positive_int("seq_len", seq_len)
        per_row = seq_len // len(self.sentences()[0]) + 1
        rows = self.stream(batch_size * per_row, generator).view(batch_size, -1)
        return rows[:, :seq_len], rows[:, 1:seq_len + 1]

    def unigram_loss(self) -> float:
        """Cross-entropy (nats per token) of predicting every token from its frequency alone."""
        counts = torch.tensor([float("".join(self.sentences()).count(c)) for c in self.vocab])
        p = counts / counts.sum()
        return -(p * p.log()).sum().item()

    def structure_loss(self) -> float:
        """The loss of a model that knows the sentence structure but ignores the relation: at
        the object it guesses from how often each object occurs; elsewhere it is as good as
        possible."""
        objects = torch.tensor([self.vocab.index(o) for o in self.facts.values()]).bincount()
        p = objects[objects > 0] / len(self.facts)
        return self.best_loss() - (p * p.log()).sum().item() / 4

    def relation_loss(self) -> float:
        """The loss of a model that knows the structure and reads the relation but stores no
        fact: at the object it guesses from the objects of that relation, H(object | relation)."""
        by_relation: dict[str, list[str]] = {}
        for (_, relation), obj in self.facts.items():
            by_relation.setdefault(relation, []).append(obj)
        entropy = 0.0
        for objects in by_relation.values():
            p = torch.tensor([objects.count(o) for o in set(objects)]) / len(objects)
            entropy -= len(objects) / len(self.facts) * (p * p.log()).sum().item()
        return self.best_loss() + entropy / 4

    def best_loss(self) -> float:
        """The lowest reachable loss: subjects and relations are random, objects and 。 are not."""
        n_subjects = len({s for s, _ in self.facts})
        n_relations = len({r for _, r in self.facts})
        return (math.log(n_subjects) + math.log(n_relations)) / 4


def facts_corpus(n_subjects: int = 16, n_relations: int = 4, seed: int = 0) -> FactsCorpus:
    """Every subject gets one random object per relation: n_subjects × n_relations facts."""
    if not 1 <= n_subjects <= len(SUBJECTS) or not 1 <= n_relations <= len(RELATIONS):
        raise ValueError(f"n_subjects 应在 1..{len(SUBJECTS)}、n_relations 应在 "
                         f"1..{len(RELATIONS)} 之间，实际为 {n_subjects}、{n_relations}")
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(len(OBJECTS), (n_subjects, n_relations), generator=generator)
    facts = {(s, r): OBJECTS[picks[i, j]]
             for i, s in enumerate(SUBJECTS[:n_subjects])
             for j, r in enumerate(RELATIONS[:n_relations])}
    vocab = "".join(sorted(set("".join(facts.values())) | set(SUBJECTS[:n_subjects])
                           | set(RELATIONS[:n_relations]) | {END}))
    return FactsCorpus(facts, vocab)
