"""Train chapter 10's longer model and keep it in models/songci-gpt/ (weights in float16, the
vocabulary, the settings, the loss log and the time it took). The chapter loads it; a slow test
re-runs its first steps and compares them with the log.

    .venv/bin/python tools/train_songci_gpt.py             # about 11 minutes on 2 cores
"""

import time

import torch
from tqdm import tqdm

from onelayer.chapters.ch10_longer import LongRun, long_corpus, save_songci_gpt, train_long_songci
from onelayer.songci import load_songci


def main() -> None:
    torch.set_num_threads(2)
    run = LongRun()
    train, valid = long_corpus(load_songci(), run)
    print(f"训练集 {len(train)} 首、{len(train.ids):,} 个字符；验证集 {len(valid)} 首；"
          f"词表 {len(train.vocab)} 个字")
    start = time.perf_counter()
    model, log = train_long_songci(train, valid, run, progress=tqdm)
    seconds = time.perf_counter() - start
    save_songci_gpt(model, train.vocab, run, log, seconds)
    print(f"{seconds / 60:.1f} 分钟；验证损失 "
          + "、".join(f"第 {s} 步 {v:.3f}" for s, v in zip(log["valid_step"], log["valid_loss"])))


if __name__ == "__main__":
    main()
