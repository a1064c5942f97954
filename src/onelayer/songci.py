"""The 宋词 corpus: 21,053 ci of the npm package chinese-poetry 2.0.1 (MIT licence), simplified
characters, one ci a line in ``data/songci.jsonl`` (``make songci`` derives it from the pinned
package; tools/songci.py).

A ci as the model reads it is ``词牌 + "：" + text``, e.g. ``浣溪沙：一曲新词酒一杯。……``.
The full-width colon never occurs in the texts, so it marks one thing only: the 词牌 has ended
and its text begins (a prompt ``浣溪沙：`` asks for a 浣溪沙). The corpus joins ci with "\\n".
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from onelayer.checks import check_positive_int
from onelayer.metre import LINE_BREAKS, SEPARATOR, ci_lines

SONGCI_PATH = Path(__file__).resolve().parents[2] / "data" / "songci.jsonl"
# A line ends at a comma, full stop, question or exclamation mark, semicolon, or at 、, which
# this edition puts at a 逗 (a pause inside a line, e.g. 满江红's 凭栏处、潇潇雨歇): the 词谱
# counts it as a break, and without it 满江红's 3 + 4 and a plain 7 would look the same.
LOST = "□"  # the edition's mark for a character lost from the text
END = "\n"  # ends each ci in a corpus: the model learns to stop


@dataclass(frozen=True)
class Ci:
    """One ci: its 词牌 (the tune pattern), its author, its lines as the edition prints them."""

    rhythmic: str
    author: str
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        """The lines joined; each already ends with its punctuation."""
        return "".join(self.paragraphs)


def load_songci(path: str | Path | None = None) -> list[Ci]:
    """Every ci of ``path`` (default ``SONGCI_PATH``), in the edition's order."""
    path = SONGCI_PATH if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"没有找到宋词语料 {path}：请在仓库根目录运行 make songci"
            "（下载固定版本的 npm 包 chinese-poetry@2.0.1，约 85 MB，只保留其中的宋词）"
        )
    with path.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [Ci(r["rhythmic"], r["author"], tuple(r["paragraphs"])) for r in rows]


def ci_text(ci: Ci) -> str:
    """词牌 + "：" + text: what a model reads for one ci."""
    ci = _check_ci(ci)
    return ci.rhythmic + SEPARATOR + ci.text


def split_by_ci(cis: Sequence[Ci], valid_share: float = 0.1,
                seed: int = 0) -> tuple[list[Ci], list[Ci]]:
    """(train, valid): each ci goes whole to one side, chosen by a hash of its text and ``seed``.

    About ``valid_share`` of the ci land in valid. A ci's side depends on nothing else, so the
    split is the same on every machine and in any order, and copies of one text (the edition
    has a few, some under two 词牌) always land together.
    """
    if isinstance(valid_share, bool) or not isinstance(valid_share, (int, float)) \
            or not 0 < valid_share < 1:
        raise ValueError(f"valid_share 应在 (0, 1) 之间，实际为 {valid_share!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed 应为非负整数，实际为 {seed!r}")
    train, valid = [], []
    for ci in cis:
        (valid if _unit_hash(_check_ci(ci).text, seed) < valid_share else train).append(ci)
    return train, valid


def _unit_hash(text: str, seed: int) -> float:
    """A number in [0, 1) fixed by ``text`` and ``seed``: sha256's first 8 bytes / 2⁶⁴."""
    digest = hashlib.sha256(f"{seed}\n{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def line_lengths(ci: Ci) -> tuple[int, ...]:
    """Characters per line (``onelayer.metre.ci_lines``: lines end at ``LINE_BREAKS``, and a
    "：" inside the text starts a new ci); □ counts: it was a character."""
    return tuple(len(line) for line in ci_lines(_check_ci(ci).text))


def pattern_counts(cis: Sequence[Ci], rhythmic: str) -> Counter[tuple[int, ...]]:
    """How many ci of one 词牌 follow each line-length pattern."""
    same = [ci for ci in cis if _check_ci(ci).rhythmic == rhythmic]
    if not same:
        tunes = {ci.rhythmic for ci in cis}
        raise ValueError(f"rhythmic 应为 cis 中出现的词牌（共 {len(tunes)} 个），"
                         f"实际为 {rhythmic!r}")
    return Counter(line_lengths(ci) for ci in same)


def _check_ci(ci: object) -> Ci:
    if not isinstance(ci, Ci):
        raise ValueError(f"应为一首词（Ci），实际为 {type(ci).__name__}：{ci!r:.40}")
    return ci


@dataclass(frozen=True)
class CharVocab:
    """A character vocabulary: token i is ``chars[i]``; a character outside it is read as
    ``UNKNOWN`` (the last token), so any text can be encoded."""

    chars: str

    UNKNOWN = "□"

    def __post_init__(self) -> None:
        if len(set(self.chars)) != len(self.chars) or not self.chars.endswith(self.UNKNOWN):
            raise ValueError(f"chars 应为不重复的字、以 {self.UNKNOWN} 结尾，实际为 "
                             f"{len(self.chars)} 个字，结尾 {self.chars[-1:]!r}")
        object.__setattr__(self, "_index", {c: i for i, c in enumerate(self.chars)})

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        unknown = self._index[self.UNKNOWN]
        return [self._index.get(c, unknown) for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        if any(not 0 <= i < len(self.chars) for i in ids):
            raise ValueError(f"词元编号应在 [0, {len(self.chars)}) 内，实际为 {list(ids)[:8]}…")
        return "".join(self.chars[i] for i in ids)


def char_vocab(texts: Sequence[str], min_count: int = 1) -> CharVocab:
    """Every character that occurs at least ``min_count`` times in ``texts`` (by frequency,
    ties in code-point order), then the punctuation, "：" and the line break that ends a ci if
    they are not in yet, then ``□`` for every other character."""
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count 应为正整数，实际为 {min_count!r}")
    counts = Counter("".join(texts))
    kept = sorted((c for c, n in counts.items() if n >= min_count and c != CharVocab.UNKNOWN),
                  key=lambda c: (-counts[c], c))
    always = [c for c in LINE_BREAKS + SEPARATOR + END if c not in kept]
    return CharVocab("".join(kept + always) + CharVocab.UNKNOWN)


class CiCorpus:
    """Ci end to end, each ``词牌：text`` followed by a line break, as token ids. A batch's
    windows start where a ci starts — so position t of a window is position t of a ci, as when
    the model writes one from its 词牌 — and wrap around at the end of the corpus.

    ``vocab`` is a ``CharVocab`` or any tokenizer with the same ``encode``, ``decode`` and
    ``len`` (chapter 10's BPE); each ci is encoded on its own."""

    def __init__(self, cis: Sequence[Ci], vocab: CharVocab) -> None:
        if not cis:
            raise ValueError("cis 不能为空：至少要有 1 首词")
        encoded = [vocab.encode(ci_text(ci) + END) for ci in cis]
        self.vocab = vocab
        self.ids = torch.tensor([i for ids in encoded for i in ids])
        self.lengths = torch.tensor([len(ids) for ids in encoded])  # 每首词的词元数（含换行）
        self.starts = torch.cumsum(self.lengths, 0) - self.lengths  # 每首词的第一个词元在哪里

    def __len__(self) -> int:
        return len(self.starts)

    def windows(self, starts: torch.Tensor, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs x and next-token targets y [len(starts), seq_len] read from ``starts``."""
        check_positive_int("seq_len", seq_len)
        index = (starts[:, None] + torch.arange(seq_len + 1)) % len(self.ids)
        rows = self.ids[index]
        return rows[:, :-1], rows[:, 1:]

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """``batch_size`` windows from the starts of ci drawn at random (with replacement)."""
        check_positive_int("batch_size", batch_size)
        pick = torch.randint(len(self.starts), (batch_size,), generator=generator)
        return self.windows(self.starts[pick], seq_len)

    def every_ci(self, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One window from the start of each ci, [len(self), seq_len]: the validation batch."""
        return self.windows(self.starts, seq_len)
