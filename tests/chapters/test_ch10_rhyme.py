"""The rhyme study's changes to the recipe (onelayer.chapters.ch10_rhyme), on a tiny model and
hand-written ci."""

import pytest
import torch

from onelayer.block import BlockConfig
from onelayer.chapters.ch10_rhyme import (
    RhymeWeights,
    fold_rhyme_classes,
    jinti_kind,
    reversed_ci,
    reversed_lines,
    rhyme_ends,
    rhyme_features,
    with_rhyme_classes,
)
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.songci import Ci, CiCorpus, char_vocab, ci_text

# 晏殊《浣溪沙》：杯 台 回 来 徊 同在十灰（回 平仄两读），去 不入韵
YAN_SHU = ("一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回？"
           "无可奈何花落去，似曾相识燕归来。小园香径独徘徊。")


def test_reversed_lines_writes_each_line_end_first_and_undoes_itself():
    assert reversed_lines("一曲新词酒一杯，去年天气旧亭台。") == "杯一酒词新曲一，台亭旧气天年去。"
    assert reversed_lines(reversed_lines(YAN_SHU)) == YAN_SHU
    ci = reversed_ci(Ci("浣溪沙", "晏殊", ("一曲新词酒一杯，", "去年天气旧亭台。")))
    assert ci.rhythmic == "浣溪沙" and ci.paragraphs == ("杯一酒词新曲一，", "台亭旧气天年去。")


def test_rhyme_ends_are_the_line_ends_that_rhyme_with_the_first():
    text = "浣溪沙：" + YAN_SHU + "\n鹧鸪天：一二三四五六杯，"
    assert [text[k] for k in rhyme_ends(text, "平水韵")] == list("台回来徊")   # 回 按杯的平声
    assert rhyme_ends(text[:text.index("夕")], "平水韵") == [text.index("台")]
    repeated = "浣溪沙：一曲新词酒一杯，去年天气旧亭杯。"
    assert rhyme_ends(repeated, "平水韵") == []                               # 重韵不算
    # 中（一东/一送）与 送：送 只有仄声，按它自己的声调，首句的 中 有去声一送，押
    assert rhyme_ends("如梦令：昨夜风中，只是相送。", "平水韵") == [12]


def test_rhyme_weights_mark_the_targets_that_end_a_rhyming_line():
    cis = [Ci("浣溪沙", "晏殊", (YAN_SHU,))]
    corpus = CiCorpus(cis, char_vocab([ci_text(ci) for ci in cis]))
    x, y = corpus.windows(corpus.starts, 40)
    weigh = RhymeWeights(corpus.vocab.chars, "平水韵", 10.0, start=5)
    assert torch.equal(weigh(y, 4), torch.ones(1, 40))                     # 第 5 步以前不加权
    marked = [corpus.vocab.chars[i] for i in y[0][weigh(y, 5)[0] == 10].tolist()]
    assert marked == list("台回")                                           # 窗口只到第 3 句
    with pytest.raises(ValueError, match="weight 应 ≥ 1"):
        RhymeWeights(corpus.vocab.chars, "平水韵", 0.5)


def test_weighted_loss_is_the_plain_mean_at_weight_one():
    logits, y = torch.randn(2, 5, 7), torch.randint(7, (2, 5))
    assert torch.allclose(lm_loss(logits, y, torch.ones(2, 5)), lm_loss(logits, y))
    w = torch.ones(2, 5)
    w[0, 3] = 4
    nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
    assert torch.allclose(lm_loss(logits, y, w), (nll.sum() + 3 * nll[3]) / 10)
    with pytest.raises(ValueError, match="weights 应与 targets 同形状"):
        lm_loss(logits, y, torch.ones(5))


def test_rhyme_classes_join_the_token_table_and_fold_into_a_plain_model():
    chars = "杯台回东冬去，□\n"
    features, names = rhyme_features(chars, "词林正韵")
    assert features.shape == (len(chars), len(names))
    assert torch.allclose(features.sum(1), torch.tensor([1.0] * 6 + [0.0] * 3))
    assert torch.equal(features[3], features[4])                            # 东冬同在第一部
    assert (features[2] > 0).sum() == 4          # 回：十灰、十一队，戈载分在第三、第五部，各两读
    model = TinyGPT(GPTConfig(len(chars), 8, n_layers=1, block=BlockConfig(d_model=8, n_heads=2)))
    before = model.tok.weight.detach().clone()
    with_rhyme_classes(model, chars, "词林正韵")
    assert torch.equal(model.tok.weight, before)                            # 起点与原配方相同
    with torch.no_grad():
        model.tok.parametrizations.weight[0].table.normal_()
    ids = torch.tensor([[0, 1, 2, 3]])
    logits = model(ids)
    fold_rhyme_classes(model)
    assert list(model.state_dict()) == list(TinyGPT(model.config).state_dict())
    assert torch.allclose(model(ids), logits)
    with pytest.raises(ValueError, match="chars 应有 9 个"):
        with_rhyme_classes(TinyGPT(model.config), chars[:5], "词林正韵")


def test_jinti_kind_keeps_the_regular_poems_rhymed_on_ping():
    assert jinti_kind("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。") == "五绝"   # 流 楼 十一尤
    assert jinti_kind("朝辞白帝彩云间，千里江陵一日还。两岸猿声啼不住，轻舟已过万重山。") == "七绝"
    assert jinti_kind("千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。") is None      # 仄韵
    assert jinti_kind("白日依山尽，黄河入海流。欲穷千里目，更上一层流。") is None      # 重韵
    assert jinti_kind("白日依山尽，黄河入海流。欲穷千里目，更上一层台。") is None      # 不同韵
    assert jinti_kind("白日依山尽，黄河入海流。欲穷千里目，更上一层高楼。") is None    # 句长不齐
    assert jinti_kind("白日依山尽，黄河入海流。") is None and jinti_kind("") is None


def test_more_rhymed_text_is_the_asked_share_of_the_training_ci(tmp_path):
    import json

    from onelayer.chapters.ch10_longer import more_rhymed_text

    path = tmp_path / "jintishi.jsonl"
    rows = [{"rhythmic": "五绝", "author": str(k), "paragraphs": ["白日依山尽，黄河入海流。"]}
            for k in range(20)] + [{"rhythmic": "五绝", "author": "缺", "paragraphs": ["白□。"]}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    added = more_rhymed_text(30, 0.25, path)
    assert len(added) == 10 and len({p.author for p in added}) == 10         # 30 + 10：四分之一
    assert added == more_rhymed_text(30, 0.25, path)                         # 每个种子同一批诗
    assert all("□" not in p.text for p in more_rhymed_text(60, 0.25, path))
    with pytest.raises(ValueError, match="shi_share 应在 0 与 1 之间"):
        more_rhymed_text(30, 1.0, path)
    with pytest.raises(FileNotFoundError, match="make jintishi"):
        more_rhymed_text(30, 0.25, tmp_path / "none.jsonl")
