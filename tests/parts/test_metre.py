"""Tones, rhyme groups and the 格律 rates (onelayer.metre), on characters whose 平水韵 groups
every rhyme book agrees on, and on made-up ci."""

import hashlib
import unicodedata

import pytest

from onelayer import metre

PATTERN = (7, 7, 7, 7, 7, 7)
# 晏殊《浣溪沙》: 杯 台 回 来 徊 all in 上平声十灰; line 4 (无可奈何花落去) has no rhyme.
YAN_SHU = ("一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回？"
           "无可奈何花落去，似曾相识燕归来。小园香径独徘徊。")


def test_the_table_is_the_pinned_one():
    data = metre.TABLE_PATH.read_bytes()
    assert hashlib.sha256(data).hexdigest() == metre.TABLE_SHA256
    table = metre.rhyme_table()
    assert len(table) > 10_000
    groups = {g for gs in table.values() for g in gs}
    assert len(groups) == 106                      # 平水韵：30 平 + 29 上 + 30 去 + 17 入
    assert all(len(c) == 1 and unicodedata.name(c).startswith("CJK") for c in table)


@pytest.mark.parametrize(("char", "expected"), [
    ("东", "平"), ("风", "平"), ("杯", "平"), ("来", "平"),
    ("酒", "仄"), ("去", "仄"), ("落", "仄"), ("月", "仄"),    # 上、去、入都是仄
    ("看", "中"), ("思", "中"),                              # 平仄两读：不猜
])
def test_tone_reads_the_table_and_keeps_two_readings_ambiguous(char, expected):
    assert metre.tone(char) == expected


def test_tone_of_a_character_not_in_the_table_is_none():
    assert metre.tone("□") is None
    assert metre.rhymes("□", "杯", "平") is None


def test_simplified_characters_are_found():
    assert metre.rhyme_groups("东") == {"上平声一东"}   # 表里原是“東”
    assert "下平声一先" in metre.rhyme_groups("边")     # 邊


def test_yan_shus_rhymes_and_the_cilin_book_is_looser():
    ends = [line[-1] for line in metre.ci_lines(YAN_SHU)]
    assert ends == list("杯台回去来徊")
    assert all(metre.rhymes("杯", c, "平") for c in "台回来徊")
    assert not metre.rhymes("杯", "去", "平")
    assert metre.rhymes("东", "冬", "平") is False               # 平水韵分开
    assert metre.rhymes("东", "冬", "平", "词林正韵") is True     # 词林正韵第一部
    assert metre.rhymes("酒", "旧", "仄", "词林正韵") is True     # 上去通押：有、宥同在第十二部
    assert metre.rhymes("东", "动", "平", "词林正韵") is False    # 平仄不通押
    assert metre.rhymes("东", "动", "仄", "词林正韵") is False


def test_a_rhyme_never_crosses_tones():
    # 多音字的另一个声调不算：中（一东/一送）、看（十四寒/十五翰）、回（十灰/十一队）
    for anchor, ping, ze in [("中", "东", "送"), ("看", "寒", "乱"), ("回", "灰", "对")]:
        assert metre.rhymes(anchor, ping, "平") and not metre.rhymes(anchor, ze, "平")
        assert metre.rhymes(anchor, ze, "仄") and not metre.rhymes(anchor, ping, "仄")
        assert metre.rhyme_groups(anchor, tone="平") == metre.rhyme_groups(ping)
    assert metre.rhymes("中", "送", "平", "词林正韵") is False
    assert metre.rhymes("送", "送", "平") is False        # 送只有去声：平韵处什么也押不上


# 李清照《如梦令》，仄韵：骤、旧、瘦在去声二十六宥，酒在上声二十五有；人不入韵
RU_MENG = "昨夜雨疏风骤，浓睡不消残酒。试问卷帘人，却道海棠依旧。知否，知否，应是绿肥红瘦。"
RU_MENG_PATTERN = (6, 6, 5, 6, 2, 2, 6)


def test_a_ze_rhymed_tune_rhymes_in_ze_and_the_cilin_book_joins_shang_and_qu():
    grid = metre.tone_grid([RU_MENG], RU_MENG_PATTERN)
    assert [grid.end_tone(i) for i in range(7)] == list("仄仄平仄仄仄仄")
    assert metre.line_rhymes([RU_MENG], grid) == [None, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert metre.line_rhymes([RU_MENG], grid, "词林正韵") == [None, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert metre.rhyme_slots([RU_MENG], grid, "词林正韵") == [1, 3, 4, 5, 6]


def test_every_pingshui_group_has_a_cilin_class_and_rhymes_stay_rhymes():
    table = metre.rhyme_table()
    for groups in table.values():
        for group in groups:
            assert metre._cilin_classes(group)
    for a, b in [("杯", "台"), ("天", "年"), ("花", "家")]:
        assert metre.rhymes(a, b, "平") and metre.rhymes(a, b, "平", "词林正韵")
    assert not metre.rhymes("月", "雪", "仄")                   # 入声六月、九屑
    assert metre.rhymes("月", "雪", "仄", "词林正韵")            # 同在第十八部
    assert not metre.rhymes("月", "雪", "平", "词林正韵")       # 入声字没有平声的读音


def test_ci_lines_split_at_the_breaks_and_at_a_restarted_title():
    assert [len(x) for x in metre.ci_lines(YAN_SHU)] == [7] * 6
    assert metre.ci_lines("宝紫海无帐与：") == ["宝紫海无帐与"]
    assert metre.length_ok(YAN_SHU, PATTERN)
    assert not metre.length_ok(YAN_SHU.replace("小园", "浣溪沙：小园"), PATTERN)


def test_tone_grid_rhyme_slots_and_rates_on_made_up_ci():
    other = "春风又绿江南岸，明月何时照我还。" * 3       # 仄起，岸/还 不同韵
    texts = [YAN_SHU] * 9 + [other[:48]]
    grid = metre.tone_grid(texts, PATTERN)
    assert grid.majority[0] == ("仄", "仄", "平", "平", "仄", "仄", "平")   # 一曲新词酒一杯
    assert grid.agreement[0][6] == 0.9 and grid.counted[0][6] == 10     # 岸是仄
    assert (0, 6) in grid.fixed()
    yan_grid = metre.tone_grid([YAN_SHU], PATTERN)
    assert metre.rhyme_slots([YAN_SHU], yan_grid) == [1, 2, 4, 5]
    assert metre.rhyme_rate([YAN_SHU], yan_grid, [1, 2, 4, 5]) == 1.0
    assert metre.tone_rate([YAN_SHU], grid) == 1.0
    # 偶然：一首的首句末字配另一首的韵脚；两首同样的词全押韵，与不押韵的一首配就不押
    assert metre.rhyme_chance([YAN_SHU, YAN_SHU], yan_grid, [1, 2, 4, 5]) == 1.0
    mixed = [YAN_SHU, "春风又绿江南岸，明月何时照我处。" * 3]
    assert metre.rhyme_chance([t[:48] for t in mixed], yan_grid, [1]) == 0.0


def test_tone_and_rhyme_count_every_line_of_its_pattern_length():
    grid = metre.tone_grid([YAN_SHU], PATTERN)
    broken = YAN_SHU.replace("去年天气旧亭台", "去年天气亭台")   # 第 2 句少一个字
    assert not metre.length_ok(broken, PATTERN)
    assert metre.tone_rate([broken], grid) == 1.0               # 其余五句照样计入
    assert metre.rhyme_rate([broken], grid, [1, 2, 4, 5]) == 1.0
    wrong = YAN_SHU.replace("夕阳西下几时回", "夕阳西下几时去")
    assert metre.rhyme_rate([wrong], grid, [1, 2, 4, 5]) == 3 / 4
    assert metre.tone_rate(["一二三"], grid) is None


@pytest.mark.parametrize(("call", "message"), [
    (lambda: metre.tone("东风"), "应为一个字"),
    (lambda: metre.tone(3), "应为一个字"),
    (lambda: metre.rhyme_groups("东", "中原音韵"), "book 应为"),
    (lambda: metre.group_tone("一东"), "group 应为平水韵的韵部名"),
    (lambda: metre.tone_grid([], PATTERN), "texts 不能为空"),
    (lambda: metre.tone_grid(["春风"], PATTERN), "没有句长为 7·7·7·7·7·7 的词"),
    (lambda: metre.rhyme_rate([], metre.tone_grid([YAN_SHU], PATTERN), [1]), "texts 不能为空"),
    (lambda: metre.rhymes("东", "冬", "平水韵"), "tone 应为"),
    (lambda: metre.rhyme_groups("东", tone="上"), "tone 应为"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
