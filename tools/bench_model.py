"""TinyGPT against transformers' GPT2LMHeadModel with the same weights (make bench).

For each config: the median over several runs of one training step's forward + backward
(each run averages a few steps after a warm-up), the ratio ours/theirs (target ≤ 1.0), and
TinyGPT's training throughput in tokens/s at chapter 7's config, and how much the KV cache
speeds up generation (greedy, median over runs, for contexts up to T = 256). One thread, as in
the notebooks.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from onelayer.block import BlockConfig
from onelayer.chapters.ch07_tiny_gpt import FACTS_BATCH, facts_gpt_config
from onelayer.data import FactsCorpus, facts_corpus
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.reference import gpt2_lm_head_model
from onelayer.train import train_adamw, train_lm


def step_timer(forward, params, x, y, steps: int = 10):
    """A function returning the mean seconds of one forward+backward over ``steps`` steps."""
    def step():
        torch.autograd.grad(lm_loss(forward(x), y), params)

    def timed() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - start) / steps

    for _ in range(3):
        step()  # warm-up
    return timed


def compare(name: str, config: GPTConfig, batch: int, runs: int) -> None:
    """Time ours and theirs alternately, so a busy machine slows both alike."""
    torch.manual_seed(0)
    ours = TinyGPT(config).train()
    theirs = gpt2_lm_head_model(ours).train()
    x, y = torch.randint(0, config.vocab_size, (2, batch, config.block_size))
    time_ours = step_timer(ours, list(ours.parameters()), x, y)
    time_theirs = step_timer(lambda i: theirs(i).logits, list(theirs.parameters()), x, y)
    pairs = [(time_ours(), time_theirs()) for _ in range(runs)]
    t_ours = statistics.median(a for a, _ in pairs)
    t_theirs = statistics.median(b for _, b in pairs)
    ratio = statistics.median(a / b for a, b in pairs)
    block = config.block
    print(f"{name}: batch {batch} × {config.block_size} 词元，{config.n_layers} 层，"
          f"d_model={block.d_model}，d_ff={block.ffn_width}，fused={block.fused}")
    print(f"  一步前向+反向（{runs} 次的中位数）：TinyGPT {t_ours * 1e3:.2f} ms，"
          f"GPT2LMHeadModel {t_theirs * 1e3:.2f} ms，比值（逐次比值的中位数）{ratio:.2f}×")


def training_throughput(config: GPTConfig, corpus: FactsCorpus, runs: int,
                        steps: int = 50) -> None:
    """Tokens per second of ``train_lm`` (batches, forward, backward and Adam), median."""
    rates = []
    for _ in range(runs):
        model = TinyGPT(config)
        start = time.perf_counter()
        train_lm(model, corpus, steps, batch_size=FACTS_BATCH)
        rates.append(steps * FACTS_BATCH * config.block_size / (time.perf_counter() - start))
    print(f"第 7 章的训练（train_lm，含取批与 Adam，{runs} 次的中位数）："
          f"{statistics.median(rates):,.0f} 词元/秒")


def songci_throughput(runs: int, steps: int = 20, members: int = 5) -> None:
    """Tokens per second of chapter 10's training: ``members`` models trained side by side with
    ``train_adamw`` on 浣溪沙 (batches, forward, backward, clipping and AdamW), median."""
    from onelayer.chapters.ch10_songci import BATCH_SIZE, SEQ_LEN, songci_gpt_config, tune_subset
    from onelayer.songci import CiCorpus, char_vocab, ci_text, load_songci, split_by_ci
    from onelayer.stack import TinyGPTStack

    cis = tune_subset(split_by_ci(load_songci())[0], ["浣溪沙"])
    vocab = char_vocab([ci_text(ci) for ci in cis], min_count=3)
    corpus = CiCorpus(cis, vocab)
    rates = []
    for _ in range(runs):
        stack = TinyGPTStack([TinyGPT(songci_gpt_config(vocab, SEQ_LEN)) for _ in range(members)])
        start = time.perf_counter()
        train_adamw(stack, corpus, steps, 3e-3, 5, BATCH_SIZE, SEQ_LEN, seed=list(range(members)))
        rates.append(steps * members * BATCH_SIZE * SEQ_LEN / (time.perf_counter() - start))
    print(f"第 10 章的训练（train_adamw，{members} 个模型并排，{runs} 次的中位数）："
          f"{statistics.median(rates):,.0f} 词元/秒")


def kv_cache_speedup(runs: int, lengths: tuple[int, ...] = (64, 128, 256)) -> None:
    """Seconds to generate a sequence of T tokens from a 1-token prompt, with and without the
    KV cache (alternately, median of ``runs``), and their ratio; the tokens must agree."""
    config = GPTConfig(vocab_size=64, block_size=max(lengths), n_layers=2,
                       block=BlockConfig(d_model=64, n_heads=4, fused=True))
    torch.manual_seed(0)
    model = TinyGPT(config).eval()

    def timed(t: int, use_cache: bool) -> tuple[float, list[int]]:
        start = time.perf_counter()
        tokens = model.generate([1], t - 1, top_k=1, use_cache=use_cache)
        return time.perf_counter() - start, tokens

    print(f"KV 缓存：{config.n_layers} 层，d_model={config.block.d_model}，贪心生成到 T 个词元"
          f"（{runs} 次的中位数）")
    for t in lengths:
        pairs = []
        for _ in range(runs):
            (with_cache, a), (without, b) = timed(t, True), timed(t, False)
            if a != b:
                raise AssertionError(f"T={t}：有缓存与无缓存生成的词元不同")
            pairs.append((with_cache, without))
        t_cached = statistics.median(a for a, _ in pairs)
        t_plain = statistics.median(b for _, b in pairs)
        ratio = statistics.median(b / a for a, b in pairs)
        print(f"  T = {t:3d}：无缓存 {t_plain * 1e3:7.1f} ms，有缓存 {t_cached * 1e3:6.1f} ms，"
              f"加速 {ratio:.1f}×（逐次比值的中位数）")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    corpus = facts_corpus(32, 8)
    chapter = facts_gpt_config(corpus)
    compare("第 7 章的配置", chapter, FACTS_BATCH, args.runs)
    written_out = replace(chapter, block=replace(chapter.block, fused=False))
    compare("同上，但用手写的 LayerNorm 与 GELU", written_out, FACTS_BATCH, args.runs)
    larger = GPTConfig(vocab_size=512, block_size=128, n_layers=4,
                       block=BlockConfig(d_model=128, n_heads=4, fused=True))
    compare("更大一些的配置", larger, 8, args.runs)
    training_throughput(chapter, corpus, args.runs)
    songci_throughput(min(args.runs, 3))
    kv_cache_speedup(args.runs)


if __name__ == "__main__":
    main()
