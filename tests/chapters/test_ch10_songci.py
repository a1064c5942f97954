"""Chapter 10's experiments (onelayer.chapters.ch10_songci) on a toy corpus."""

from pathlib import Path

import pytest
import torch

from onelayer.chapters.ch10_longer import other_rhyme_ends, rhyme_mass, slot_logprob
from onelayer.chapters.ch10_songci import (
    Bigram,
    Form,
    bpe_tokenizer,
    rhyme_filter,
    sample_ci,
    songci_gpt_config,
    train_songci_models,
    tune_subset,
)
from onelayer.model import TinyGPT
from onelayer.songci import CharVocab, Ci, CiCorpus, char_vocab, ci_text
from onelayer.stack import TinyGPTStack
from onelayer.train import experiment_seeds, seeded

TOY = [Ci("浣溪沙", "甲", ("一曲新词酒一杯，", "去年天气旧亭台。")),
       Ci("浣溪沙", "乙", ("一向年光有限身，", "等闲离别易销魂。")),
       Ci("西江月", "丙", ("明月别枝□鹊，", "清风半夜鸣蝉。"))]


FORM = Form.read(TOY, "浣溪沙", (7, 7))     # 杯/台 押韵，身/魂 不押：一半，够作韵脚


@pytest.fixture(scope="module")
def corpus():
    cis = tune_subset(TOY, ["浣溪沙"])
    return CiCorpus(cis, char_vocab([ci_text(ci) for ci in cis]))


def test_tune_subset_drops_lost_characters_and_unknown_tunes():
    assert [ci.author for ci in tune_subset(TOY, ["浣溪沙", "西江月"])] == ["甲", "乙"]
    with pytest.raises(ValueError, match="tunes 应为语料里有的词牌"):
        tune_subset(TOY, ["水调歌头"])


def test_bigram_rows_are_distributions_between_counts_and_unigram(corpus):
    bigram = Bigram.count(corpus)
    assert bigram.pairs.sum() == len(corpus.ids) - 1
    for k in (0.1, 10.0):
        assert torch.allclose(bigram.probs(k).sum(1), torch.ones(len(corpus.vocab)).double())
    a, b = corpus.vocab.encode("浣溪")
    raw = bigram.pairs[a, b] / bigram.pairs[a].sum()
    assert bigram.probs(1e-9)[a, b] == pytest.approx(raw.item())       # k → 0：原始计数
    assert torch.allclose(bigram.probs(1e9)[a], bigram.unigram, atol=1e-6)  # k → ∞：一元语法
    x, y = corpus.every_ci(8)
    assert bigram.loss(x, y, 1.0) == pytest.approx(-bigram.probs(1.0)[x, y].log().mean().item())
    assert bigram.unigram_loss(y) > bigram.loss(x, y, 1.0)
    with pytest.raises(ValueError, match="平滑强度 k 应为正数"):
        bigram.probs(0)


def test_bigram_samples_never_write_the_unknown_mark(corpus):
    texts = Bigram.count(corpus).sample(corpus.vocab, "浣溪沙：", 20, 30, 0.5,
                                        torch.Generator().manual_seed(0))
    assert len(texts) == 20 and not any(CharVocab.UNKNOWN in t or "\n" in t for t in texts)
    bigram = Bigram.count(corpus)
    cold = bigram.sample(corpus.vocab, "浣溪沙：", 20, 30, 0.5,
                         torch.Generator().manual_seed(0), temperature=0.02)
    probs = bigram.probs(0.5)
    for text in cold:                           # 温度很低：每一步都选（并列）最可能的字
        ids = corpus.vocab.encode("：" + text)
        assert all(probs[a, b] == probs[a].max() for a, b in zip(ids, ids[1:]))
    with pytest.raises(ValueError, match="temperature 应为正数"):
        Bigram.count(corpus).sample(corpus.vocab, "浣", 1, 3, 0.5, None, temperature=0)


def test_sample_ci_writes_per_member_and_stops_at_the_line_break(corpus):
    members = []
    for seed in (0, 1):
        with seeded(seed):
            members.append(TinyGPT(songci_gpt_config(corpus.vocab, 12)))
    written = sample_ci(TinyGPTStack(members), corpus.vocab, "浣溪沙", 3,
                        generator=torch.Generator().manual_seed(0))
    assert [len(texts) for texts in written] == [3, 3]
    assert all(len(t) <= 12 - 4 and "\n" not in t and CharVocab.UNKNOWN not in t
               for texts in written for t in texts)
    alone = sample_ci(members[0], corpus.vocab, "浣溪沙", 2, top_p=0.5,
                      generator=torch.Generator().manual_seed(0))
    assert len(alone) == 1 and len(alone[0]) == 2
    # a stack of one samples the same ci as its member alone
    stacked = sample_ci(TinyGPTStack(members[:1]), corpus.vocab, "浣溪沙", 4,
                        generator=torch.Generator().manual_seed(1))
    assert sample_ci(members[0], corpus.vocab, "浣溪沙", 4,
                     generator=torch.Generator().manual_seed(1)) == stacked


def test_form_reads_the_grid_and_slots_and_rates_three_rules():
    assert FORM.slots == (1,) and FORM.grid.majority[0][-1] == "平"
    texts = ["一曲新词酒一杯，去年天气旧亭台。", "一曲新词酒一杯，去年天气旧亭去。",
             "一曲新词酒一杯，去年天气旧亭。", "浣溪沙：一曲新词酒，去年天气旧亭台。"] * 10
    length, tone, rhyme = FORM.rates(texts).tolist()
    assert length == pytest.approx(1 / 2)                 # 后两首句长不合
    assert rhyme == pytest.approx(1 / 2)                  # 台押韵，去不押
    assert 0 < tone <= 1
    assert FORM.rates(["一二三"]).isnan()[1:].all()       # 没有一首合格：平仄、押韵无从量
    assert FORM.rates(texts[:4]).isnan()[2]              # 只有 2 对韵脚：太少，说不准
    assert FORM.rhyme_chance(texts[:2]) == pytest.approx(1 / 2)
    with pytest.raises(ValueError, match="texts 不能为空"):
        FORM.rates([])


def test_rhyme_filter_keeps_only_rhyming_characters():
    chars = "杯台花去□"
    z = torch.zeros(2, len(chars))
    kept = torch.isfinite(rhyme_filter(z, chars, "来", "平"))
    assert kept.tolist() == [[True, True, False, False, False]] * 2
    assert torch.equal(rhyme_filter(z, chars, "□", "平"), z)      # 首句末字不在表里：不动
    with pytest.raises(ValueError, match="最后一维应为字表大小 5"):
        rhyme_filter(torch.zeros(4), chars, "来", "平")


def test_a_rhyme_slot_keeps_its_tone():
    # 中（一东 / 一送）、看（十四寒 / 十五翰）、回（十灰 / 十一队）：平韵处只借平声的读音
    chars = "东送寒乱灰对"
    for anchor, ping, ze in [("中", "东", "送"), ("看", "寒", "乱"), ("回", "灰", "对")]:
        at_ping = torch.isfinite(rhyme_filter(torch.zeros(len(chars)), chars, anchor, "平"))
        at_ze = torch.isfinite(rhyme_filter(torch.zeros(len(chars)), chars, anchor, "仄"))
        assert [c for c, k in zip(chars, at_ping) if k] == [ping]
        assert [c for c, k in zip(chars, at_ze) if k] == [ze]


def test_sample_ci_with_the_rhyme_writes_a_rhyme_at_every_slot():
    # 一个只学过“……亭去。”（不押韵）的模型：不加约束写“去”，加了约束只能写与“杯”同韵的字
    cis = [Ci("浣溪沙", "甲", ("一曲新词酒一杯，", "去年天气旧亭去。"))] * 8
    vocab = char_vocab([ci_text(ci) for ci in cis] + ["台来回花家"])
    corpus = CiCorpus(cis, vocab)
    runs = train_songci_models(corpus, corpus, seeds=(0,), steps=60, form=FORM, every=60,
                               batch_size=4, seq_len=24, samples=1, warmup=5, lr=1e-2)
    model = runs.stack.member(0).eval()
    generator = torch.Generator().manual_seed(0)
    free = sample_ci(model, vocab, "浣溪沙", 40, temperature=0.5, generator=generator)[0]
    bound = sample_ci(model, vocab, "浣溪沙", 40, temperature=0.5, generator=generator,
                      rhyme=FORM)[0]
    assert FORM.rates(free)[2] == 0.0 and FORM.rates(bound)[2] == 1.0
    assert {t[14] for t in bound} <= set("杯台来回")
    assert slot_logprob(model, vocab, FORM, bound) < slot_logprob(model, vocab, FORM, free)
    with pytest.raises(ValueError, match="没有句长为 7·7 的词"):
        slot_logprob(model, vocab, FORM, ["一二三"])
    # 第一句末字的韵上放了多少概率：它只学过“去”，放在“杯”韵上的很少；换掉首句末字、按原字判断
    texts = ["一曲新词酒一杯，去年天气旧亭台。"]
    mass = rhyme_mass(model, vocab, FORM, texts)
    assert 0 <= mass < 0.5
    assert rhyme_mass(model, vocab, FORM, texts, anchors=["杯"]) == pytest.approx(mass)
    assert rhyme_mass(model, vocab, FORM, texts, anchors=["花"]) != pytest.approx(mass)
    ends = other_rhyme_ends(["一曲新词酒一杯，", "二曲新词酒一台，", "三曲新词酒一花，"], FORM)
    assert ends == ["花", "花", "杯"]                  # 下一首里第一个不同韵的首句末字


def test_train_songci_models_measures_loss_and_share_at_every_step(corpus):
    runs = train_songci_models(corpus, corpus, seeds=(0, 1), steps=4, form=FORM, every=2,
                               batch_size=2, seq_len=12, samples=2, warmup=1)
    assert runs.train_loss.shape == (2, 4) and sorted(runs.rates) == [0, 2, 4]
    assert runs.valid_loss[4].shape == (2,) and runs.rates[4].shape == (2, 3)
    assert (runs.valid_loss[4] < runs.valid_loss[0]).all()
    blind = train_songci_models(corpus, corpus, seeds=(0,), steps=1, form=FORM,
                                position_table=False, every=1, batch_size=2, seq_len=12,
                                samples=1, warmup=0)
    assert "pos.weight" not in blind.stack.names


def test_bpe_merges_frequent_characters_and_keeps_rare_ones_as_bytes():
    texts = ["一曲新词酒一杯", "一曲新词酒一杯", "去年天气旧亭台"] * 5
    tokenizer = bpe_tokenizer(texts, 300)
    counts = [len(e.ids) for e in tokenizer.encode_batch(["一曲新词酒一杯", "无"])]
    assert counts[0] < 7 * 3                     # 常见的字合并了：少于 21 个字节
    assert 1 < counts[1] <= 3                    # 没见过的字：仍是几个字节（最多 3 个）


def test_a_bpe_vocabulary_reads_and_writes_ci_like_a_character_one():
    from onelayer.chapters.ch10_songci import BpeVocab

    cis = tune_subset(TOY, ["浣溪沙"]) * 4
    bpe = BpeVocab(bpe_tokenizer([ci_text(ci) for ci in cis], 300))
    corpus = CiCorpus(cis, bpe)
    first = bpe.encode(ci_text(cis[0]) + "\n")
    assert corpus.ids[:len(first)].tolist() == first and corpus.starts[1] == len(first)
    assert bpe.decode(first) == ci_text(cis[0]) + "\n"
    assert len(first) < len((ci_text(cis[0]) + "\n").encode())      # 合并过的字节
    runs = train_songci_models(corpus, corpus, seeds=(0,), steps=2, form=FORM, every=2,
                               batch_size=2, seq_len=12, samples=2, warmup=1)
    assert runs.rates[2].shape == (1, 3) and len(runs.stack.member(0).tok.weight) == len(bpe)


@pytest.fixture(scope="module")
def longer():
    """The longer model as the chapter loads it, its record and run, and its corpus."""
    from onelayer.chapters.ch10_longer import LongRun, load_songci_gpt, long_corpus
    from onelayer.songci import load_songci

    model, vocab, record = load_songci_gpt()
    run = LongRun(**record["run"])
    return model, vocab, record, run, *long_corpus(load_songci(), run)


@pytest.mark.slow
def test_the_longer_model_is_the_checkpoint_its_record_describes(longer):
    from onelayer.chapters.ch10_longer import load_songci_gpt, validation_loss
    from onelayer.params import count_parameters

    model, vocab, record, run, train, valid = longer
    assert train.vocab == vocab                      # 词表可由语料重新算出
    assert model.config.block_size == run.seq_len and not model.training
    assert count_parameters(model) == sum(w.numel() for w in model.state_dict().values())
    assert len(record["train_loss"]) == run.steps
    assert record["valid_step"][0] == 0 and record["valid_step"][-1] == run.steps
    assert record["valid_loss"][-1] < record["valid_loss"][0] - 2
    # the float16 weights give the validation loss the run logged with its float32 ones
    assert validation_loss(model, valid, run.seq_len) == pytest.approx(record["valid_loss"][-1],
                                                                       abs=0.01)
    with pytest.raises(FileNotFoundError, match="tools/train_songci_gpt.py"):
        load_songci_gpt(Path("/nonexistent"))


@pytest.mark.slow
def test_the_longer_models_first_steps_repeat_its_log(longer):
    """The script's first 20 steps, re-run here (another machine may round differently); the
    validation split and loss are checked on the checkpoint (the test above)."""
    import itertools

    from onelayer.chapters.ch10_longer import train_long_songci

    _, _, record, run, train, valid = longer
    _, log = train_long_songci(train, valid, run, progress=lambda s: itertools.islice(s, 20))
    assert log["train_loss"][:20] == pytest.approx(record["train_loss"][:20], abs=2e-3)
    assert log["valid_step"] == [0, 20]


@pytest.mark.slow
def test_training_on_thirty_ci_overfits():
    # 第 10 章练习 1 的答案：只读 30 首浣溪沙、300 步，训练损失降到 0.3 以下；验证损失在前 90 步
    # 里最低，到第 300 步每个种子都比自己的最低点高 1 以上
    from onelayer.songci import load_songci, split_by_ci

    train_cis, valid_cis = split_by_ci(load_songci())
    tune_train, tune_valid = tune_subset(train_cis, ["浣溪沙"]), tune_subset(valid_cis, ["浣溪沙"])
    vocab = char_vocab([ci_text(ci) for ci in tune_train], min_count=3)
    few = train_songci_models(CiCorpus(tune_train[:30], vocab), CiCorpus(tune_valid, vocab),
                              experiment_seeds(5), 300, Form.read(train_cis, "浣溪沙", (7,) * 6),
                              every=30, batch_size=8, samples=1)
    valid = torch.stack([few.valid_loss[step] for step in sorted(few.valid_loss)])  # [步, 种子]
    assert (few.train_loss[:, -10:].mean(1) < 0.3).all()
    assert sorted(few.valid_loss)[valid.median(1).values.argmin()] <= 90
    assert (valid[-1] - valid.min(0).values > 1).all()


def test_the_rhyme_constraint_counts_lines_as_ci_lines_does():
    from onelayer.chapters.ch10_songci import _RhymeAtSlots

    vocab = char_vocab(["一曲新词酒一杯去年天气旧亭台花"])
    at_slots = _RhymeAtSlots(FORM, vocab, 1)
    for i in vocab.encode("一曲新词酒一杯，，去年天气旧亭"):    # 两个标点连着：仍是第二句
        at_slots.update([i])
    assert (at_slots.line, at_slots.count, at_slots.anchor) == ([1], [6], ["杯"])
    logits = at_slots.mask(torch.zeros(1, len(vocab)))
    kept = {c for c, x in zip(vocab.chars, logits[0].tolist()) if x > float("-inf")}
    assert kept == {"杯", "台"}


def test_the_rhyme_constraint_gives_the_first_line_an_end_in_the_slots_tone():
    from onelayer import metre
    from onelayer.chapters.ch10_songci import _RhymeAtSlots

    vocab = char_vocab(["一曲新词酒一杯去年天气旧亭台花"])
    at_slots = _RhymeAtSlots(FORM, vocab, 1)
    for i in vocab.encode("一曲新词酒一"):                        # 首句的末字（起韵）之前
        at_slots.update([i])
    logits = at_slots.mask(torch.zeros(1, len(vocab)))
    kept = {c for c, x in zip(vocab.chars, logits[0].tolist()) if x > float("-inf")}
    assert kept == {c for c in vocab.chars if metre.rhyme_groups(c, tone="平")}
    assert "杯" in kept and not {"去", "酒", "旧"} & kept
