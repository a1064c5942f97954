"""Chapter 9's experiments: KV-cache sizes, facts models with shared key/value heads, and the
attention scores with and without QK-norm."""

import math
from dataclasses import replace

import pytest
import torch

from onelayer.attention import CausalSelfAttention
from onelayer.chapters.ch07_tiny_gpt import facts_gpt_config, train_facts_models
from onelayer.chapters.ch09_modern_layer import (
    cached_bytes,
    facts_gqa_config,
    kv_cache_bytes,
    lr_sweep,
    max_attention_logit,
    score_growth,
    train_gqa_models,
)
from onelayer.data import facts_corpus
from onelayer.model import KVCache, TinyGPT
from onelayer.train import seeded, train_lm


def test_kv_cache_bytes_is_two_layers_heads_width_bytes_tokens():
    assert kv_cache_bytes(32, 32, 128) == 524288                     # Llama-2-7B：512 KiB/词元
    assert kv_cache_bytes(28, 4, 128, tokens=4096) == 224 * 2**20   # Qwen2.5-7B：224 MiB
    assert kv_cache_bytes(1, 2, 8, bytes_per_value=4, tokens=3) == 2 * 2 * 8 * 4 * 3


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_layers": 0}, "n_layers 应为正整数"),
    ({"n_kv_heads": 1.5}, "n_kv_heads 应为正整数"),
    ({"tokens": -1}, "tokens 应为正整数"),
])
def test_kv_cache_bytes_refuses_bad_sizes(kwargs, message):
    sizes = {"n_layers": 2, "n_kv_heads": 2, "d_head": 8} | kwargs
    with pytest.raises(ValueError, match=message):
        kv_cache_bytes(**sizes)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_the_cache_holds_what_the_formula_says(n_kv):
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    with seeded(0):
        model = TinyGPT(facts_gqa_config(corpus, n_kv)).eval()
    cache = KVCache(1)
    assert cached_bytes(cache) == 0
    with torch.no_grad():
        model.cached_logits(torch.tensor([[1, 2, 3, 4, 5]]), cache)
    assert cached_bytes(cache) == kv_cache_bytes(1, n_kv, 8, bytes_per_value=4, tokens=5)


def test_gqa_config_changes_only_the_key_value_heads():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    config = facts_gqa_config(corpus, 2)
    assert config.block.n_kv_heads == 2
    assert config.block.n_heads == facts_gpt_config(corpus).block.n_heads == 4
    with pytest.raises(ValueError, match="n_kv_heads"):
        facts_gqa_config(corpus, 3)


def test_four_key_value_heads_train_exactly_like_chapter_7():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    seeds = (0, 1)
    ours = train_gqa_models(corpus, seeds, 4, steps=12, every=6)
    theirs = train_facts_models(corpus, seeds, steps=12, every=6)
    assert torch.equal(ours.losses, theirs.losses)
    assert torch.equal(ours.recall, theirs.recall) and ours.steps == theirs.steps == [6, 12]
    assert ours.n_kv_heads == 4 and len(ours.models) == 2


def test_shared_heads_train_and_refuse_no_seeds():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    runs = train_gqa_models(corpus, (0,), 1, steps=3, every=3)
    assert runs.losses.shape == (1, 3) and runs.recall.shape == (1, 1)
    assert runs.models[0].blocks[0].attn.n_kv_heads == 1
    with pytest.raises(ValueError, match="seeds 不能为空"):
        train_gqa_models(corpus, (), 2)
    with pytest.raises(ValueError, match="every 应为正整数"):
        train_gqa_models(corpus, (0,), 2, every=0)


def test_scores_grow_as_the_square_without_qk_norm_and_not_with_it():
    torch.manual_seed(0)
    plain = CausalSelfAttention(16, 4, n_kv_heads=2)
    normed = CausalSelfAttention(16, 4, n_kv_heads=2, qk_norm=True)
    normed.load_state_dict(plain.state_dict(), strict=False)
    before = plain.qkv.weight.clone()
    x = torch.randn(3, 6, 16)
    grown = score_growth(plain, x, [1, 3])
    kept = score_growth(normed, x, [1, 3])
    assert torch.equal(plain.qkv.weight, before)                    # 缩放的是副本
    assert math.isclose(grown.max_score[1] / grown.max_score[0], 9, rel_tol=1e-5)
    assert grown.top_weight[1] > grown.top_weight[0]
    assert (kept.max_score[1] / kept.max_score[0] - 1).abs() < 1e-4
    assert kept.max_score.max() <= math.sqrt(4)                      # √d_head，d_head = 4


def test_score_growth_matches_the_written_out_scores():
    torch.manual_seed(1)
    attn = CausalSelfAttention(8, 2, bias=False).eval()
    x = torch.randn(5, 8)
    w_q, w_k = attn.qkv.weight[:8], attn.qkv.weight[8:16]
    q, k = ((x @ w.T * 2).view(5, 2, 4).transpose(0, 1) for w in (w_q, w_k))
    scores = (q @ k.transpose(-2, -1) / 2).masked_fill(~torch.ones(5, 5).tril().bool(), 0)
    growth = score_growth(attn, x, [2])
    assert torch.isclose(growth.max_score[0], scores.abs().max())


@pytest.mark.parametrize(("scales", "x", "message"), [
    ([], torch.zeros(4, 8), "scales 应为非空的正数列表"),
    ([1, 0], torch.zeros(4, 8), "scales 应为非空的正数列表"),
    ([1], torch.zeros(1, 8), "T ≥ 2"),
])
def test_score_growth_refuses_bad_input(scales, x, message):
    with pytest.raises(ValueError, match=message):
        score_growth(CausalSelfAttention(8, 2), x, scales)


def test_gqa_config_takes_narrower_heads():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    config = facts_gqa_config(corpus, 4, n_heads=16)
    assert (config.block.n_heads, config.block.kv_heads, config.block.d_model) == (16, 4, 32)
    runs = train_gqa_models(corpus, (0,), 1, n_heads=16, steps=2, every=2)
    assert runs.models[0].blocks[0].attn.d_head == 2


def test_max_attention_logit_is_the_largest_visible_score():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    with seeded(0):
        model = TinyGPT(facts_gpt_config(corpus, n_layers=2)).eval()
    idx = corpus.batch(3, 8, torch.Generator().manual_seed(1))[0]
    largest = 0.0
    for block, x in zip(model.blocks, model.hidden_states(idx)):
        q, k, _ = block.attn.heads(block.ln_1(x))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(block.attn.d_head)).tril()   # 看不见的置 0
        largest = max(largest, scores.abs().max().item())
    assert max_attention_logit(model, idx) == pytest.approx(largest)
    with torch.no_grad():
        model.blocks[1].attn.qkv.weight[:64] *= 10                    # 第 2 块的 W_Q、W_K
    assert max_attention_logit(model, idx) > 10 * largest


def test_lr_sweep_trains_each_rate_and_seed_like_a_lone_model():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    sweep = lr_sweep(corpus, (0, 1), (1e-3, 1e-2), qk_norm=True, steps=20)
    assert sweep.losses.shape == (2, 2, 20) and sweep.max_logit.shape == (2, 2)
    assert torch.equal(sweep.final_loss, sweep.losses[..., -20:].mean(-1))
    config = facts_gpt_config(corpus)
    config = replace(config, block=replace(config.block, qk_norm=True))
    with seeded(1):
        lone = TinyGPT(config)
    losses = train_lm(lone, corpus, 20, lr=1e-2, seed=1)
    assert (losses - sweep.losses[1, 1]).abs().max().item() < 1e-4
    idx = corpus.batch(64, config.block_size, torch.Generator().manual_seed(0))[0]
    assert max_attention_logit(lone.eval(), idx) == pytest.approx(sweep.max_logit[1, 1].item(),
                                                                  rel=1e-3)
    with pytest.raises(ValueError, match="不能为空"):
        lr_sweep(corpus, (), (1e-3,), qk_norm=False)
