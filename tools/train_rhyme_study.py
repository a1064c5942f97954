"""Chapter 10's rhyme study: the longer model's recipe (tools/train_songci_gpt.py) with one
setting changed at a time, three seeds each, kept in models/rhyme-study/<arm>-<seed>/ like
models/songci-gpt/. The chapter samples every checkpoint and measures how often it rhymes.

Arms (``RHYME_ARMS`` in onelayer.chapters.ch10_longer):
- table: the recipe as it is (learned position table); its seed 0 is models/songci-gpt/ itself;
- rope:  RoPE (chapter 9) in place of the table, so "the character 8 back" is one offset
         wherever it is.

Two runs at a time, one thread each (for a model this small that is faster on 2 cores than one
run on both); about 13 minutes a pair. A checkpoint already there is kept, so an interrupted
study resumes where it stopped.

    .venv/bin/python tools/train_rhyme_study.py          # about 40 minutes on 2 cores
"""

import time
from multiprocessing import Pool

import torch

from onelayer.chapters.ch10_longer import (
    RHYME_ARMS,
    RHYME_SEEDS,
    long_corpus,
    rhyme_study_folder,
    save_songci_gpt,
    train_long_songci,
)
from onelayer.songci import load_songci


def train_one(arm_seed: tuple[str, int]) -> str:
    arm, seed = arm_seed
    torch.set_num_threads(1)
    run = RHYME_ARMS[arm](seed)
    train, valid = long_corpus(load_songci(), run)
    start = time.perf_counter()
    model, log = train_long_songci(train, valid, run)
    seconds = time.perf_counter() - start
    save_songci_gpt(model, train.vocab, run, log, seconds, rhyme_study_folder(arm, seed))
    return f"{arm} 种子 {seed}：{seconds / 60:.1f} 分钟，最后的验证损失 {log['valid_loss'][-1]:.3f}"


def main() -> None:
    todo = [(arm, seed) for arm in RHYME_ARMS for seed in RHYME_SEEDS
            if not (rhyme_study_folder(arm, seed) / "weights.pt").is_file()]
    print(f"要训练 {len(todo)} 个模型：{todo}")
    with Pool(2) as pool:
        for line in pool.imap_unordered(train_one, todo):
            print(line, flush=True)


if __name__ == "__main__":
    main()
