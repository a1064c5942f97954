"""Chapter 10's rhyme study: the longer model's recipe (tools/train_songci_gpt.py) with one
setting changed at a time, three seeds each, kept in models/rhyme-study/<arm>-<seed>/ like
models/songci-gpt/. The chapter samples every checkpoint and measures how often it rhymes.

Arms (``RHYME_ARMS`` in onelayer.chapters.ch10_longer; the changes in ch10_rhyme):
- table:    the recipe as it is (learned position table); its seed 0 is models/songci-gpt/;
- rope:     RoPE (chapter 9) in place of the table, so "the character 8 back" is one offset
            wherever it is;
- classes:  each character's 词林正韵 classes as an embedding added to its token embedding;
- weighted: from step 1500 on, the loss at line ends that rhyme with the first line × 10;
- classes+weighted, classes+weighted3 (× 3): both;
- reversed: each line written end first;
- place, classes+place: with each token, the next one's countdown to its line's end and whether
            it ends a rhyme slot (SongNet's symbols; ch10_place), alone and with the classes;
- shi:      a quarter of the training ci are 近体诗 rhymed on 平 (make jintishi first).

Two runs at a time, one thread each (for a model this small that is faster on 2 cores than one
run on both); 14 to 35 minutes a run (run.json records each; slower when the machine is
busy). A checkpoint already there is kept, so an interrupted study resumes where it
stopped. Name arms and seeds to train only those:

    .venv/bin/python tools/train_rhyme_study.py                          # every missing one
    .venv/bin/python tools/train_rhyme_study.py --arms classes+weighted --seeds 0 --jobs 1
"""

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", choices=list(RHYME_ARMS), default=list(RHYME_ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, choices=RHYME_SEEDS, default=RHYME_SEEDS)
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=2)
    args = parser.parse_args()
    todo = [(arm, seed) for arm in args.arms for seed in args.seeds
            if not (rhyme_study_folder(arm, seed) / "weights.pt").is_file()]
    print(f"要训练 {len(todo)} 个模型：{todo}", flush=True)
    with Pool(args.jobs) as pool:
        for line in pool.imap_unordered(train_one, todo):
            print(line, flush=True)


if __name__ == "__main__":
    main()
