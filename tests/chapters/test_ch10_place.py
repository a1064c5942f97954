"""The rhyme study's arm "the place known" (onelayer.chapters.ch10_place): SongNet's symbols
read from a ci in training and from the form in writing, on a tiny model and hand-written ci."""

import pytest
import torch

from onelayer import metre
from onelayer.block import BlockConfig
from onelayer.chapters.ch10_place import (
    OUTSIDE,
    PlacedCorpus,
    PlacedGPT,
    form_place,
    form_places,
    sample_placed,
    text_places,
)
from onelayer.chapters.ch10_songci import Form
from onelayer.model import GPTConfig, TinyGPT
from onelayer.songci import Ci, CiCorpus, char_vocab, ci_text

YAN_SHU = ("一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回？"
           "无可奈何花落去，似曾相识燕归来。小园香径独徘徊。")
TEXT = "浣溪沙：" + YAN_SHU + "\n"
CIS = [Ci("浣溪沙", "晏殊", (YAN_SHU,)),
       Ci("浣溪沙", "无名", ("一二三四五六杯，七八九十百千台。",))]


def hand_form():
    pattern = (7,) * 6
    grid = metre.ToneGrid(pattern, (("平",) * 7,) * 6, ((0.5,) * 7,) * 6, ((3,) * 7,) * 6)
    return Form("浣溪沙", pattern, grid, (None, 1.0, 1.0, 0.0, 1.0, 1.0), (1, 2, 4, 5))


def test_a_ci_gives_each_character_its_countdown_and_its_rhyme_slot():
    places = text_places(TEXT, "词林正韵")
    assert places[:4] == [(OUTSIDE, 0)] * 4                                 # 词牌和冒号
    assert [places[TEXT.index(c)] for c in "一曲酒杯"] == [(6, 0), (5, 0), (2, 0), (0, 1)]
    assert places[TEXT.index("，")] == (OUTSIDE, 0) and places[-1] == (OUTSIDE, 0)
    slots = [TEXT[k] for k, (_, flag) in enumerate(places) if flag]
    assert slots == list("杯台回来徊")                                       # 去 不入韵
    unfinished = text_places(TEXT[:TEXT.index("亭")], "词林正韵")            # 第二句还没写完
    assert unfinished[TEXT.index("年")] == (OUTSIDE, 0)
    assert unfinished[TEXT.index("杯")] == (0, 0)                            # 还没有韵脚与它相押


def test_the_form_gives_the_places_the_ci_of_that_form_have():
    form = hand_form()
    places = text_places(TEXT, "词林正韵")
    start = TEXT.index("：") + 1
    for line in range(6):
        for count in range(7):
            assert form_place(form, line, count) == places[start + 8 * line + count]
    assert form_place(form, 0, 7) == (OUTSIDE, 0) and form_place(form, 6, 0) == (OUTSIDE, 0)
    # 读一首正在写的词：每个字之后的下一个字的位置；标点连着不另起一句，换行之后都在句外
    written = form_places(form, TEXT)
    assert written[:-1] == places[1:] and written[-1] == (OUTSIDE, 0)
    assert form_places(form, "浣溪沙：一二，，三") == [(OUTSIDE, 0)] * 3 + [
        (6, 0), (5, 0), (4, 0), (6, 0), (6, 0), (5, 0)]


@pytest.fixture(scope="module")
def placed():
    vocab = char_vocab([ci_text(ci) for ci in CIS])
    corpus = CiCorpus(CIS, vocab)
    gpt = TinyGPT(GPTConfig(len(vocab), 64, n_layers=1, block=BlockConfig(d_model=8, n_heads=2)))
    return vocab, corpus, PlacedCorpus(corpus, "词林正韵"), PlacedGPT(gpt, vocab)


def test_the_placed_corpus_draws_the_plain_windows_with_the_next_tokens_places(placed):
    vocab, corpus, placed_corpus, _ = placed
    x3, y = placed_corpus.batch(4, 60, torch.Generator().manual_seed(1))
    x, y_plain = corpus.batch(4, 60, torch.Generator().manual_seed(1))
    assert torch.equal(x3[..., 0], x) and torch.equal(y, y_plain)
    for row in range(4):                       # 窗口从一首词的开头起，装得下整首
        text = "".join(vocab.chars[i] for i in [x[row, 0].item(), *y[row].tolist()])
        k = text.index("\n")
        assert x3[row, :k, 1:].tolist() == [list(p) for p in text_places(text, "词林正韵")[1:k + 1]]


def test_the_placed_model_starts_as_the_plain_one_and_reads_ids_as_their_own_template(placed):
    vocab, corpus, placed_corpus, model = placed
    x3, _ = placed_corpus.every_ci(40)
    assert torch.allclose(model(x3), model.gpt(x3[..., 0]))                # 嵌入从零开始
    with torch.no_grad():
        model.countdown.weight.normal_()
        model.slot.weight.normal_()
    ids = torch.tensor([vocab.encode(TEXT[:40])])
    with pytest.raises(ValueError, match="先设 model.form"):
        model(ids)
    model.form = hand_form()                 # 晏殊这首的韵脚正是格式的韵脚：两种读法一样
    assert torch.equal(model.read_places(ids), x3[:1])
    assert not torch.allclose(model(x3), model.gpt(x3[..., 0]))
    assert torch.allclose(model(ids), model(x3[:1]))
    assert torch.equal(model.gpt(x3[..., 0]), model.gpt(x3[..., 0]))       # 钩子用完即除


def test_writing_with_the_places_of_the_form(placed):
    vocab, _, _, model = placed
    texts = sample_placed(model, vocab, hand_form(), 3, generator=torch.Generator().manual_seed(0))
    assert len(texts) == 3 and all("□" not in t and "\n" not in t for t in texts)
    with pytest.raises(ValueError, match="需要 CharVocab"):
        PlacedCorpus(type("Corpus", (), {"vocab": object()})(), "词林正韵")
