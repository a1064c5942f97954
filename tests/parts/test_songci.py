"""The 宋词 corpus (onelayer.songci), derived from the pinned package by tools/songci.py."""

import hashlib
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

from onelayer.songci import (
    LOST,
    SONGCI_PATH,
    Ci,
    ci_text,
    line_lengths,
    load_songci,
    pattern_counts,
    split_by_ci,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "songci.py"
needs_corpus = pytest.mark.skipif(not SONGCI_PATH.is_file(),
                                  reason=f"没有 {SONGCI_PATH}（运行 make songci 生成它）")


@pytest.fixture(scope="module")
def corpus() -> list[Ci]:
    return load_songci()


def load_script():
    spec = importlib.util.spec_from_file_location("songci_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toy_cis(n: int = 200) -> list[Ci]:
    return [Ci("浣溪沙", f"作者{i}", (f"第{i}句春风，", "又一句。")) for i in range(n)]


def test_ci_text_puts_a_separator_the_texts_never_use_between_tune_and_text():
    ci = Ci("如梦令", "李清照", ("昨夜雨疏风骤。", "浓睡不消残酒。"))
    assert ci_text(ci) == "如梦令：昨夜雨疏风骤。浓睡不消残酒。"


def test_line_lengths_split_at_every_pause_mark():
    ci = Ci("满江红", "无名氏", ("怒发冲冠，凭栏处、潇潇雨歇。", "问□何处？", "归去！来兮；"))
    assert line_lengths(ci) == (4, 3, 4, 4, 2, 2)  # □ stands for a lost character: it counts


def test_pattern_counts_counts_one_tunes_patterns():
    cis = [Ci("菩萨蛮", "甲", ("一二三，四五。",)), Ci("菩萨蛮", "乙", ("一二三，四五。",)),
           Ci("菩萨蛮", "丙", ("一二三四五。",)), Ci("浣溪沙", "丁", ("一。",))]
    assert pattern_counts(cis, "菩萨蛮") == Counter({(3, 2): 2, (5,): 1})
    with pytest.raises(ValueError, match=r"共 2 个.*实际为 '西江月'"):
        pattern_counts(cis, "西江月")


def test_split_is_deterministic_disjoint_and_keeps_each_ci_whole():
    cis = toy_cis()
    train, valid = split_by_ci(cis, valid_share=0.2, seed=1)
    assert split_by_ci(cis, 0.2, seed=1) == (train, valid)
    assert split_by_ci(cis[::-1], 0.2, seed=1) == (train[::-1], valid[::-1])  # order is irrelevant
    assert sorted(train + valid, key=cis.index) == cis and not set(train) & set(valid)
    assert 20 <= len(valid) <= 60  # about 20 % of 200
    assert split_by_ci(cis, 0.2, seed=2) != (train, valid)
    copy = Ci("菩萨蛮", "另一位", valid[0].paragraphs)  # one text under another tune and author
    assert split_by_ci([copy], 0.2, seed=1) == ([], [copy])


def test_bad_arguments_name_expected_and_actual():
    with pytest.raises(ValueError, match=r"valid_share 应在 \(0, 1\) 之间，实际为 1"):
        split_by_ci(toy_cis(), valid_share=1)
    with pytest.raises(ValueError, match="seed 应为非负整数，实际为 -1"):
        split_by_ci(toy_cis(), seed=-1)
    with pytest.raises(ValueError, match="应为一首词（Ci），实际为 str"):
        line_lengths("浣溪沙：一曲新词酒一杯。")
    with pytest.raises(ValueError, match="实际为 dict"):
        split_by_ci([{"rhythmic": "浣溪沙"}])


def test_a_missing_corpus_names_the_command_that_makes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="make songci"):
        load_songci(tmp_path / "songci.jsonl")


def test_load_reads_one_ci_a_line(tmp_path):
    path = tmp_path / "songci.jsonl"
    rows = [{"rhythmic": "长相思", "author": "林逋", "paragraphs": ["吴山青。", "越山青。"]}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows * 2), "utf-8")
    assert load_songci(path) == [Ci("长相思", "林逋", ("吴山青。", "越山青。"))] * 2


@needs_corpus
def test_the_corpus_file_is_the_pinned_one():
    digest = hashlib.sha256(SONGCI_PATH.read_bytes()).hexdigest()
    assert digest == load_script().SONGCI_SHA256, "重新运行 make songci"


@needs_corpus
def test_corpus_counts(corpus):
    text = "\n".join(ci_text(ci) for ci in corpus)  # one ci a line
    chars = Counter(text)
    assert (len(corpus), len(text), len(chars)) == (21053, 1825277, 6090)
    by_frequency = sorted(chars.values(), reverse=True)
    assert round(sum(by_frequency[:3000]) / len(text), 3) == 0.990
    assert round(sum(by_frequency[:4000]) / len(text), 3) == 0.997
    assert Counter(ci.rhythmic for ci in corpus).most_common(7) == [
        ("浣溪沙", 776), ("水调歌头", 743), ("鹧鸪天", 657), ("菩萨蛮", 598), ("满江红", 549),
        ("西江月", 490), ("临江仙", 482)]
    assert sum(LOST in ci_text(ci) for ci in corpus) == 881


@needs_corpus
def test_most_ci_of_a_short_tune_follow_one_pattern(corpus):
    patterns = pattern_counts(corpus, "菩萨蛮")
    assert patterns.most_common(1)[0] == ((7, 7, 5, 5, 5, 5, 5, 5), 590)
    assert sum(patterns.values()) == 598


@needs_corpus
def test_the_default_split_holds_about_a_tenth_of_the_ci(corpus):
    train, valid = split_by_ci(corpus)
    assert (len(train), len(valid)) == (18999, 2054)


@pytest.mark.slow
@needs_corpus
@needs_corpus
def test_a_cut_at_the_end_would_hold_mostly_anonymous_ci(corpus):
    # 第 10 章“常见误区”：全宋词大体按作者编排，最后一成多是无名氏的词，所以不在末尾切验证集
    tail = corpus[len(corpus) * 9 // 10:]
    assert sum(ci.author == "无名氏" for ci in tail) > len(tail) / 2


def test_the_script_derives_the_same_file_from_the_package(tmp_path):
    out = tmp_path / "songci.jsonl"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True, timeout=600)
    assert out.read_bytes() == SONGCI_PATH.read_bytes()


# --- the model's view: a character vocabulary and windows from the start of each ci ---------

from onelayer.songci import END, SEPARATOR, CharVocab, CiCorpus, char_vocab  # noqa: E402

TOY = [Ci("浣溪沙", "甲", ("一曲新词酒一杯，", "去年天气旧亭台。")),
       Ci("浣溪沙", "乙", ("一向年光有限身，", "等闲离别易销魂。"))]


def test_char_vocab_orders_by_count_adds_punctuation_and_ends_with_unknown():
    vocab = char_vocab([ci_text(ci) for ci in TOY], min_count=2)
    assert vocab.chars[0] == "一"                      # 出现最多的字
    assert set("浣溪沙年") <= set(vocab.chars) and "杯" not in vocab.chars
    for c in "，。？！、；" + SEPARATOR + END:
        assert c in vocab.chars
    assert vocab.chars.endswith(CharVocab.UNKNOWN) and vocab.chars.count(CharVocab.UNKNOWN) == 1
    assert vocab.decode(vocab.encode("一杯")) == "一□"   # 词表外的字读作 □


@pytest.mark.parametrize("chars, message", [("一一□", "不重复"), ("一二", "以 □ 结尾")])
def test_char_vocab_rejects_repeats_and_a_missing_unknown(chars, message):
    with pytest.raises(ValueError, match=message):
        CharVocab(chars)


def test_char_vocab_rejects_bad_counts_and_ids():
    with pytest.raises(ValueError, match="min_count 应为正整数"):
        char_vocab(["一"], min_count=0)
    with pytest.raises(ValueError, match=r"词元编号应在 \[0, 2\) 内"):
        CharVocab("一□").decode([2])


def test_ci_corpus_windows_start_at_a_ci_and_wrap_around():
    vocab = char_vocab([ci_text(ci) for ci in TOY])
    corpus = CiCorpus(TOY, vocab)
    assert len(corpus) == 2 and corpus.starts.tolist() == [0, len(ci_text(TOY[0])) + 1]
    assert corpus.lengths.tolist() == [len(ci_text(ci)) + 1 for ci in TOY]
    x, y = corpus.every_ci(seq_len=20)
    assert x.shape == y.shape == (2, 20)
    assert vocab.decode(x[1].tolist()).startswith("浣溪沙：一向")
    assert torch.equal(x[:, 1:], y[:, :-1])          # 目标是输入左移一位
    x, _ = corpus.every_ci(seq_len=26)                # 第二首读完，接着读第一首（绕回开头）
    assert vocab.decode(x[1].tolist()).endswith("。" + END + "浣溪沙：一")
    bx, by = corpus.batch(8, 12, torch.Generator().manual_seed(0))
    assert bx.shape == (8, 12) and set(bx[:, 0].tolist()) == {vocab.encode("浣")[0]}
    with pytest.raises(ValueError, match="cis 不能为空"):
        CiCorpus([], vocab)
    with pytest.raises(ValueError, match="seq_len"):
        corpus.every_ci(0)
