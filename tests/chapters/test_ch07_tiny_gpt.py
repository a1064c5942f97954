"""Chapter 7's experiments: recalling facts, the FFN read as a key-value memory."""

import pytest
import torch

from onelayer import reference
from onelayer.block import BlockConfig
from onelayer.chapters.ch07_tiny_gpt import (
    FACTS_BATCH,
    NeuronMemory,
    attention_maps,
    fact_queries,
    fact_recall,
    facts_gpt_config,
    ffn_activations,
    ffn_off,
    greedy_cycle,
    head_ablation,
    heads_off,
    key_value_probe,
    previous_token_weight,
    role_of,
    swapped_subject_weight,
    train_facts_models,
    value_hits,
)
from onelayer.data import facts_corpus
from onelayer.model import GPTConfig, TinyGPT
from onelayer.probes import recorded
from onelayer.train import experiment_seeds, train_lm


def test_fact_queries_ask_every_fact():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    prompts, answers = fact_queries(corpus, context=2)
    assert prompts.shape == (8, 10) and answers.shape == (8,)
    for prompt, answer in zip(prompts.tolist(), answers.tolist()):
        s, r = corpus.decode(prompt[-2:])
        assert corpus.facts[s, r] == corpus.vocab[answer]


def test_chapter_model_is_gpt2_with_tanh_gelu():
    pytest.importorskip("transformers")
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    model = TinyGPT(facts_gpt_config(corpus)).eval()
    peer = reference.gpt2_lm_head_model(model)
    assert peer.config.activation_function == "gelu_new"
    idx = torch.randint(0, len(corpus.vocab), (2, 16))
    with torch.no_grad():
        assert (model(idx) - peer(idx).logits).abs().max().item() < 1e-5


def test_ffn_activations_and_key_value_probe():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    block = BlockConfig(d_model=16, n_heads=2, d_ff=24)
    model = TinyGPT(GPTConfig(len(corpus.vocab), 8, n_layers=1, block=block))
    idx = torch.randint(0, len(corpus.vocab), (3, 5))
    acts = ffn_activations(model, idx)
    block = model.blocks[0]
    with torch.no_grad():
        x = model.hidden_states(idx)[0]
        h = x + block.attn(block.ln_1(x))
        assert torch.allclose(acts, block.mlp.hidden(block.ln_2(h)))
    memories = key_value_probe(model, corpus, top=3)
    assert len(memories) == 24
    m = memories[0]
    assert len(m.keys) == len(m.key_answers) == len(m.values) == 3
    assert all(corpus.facts[k[0], k[1]] == a for k, a in zip(m.keys, m.key_answers))
    with pytest.raises(ValueError, match="layer"):
        ffn_activations(model, idx, layer=1)


def test_probes_restore_the_train_mode():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    model = TinyGPT(facts_gpt_config(corpus)).train()
    fact_recall(model, corpus)
    ffn_activations(model, torch.zeros(1, 3, dtype=torch.long))
    assert model.training


def test_train_facts_models_measures_recall_member_by_member():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    runs = train_facts_models(corpus, seeds=(0, 1), d_ff=16, d_model=8, steps=6, every=3)
    assert runs.losses.shape == (2, 6) and runs.recall.shape == (2, 2) and runs.steps == [3, 6]
    for i, model in enumerate(runs.models):
        assert runs.recall[i, -1].item() == pytest.approx(fact_recall(model, corpus))
    with torch.random.fork_rng():
        torch.manual_seed(1)
        single = TinyGPT(facts_gpt_config(corpus, d_ff=16, d_model=8))
    expected = train_lm(single, corpus, 6, lr=3e-3, batch_size=FACTS_BATCH, seed=1)
    assert torch.allclose(runs.losses[1], expected, atol=1e-5)
    attention_only = train_facts_models(corpus, seeds=(0,), d_ff=0, d_model=8, steps=2, every=1)
    assert attention_only.models[0].blocks[0].mlp is None
    with pytest.raises(ValueError, match="seeds 不能为空"):
        train_facts_models(corpus, seeds=())


def test_value_hits_counts_answers_among_values():
    memories = [NeuronMemory(0, ["猫吃"], "桃", "桃米"), NeuronMemory(1, ["狗怕"], "米", "草")]
    assert value_hits(memories) == 0.5
    assert value_hits(memories, pairing=[1, 0]) == 0.5      # 0 gets "草", 1 gets "桃米": 米 hits
    assert value_hits(memories, pairing=[0, 0]) == 1.0
    with pytest.raises(ValueError, match="pairing 应有 2 个下标"):
        value_hits(memories, pairing=[0])


@pytest.mark.slow
def test_attention_only_catches_up_with_longer_training():
    # 第 7 章练习 4 的答案：没有 FFN 的模型训练 1000 步，召回率的中位数在 80% 以上
    corpus = facts_corpus(n_subjects=32, n_relations=8, seed=0)
    runs = train_facts_models(corpus, experiment_seeds(5), d_ff=0, steps=1000, every=1000)
    assert runs.recall[:, -1].median() > 0.8


# ---- attention maps, heads and the FFN switched off, the ablation summary ----

def noisy_model_and_corpus(d_ff=None):
    corpus = facts_corpus(8, 4)
    torch.manual_seed(0)
    model = TinyGPT(facts_gpt_config(corpus, d_ff=d_ff)).eval()
    with torch.no_grad():  # large enough weights that every head matters
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.2)
    return model, corpus


IDX = torch.randint(0, 20, (3, 9), generator=torch.Generator().manual_seed(1))


def test_attention_maps_are_the_first_blocks_weights():
    model, _ = noisy_model_and_corpus()
    block = model.blocks[0]
    with torch.no_grad():
        x = model.tok(IDX) + model.pos(torch.arange(9))
        expected = block.attn.weights(block.ln_1(x))
    maps = attention_maps(model, IDX)
    assert maps.shape == (3, 4, 9, 9) and torch.equal(maps, expected)
    assert torch.allclose(maps.sum(-1), torch.ones(3, 4, 9))


def test_previous_token_weight_averages_the_first_subdiagonal():
    maps = torch.zeros(2, 3, 4, 4)
    maps[:, 0] = torch.eye(4).roll(-1, dims=1).tril()      # head 0: all on the previous token
    maps[:, 0, 0, 0] = 1.0
    maps[:, 1] = torch.eye(4)                              # head 1: all on itself
    maps[0, 2, 1, 0], maps[1, 2, 2, 1] = 1.0, 0.5          # head 2: 1.5 over 2 × 3 positions
    assert torch.allclose(previous_token_weight(maps), torch.tensor([1.0, 0.0, 0.25]))
    assert torch.allclose(previous_token_weight(maps, [2]), torch.tensor([1.0, 0.0, 0.25]))
    assert torch.allclose(previous_token_weight(maps, [1, 3]), torch.tensor([1.0, 0.0, 0.25]))
    with pytest.raises(ValueError, match=r"positions 应非空且在 1..3 之间，实际为 \[0\]"):
        previous_token_weight(maps, [0])
    with pytest.raises(ValueError, match=r"maps 的形状应为 \[..., n_heads, T, T\]"):
        previous_token_weight(torch.zeros(3, 4, 5))


def test_all_heads_off_leaves_only_the_output_bias():
    model, _ = noisy_model_and_corpus()
    zeroed, _ = noisy_model_and_corpus()
    with torch.no_grad():
        zeroed.blocks[0].attn.proj.weight.zero_()
        with heads_off(model, [0, 1, 2, 3]):
            off = model(IDX)
        assert torch.allclose(off, zeroed(IDX), atol=1e-6)
        with heads_off(model, [1]):
            one_off = model(IDX)
        on = model(IDX)                                   # the hook is gone again
    assert (one_off - on).abs().max() > 1e-3
    assert torch.equal(on, zeroed(IDX)) is False
    assert not model.blocks[0].attn.proj._forward_pre_hooks


def test_heads_off_with_a_fill_replaces_the_heads_slices():
    model, _ = noisy_model_and_corpus()
    proj = model.blocks[0].attn.proj
    fill = torch.randn(16, 32)
    with torch.no_grad(), heads_off(model, [2], fill=fill), \
            recorded(proj, which="input") as seen:
        model(IDX)
    (merged,) = seen
    assert torch.equal(merged[..., 16:24], fill[:9, 16:24].expand(3, 9, 8))
    with torch.no_grad():
        assert not torch.equal(merged[..., :16], torch.zeros(3, 9, 16))


def test_ffn_off_is_the_attention_only_computation():
    model, corpus = noisy_model_and_corpus()
    with torch.no_grad():
        with ffn_off(model):
            off = model(IDX)
        block = model.blocks[0]
        x = model.tok(IDX) + model.pos(torch.arange(9))
        x = x + block.attn(block.ln_1(x))
        assert torch.allclose(off, model.ln_f(x) @ model.tok.weight.T, atol=1e-6)
    assert not model.blocks[0].mlp._forward_hooks


def test_head_ablation_summarises_what_it_measured():
    model, corpus = noisy_model_and_corpus()
    a = head_ablation(model, corpus, threshold=0.3)
    assert a.subject_weight.shape == (4,) and a.without_head.shape == (4,)
    maps = attention_maps(model, fact_queries(corpus, context=2)[0])       # T = 10
    assert a.previous.shape == (4, 8)
    for t in range(1, 9):
        assert torch.allclose(a.previous[:, t - 1], previous_token_weight(maps, [t]))
    assert a.recall == pytest.approx(fact_recall(model, corpus))
    assert a.subject_heads == [h for h in range(4) if a.subject_weight[h] > 0.3]
    assert a.top_head == int(a.subject_weight.argmax())
    assert torch.allclose(a.lost, a.recall - a.without_head)
    with heads_off(model, a.subject_heads):
        assert a.without_subject_heads == pytest.approx(fact_recall(model, corpus))
    assert 0.0 <= a.mean_subject_heads <= 1.0
    with ffn_off(model):
        assert a.without_ffn == pytest.approx(fact_recall(model, corpus))
    with recorded(model.blocks[0].mlp) as out:
        model(fact_queries(corpus, context=2)[0])
    with ffn_off(model, fill=out[0].mean(0)):                   # the FFN's mean, per position
        assert a.mean_ffn == pytest.approx(fact_recall(model, corpus))


def test_ablation_bad_arguments_raise_value_error():
    model, corpus = noisy_model_and_corpus()
    with pytest.raises(ValueError, match=r"头的编号应在 0..3 之间，实际有 \[4\]"), \
            heads_off(model, [4]):
        pass
    with pytest.raises(ValueError, match="layer 应在 0..0 之间，实际为 1"):
        attention_maps(model, IDX, layer=1)
    with pytest.raises(ValueError, match="threshold 应在"):
        head_ablation(model, corpus, threshold=1.5)
    with pytest.raises(ValueError, match="context 应为正整数"):
        head_ablation(model, corpus, context=0)
    attention_only, _ = noisy_model_and_corpus(d_ff=0)
    with pytest.raises(ValueError, match="没有 FFN"), ffn_off(attention_only):
        pass


def test_roles_follow_the_sentences():
    assert [role_of(t) for t in range(10)] == ["subject", "relation", "object", "period"] * 2 \
        + ["subject", "relation"]


def test_swapped_subject_weight_reads_the_question_with_an_object_before_the_relation():
    model, corpus = noisy_model_and_corpus()
    prompts, _ = fact_queries(corpus, context=2)
    objects = torch.tensor(corpus.encode("".join(sorted(set(corpus.facts.values())))))
    prompts[:, -2] = objects[torch.arange(len(prompts)) % len(objects)]
    expected = attention_maps(model, prompts)[:, 3, -1, -2].mean().item()
    assert swapped_subject_weight(model, corpus, head=3) == pytest.approx(expected)
    assert swapped_subject_weight(model, corpus, head=3) != pytest.approx(
        attention_maps(model, fact_queries(corpus, context=2)[0])[:, 3, -1, -2].mean().item())


def test_greedy_cycle_finds_where_the_text_repeats():
    model, corpus = noisy_model_and_corpus()
    prompt = corpus.encode(corpus.sentences()[0][:2])
    ids, start, period = greedy_cycle(model, prompt, 60)
    assert ids == model.generate(prompt, 60, top_k=1) and len(ids) == 62
    if period is None:
        pytest.fail("a random 16-token window model should cycle within 60 tokens")
    first = start - 1                                       # 1-based → index
    assert all(ids[j] == ids[j - period] for j in range(first + period, len(ids)))
    assert first == 0 or ids[first - 1] != ids[first - 1 + period]   # and not earlier
