"""``setup()``: the one call at the top of every chapter."""

from __future__ import annotations

import random

import numpy as np
import torch

from onelayer.plotting import use_book_style


def setup(seed: int = 0, threads: int = 1, precision: int = 4) -> None:
    """Make a notebook reproducible and readable.

    Seeds Python, NumPy and PyTorch; fixes the thread count (results and speed do not
    depend on the machine's core count); prints tensors at ``precision`` decimals; sets
    the figure style with a CJK font when one is installed.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.set_printoptions(precision=precision, sci_mode=False)
    np.set_printoptions(precision=precision, suppress=True)
    use_book_style()
