"""Chapter 11's experiments (onelayer.chapters.ch11_inside) on a tiny model and three ci."""

import dataclasses

import pytest
import torch

from onelayer import metre
from onelayer.block import BlockConfig
from onelayer.chapters.ch07_tiny_gpt import attention_maps, ffn_off
from onelayer.chapters.ch10_songci import Form
from onelayer.chapters.ch11_inside import (
    HEAD_TARGETS,
    LENS_RATES,
    NeuronReading,
    Reading,
    attention_all,
    component_means,
    head_scores,
    lens_logits,
    lens_rates,
    mean_ablated,
    memory_hits,
    neuron_memories,
    rhyme_attention,
    rhyme_uniform,
    tone_probe,
    uniform_weight,
)
from onelayer.model import GPTConfig, KVCache, TinyGPT
from onelayer.probes import recorded
from onelayer.songci import LINE_BREAKS, char_vocab

TEXTS = ["一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回？"
         "无可奈何花落去，似曾相识燕归来。小园香径独徘徊。",
         "一向年光有限身，等闲离别易销魂。酒筵歌席莫辞频。"
         "满目山河空念远，落花风雨更伤春。不如怜取眼前人。",
         "簌簌衣巾落枣花，村南村北响缲车。牛衣古柳卖黄瓜。"
         "酒困路长惟欲睡，日高人渴漫思茶。敲门试问野人家。"]
PATTERN = (7,) * 6
FIXED = {(0, 6), (1, 6), (2, 6), (3, 6)}          # 只有这四处平仄固定：杯、台、回（中）、去


def hand_form(pattern=PATTERN, fixed=frozenset(FIXED), slots=(1, 2, 4, 5), tune="浣溪沙"):
    majority = tuple(tuple("仄" if (i, j) == (3, 6) else "平" for j in range(n))
                     for i, n in enumerate(pattern))
    agreement = tuple(tuple(1.0 if (i, j) in fixed else 0.5 for j in range(n))
                      for i, n in enumerate(pattern))
    counted = tuple((3,) * n for n in pattern)
    grid = metre.ToneGrid(tuple(pattern), majority, agreement, counted)
    rhymes = (None,) + tuple(1.0 if i in slots else 0.0 for i in range(1, len(pattern)))
    return Form(tune, tuple(pattern), grid, rhymes, tuple(slots))


FORM = hand_form()
VOCAB = char_vocab(TEXTS + ["浣溪沙"])
P = len("浣溪沙：")                                   # 提示的长度：位置 P − 1 是冒号
T = P + 48                                           # 6 句 × (7 字 + 1 个标点)


@pytest.fixture(scope="module")
def reading():
    return Reading.of(FORM, VOCAB, TEXTS + ["一曲新词酒一杯，去年天气旧亭台。"])


def tiny_model(n_layers=2):
    torch.manual_seed(0)
    block = BlockConfig(d_model=16, n_heads=2, d_ff=24)
    model = TinyGPT(GPTConfig(len(VOCAB), 64, n_layers=n_layers, block=block)).eval()
    with torch.no_grad():  # large enough weights that every head and FFN matters
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.2)
    return model


@pytest.fixture(scope="module")
def model():
    return tiny_model()


def test_reading_marks_line_starts_breaks_and_fixed_tones(reading):
    B = len(TEXTS)
    assert reading.texts == tuple(TEXTS) and reading.prompt == P     # 句长不合的一首被丢掉
    for t in (reading.x, reading.y, reading.line_start, reading.breaks, reading.tone):
        assert t.shape == (B, T)
    assert torch.equal(reading.x[:, 1:], reading.y[:, :-1])
    assert VOCAB.decode(reading.x[0].tolist()) == "浣溪沙：" + TEXTS[0]      # 去掉末尾的换行
    # 句首：冒号或上一个标点（含当前位置），提示里是 0
    assert reading.line_start[0, :P - 1].tolist() == [0] * (P - 1)
    assert reading.line_start[0, P - 1:P + 8].tolist() == [P - 1] * 8 + [P + 7]
    for b, s in enumerate(VOCAB.decode(row) for row in reading.x.tolist()):
        for t in range(T):
            k = reading.line_start[b, t].item()
            if t >= P - 1:
                assert s[k] in LINE_BREAKS + "：" and not set(s[k + 1:t + 1]) & set(LINE_BREAKS)
    marks = torch.tensor(VOCAB.encode(LINE_BREAKS))
    assert torch.equal(reading.breaks, torch.isin(reading.y, marks))
    assert reading.breaks.sum().item() == 6 * B
    # 平仄：只在固定的位置、下一个字只有一个声调时才有；回是“中”，记 -1
    expected = torch.full((T,), -1)
    expected[[P + 5, P + 13, P + 29]] = torch.tensor([0, 0, 1])       # 杯 平、台 平、去 仄
    assert torch.equal(reading.tone[0], expected)
    assert reading.tone[:, P + 21].tolist() == [-1, 0, 0]              # 回 中，频、瓜 平
    with pytest.raises(ValueError, match="texts 里应有按 7·7·7·7·7·7 写、每句末尾一个标点的词"):
        Reading.of(FORM, VOCAB, ["一曲新词酒一杯，去年天气旧亭台。", TEXTS[0] + "。"])


def test_the_logit_lens_ends_at_the_models_output(model, reading):
    logits = lens_logits(model, reading.x)
    assert len(logits) == model.config.n_layers + 1
    assert all(lg.shape == (len(TEXTS), T, len(VOCAB)) for lg in logits)
    with torch.no_grad():
        out = model(reading.x)
        first = model.ln_f(model.tok(reading.x) + model.pos(torch.arange(T))) @ model.tok.weight.T
    assert torch.allclose(logits[-1], out, atol=1e-5)
    assert torch.allclose(logits[0], first, atol=1e-5)
    rates = lens_rates(model, reading, VOCAB)
    assert rates.shape == (model.config.n_layers + 1, len(LENS_RATES)) == (3, 4)
    loss = torch.nn.functional.cross_entropy(out.flatten(0, 1), reading.y.flatten())
    assert rates[-1, 0].item() == pytest.approx(loss.item(), rel=1e-5)
    assert ((rates[:, 1:] >= 0) & (rates[:, 1:] <= 1)).all()


def test_attention_all_stacks_every_blocks_maps(model, reading):
    maps = attention_all(model, reading.x)
    assert maps.shape == (2, len(TEXTS), 2, T, T)
    assert torch.allclose(maps.sum(-1), torch.ones(2, len(TEXTS), 2, T))
    for layer in range(2):
        assert torch.allclose(maps[layer], attention_maps(model, reading.x, layer), atol=1e-6)


def test_head_scores_read_hand_made_maps(reading):
    B, L, H = len(TEXTS), 2, 3
    previous = torch.zeros(L, B, H, T, T)
    previous[..., 0, 0] = 1.0
    previous[..., torch.arange(1, T), torch.arange(T - 1)] = 1.0       # 全部给前一个字
    scores = head_scores(previous, reading)
    assert scores.shape == (len(HEAD_TARGETS), L, H)
    # 查询 P..T−1 共 48 个：前一个字是冒号或标点的 6 个，前一个字是冒号的 1 个
    # 词牌（前 4 个位置）：只有读冒号后第一个字的那个查询看的是冒号
    assert torch.allclose(scores, torch.tensor([1 / 8, 1.0, 1 / 48, 0.0, 1 / 48])[:, None, None]
                          .expand(5, L, H))
    first = torch.zeros(L, B, H, T, T)
    first[..., 0] = 1.0
    assert torch.allclose(head_scores(first, reading)[3], torch.ones(L, H))
    assert torch.allclose(head_scores(first, reading)[4], torch.ones(L, H))
    even = torch.ones(T, T).tril()
    even = (even / even.sum(-1, keepdim=True)).expand(L, B, H, T, T)
    assert torch.allclose(head_scores(even, reading)[:4].double(),
                          torch.full((4, L, H), uniform_weight(reading)).double())
    with pytest.raises(ValueError, match=r"maps 应为 \[n_layers, 3, n_heads, 52, 52\]"):
        head_scores(previous[0], reading)
    with pytest.raises(ValueError, match="maps 应为"):
        head_scores(previous[..., :-1, :-1], reading)


def test_uniform_weight_on_a_one_character_ci():
    form = hand_form(pattern=(1,), fixed=frozenset(), slots=(), tune="甲")
    tiny = Reading.of(form, char_vocab(["甲一"]), ["一。"])     # x = 甲：一。
    assert tiny.x.shape == (1, 4) and tiny.prompt == 2
    assert uniform_weight(tiny) == pytest.approx((1 / 3 + 1 / 4) / 2)


def test_mean_ablated_ffn_hands_on_its_mean_and_is_undone_afterwards(model, reading):
    means = component_means(model, reading.x)
    assert len(means) == 2 and all(m.shape == f.shape == (16,) for m, f in means)
    with torch.no_grad():
        before = model(reading.x)
        mlp = model.blocks[0].mlp
        with mean_ablated(model, means, 0) as ablated, recorded(mlp) as out:
            inside = ablated(reading.x)
        after = model(reading.x)
    assert torch.equal(out[0], means[0][1].expand(len(TEXTS), T, 16))
    assert (inside - before).abs().max() > 1e-2
    assert torch.equal(after, before)
    assert not mlp._forward_hooks


def test_mean_ablated_head_works_one_token_at_a_time(model, reading):
    means = component_means(model, reading.x)
    x = reading.x[:, :20]
    proj = model.blocks[1].attn.proj
    with torch.no_grad():
        before = model(x)
        with mean_ablated(model, means, 1, head=0), recorded(proj, which="input") as seen:
            full = model(x)
            cache = KVCache(model.config.n_layers)
            steps = torch.cat([model.cached_logits(x[:, t:t + 1], cache) for t in range(20)], 1)
        after = model(x)
    assert torch.equal(seen[0][..., :8], means[1][0][:8].expand(len(TEXTS), 20, 8))
    assert not torch.equal(seen[0][..., 8:], means[1][0][8:].expand(len(TEXTS), 20, 8))
    assert torch.allclose(steps, full, atol=1e-5)
    assert (full - before).abs().max() > 1e-2
    assert torch.equal(after, before) and not proj._forward_pre_hooks


def test_ffn_off_with_a_fill_outputs_it_at_every_position(model, reading):
    fill = torch.randn(16, generator=torch.Generator().manual_seed(0))
    mlp = model.blocks[1].mlp
    with torch.no_grad():
        with ffn_off(model, 1):
            without = model(reading.x)
        with ffn_off(model, 1, fill=fill), recorded(mlp) as out:
            filled = model(reading.x)
    assert torch.equal(out[0], fill.expand(len(TEXTS), T, 16))
    assert (filled - without).abs().max() > 1e-2          # fill 不是 0：结果不同于关掉 FFN
    assert not mlp._forward_hooks


def test_neuron_memories_read_keys_and_values(model, reading):
    readings = neuron_memories(model, reading.x, reading.y, VOCAB, layer=1, top=3, span=4)
    assert len(readings) == 24 and [r.neuron for r in readings] == list(range(24))
    assert all(r.layer == 1 and len(r.contexts) == len(r.nexts) == len(r.promoted) == 3
               and all(1 <= len(c) <= 4 for c in r.contexts) for r in readings)
    mlp = model.blocks[1].mlp
    with torch.no_grad(), recorded(mlp, which="input") as inputs:
        model(reading.x)
        acts = mlp.hidden(inputs[0])                                  # [B, T, d_ff]
    for r in readings[:5]:
        b, t = divmod(acts[..., r.neuron].argmax().item(), T)
        text = VOCAB.decode(reading.x[b].tolist())
        assert r.contexts[0] == text[max(0, t - 3):t + 1]
        assert r.nexts[0] == VOCAB.chars[reading.y[b, t]]
        value = mlp.w2.weight[:, r.neuron] @ model.tok.weight.T
        assert r.promoted[0] == VOCAB.chars[value.argmax()]
    assert memory_hits(readings) == memory_hits(readings, list(range(24)))


def test_memory_hits_counts_nexts_among_the_paired_values():
    readings = [NeuronReading(0, 0, ("甲", "乙"), "甲乙", "甲"),
                NeuronReading(0, 1, ("丙",), "丙", "乙丙")]
    assert memory_hits(readings) == pytest.approx(2 / 3)
    assert memory_hits(readings, [1, 0]) == pytest.approx(1 / 3)      # 乙 在“乙丙”里
    for bad in ([0, 0], [0], [0, 1, 2]):
        with pytest.raises(ValueError, match="pairing 应是 0..1 的一个排列"):
            memory_hits(readings, bad)


def test_tone_probe_reads_a_separable_tone_and_not_shuffled_labels():
    g = torch.Generator().manual_seed(0)
    B, T_, d = 40, 10, 6
    tone = torch.randint(0, 2, (B, T_), generator=g)
    tone[torch.rand(B, T_, generator=g) < 0.3] = -1                   # 不计的位置
    clear = torch.randn(B, T_, d, generator=g)
    clear[..., 0] += 4 * (2 * tone.clamp(min=0) - 1)
    noise = torch.randn(B, T_, d, generator=g)
    train = torch.arange(B) < B // 2
    accuracy = tone_probe([clear, noise], tone, train)
    assert accuracy.shape == (2,)
    assert accuracy[0] >= 0.95 and accuracy[1] < 0.75
    shuffled = tone_probe([clear], tone, train, generator=torch.Generator().manual_seed(1))
    assert shuffled[0] < 0.75


def test_rhyme_attention_reads_slot_queries_at_the_first_lines_end(reading):
    B, L, H = len(TEXTS), 2, 2
    anchor = P + 6                                                    # 第一句末字（杯、身、花）
    queries = [P + 8 * i + 6 - 1 for i in FORM.slots]                 # 写下韵脚的位置
    maps = torch.zeros(L, B, H, T, T)
    maps[:, :, :, P + 8 * 3 + 5, anchor] = 1.0                        # 第 4 句不是韵脚：不计
    maps[:, :, :, queries, anchor - 1] = 1.0                          # 别的键：不计
    weights = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    for q in queries:
        maps[:, :, :, q, anchor] = weights[:, None, :]
    assert torch.allclose(rhyme_attention(maps, reading), weights)
    assert rhyme_uniform(reading) == pytest.approx(sum(1 / (q + 1) for q in queries) / 4)
    no_slots = dataclasses.replace(reading, form=dataclasses.replace(FORM, slots=()))
    with pytest.raises(ValueError, match="浣溪沙 没有韵脚"):
        rhyme_attention(maps, no_slots)
