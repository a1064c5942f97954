"""Chapter 7's experiments: recalling facts, the FFN read as a key-value memory."""

import pytest
import torch

from onelayer import reference
from onelayer.block import BlockConfig
from onelayer.chapters.ch07_tiny_gpt import (
    FACTS_BATCH,
    NeuronMemory,
    fact_queries,
    fact_recall,
    facts_gpt_config,
    ffn_activations,
    key_value_probe,
    train_facts_models,
    value_hits,
)
from onelayer.data import facts_corpus
from onelayer.model import GPTConfig, TinyGPT
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
