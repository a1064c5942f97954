"""Hand-stacked ensembles against torch.func's stack_module_state + vmap (make bench).

Chapters 3 and 5 train many small models at once as one hand-stacked module
(``MLPEnsemble``, ``TinyGPTStack``). This measures one forward + backward step of each
against ``vmap(functional_call)`` over the real ``DeepMLP`` / ``TinyGPT`` and against a
plain loop over the members: median over several runs, one thread, as in the notebooks.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable

import torch
from torch.func import functional_call, stack_module_state

from onelayer.chapters.ch03_residual import MLPEnsemble, bce_loss, seeded_mlp
from onelayer.chapters.ch08_norm_position import tiny_lm
from onelayer.data import facts_corpus, two_spirals
from onelayer.model import TinyGPT, lm_loss
from onelayer.stack import TinyGPTStack


def median_ms(step: Callable[[], None], runs: int = 7, repeat: int = 5) -> float:
    step()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(repeat):
            step()
        times.append((time.perf_counter() - start) / repeat)
    return 1000 * statistics.median(times)


def vmapped(members: list[torch.nn.Module], in_dims: tuple) -> Callable:
    """vmap(functional_call) over the stacked weights of ``members``; returns (params, fn)."""
    params, buffers = stack_module_state(members)
    base = copy.deepcopy(members[0]).to("meta")
    fn = torch.vmap(lambda p, b, *x: functional_call(base, (p, b), x), in_dims=(0, 0, *in_dims))
    return params, lambda *x: fn(params, buffers, *x)


def mlp_row(depth: int, seeds: int = 8) -> dict[str, float]:
    x, y = two_spirals()
    groups = {v: [seeded_mlp(v, depth, s) for s in range(seeds)]
              for v in ("residual", "plain", "plain_he")}
    stack = MLPEnsemble([m for ms in groups.values() for m in ms])
    # vmap needs one module structure: shortcut on and shortcut off are two calls
    calls = [vmapped(ms, (None,)) for ms in (groups["residual"],
                                              groups["plain"] + groups["plain_he"])]
    loop = [m for ms in groups.values() for m in ms]

    def step_vmap() -> None:
        for params, fn in calls:
            torch.autograd.grad(bce_loss(fn(x), y).sum(), list(params.values()))

    return {
        "stacked": median_ms(lambda: torch.autograd.grad(
            bce_loss(stack(x), y).sum(), list(stack.parameters()))),
        "vmap": median_ms(step_vmap),
        "loop": median_ms(lambda: [torch.autograd.grad(bce_loss(m(x), y), list(m.parameters()))
                                   for m in loop]),
    }


def gpt_row(n_layers: int = 12, members: int = 8) -> dict[str, float]:
    corpus = facts_corpus()
    models = [tiny_lm(corpus, n_layers, "post", s, 32, 4, "xavier", 16) for s in range(members)]
    stack = TinyGPTStack(models)
    x, y = (torch.randint(0, len(corpus.vocab), (members, 16, 16)) for _ in range(2))
    check = TinyGPT.check_tokens
    TinyGPT.check_tokens = lambda self, idx: idx  # its value checks cannot run under vmap
    try:
        params, fn = vmapped(models, (0,))
        for p in params.values():
            p.requires_grad_(True)
        vmap_ms = median_ms(lambda: torch.autograd.grad(lm_loss(fn(x), y).sum(),
                                                        list(params.values())))
    finally:
        TinyGPT.check_tokens = check
    return {
        "stacked": median_ms(lambda: torch.autograd.grad(lm_loss(stack(x), y).sum(),
                                                         list(stack.parameters()))),
        "vmap": vmap_ms,
        "loop": median_ms(lambda: [torch.autograd.grad(lm_loss(m(x[i]), y[i]),
                                                       list(m.parameters()))
                                   for i, m in enumerate(models)]),
    }


def main() -> None:
    torch.set_num_threads(1)
    rows = {"MLPEnsemble, 24 个 8 层网络": mlp_row(8),
            "MLPEnsemble, 24 个 32 层网络": mlp_row(32),
            "TinyGPTStack, 8 个 12 块模型": gpt_row()}
    print("一步前向 + 反向（毫秒，7 次的中位数）     手工堆叠     vmap     逐个循环   vmap/堆叠")
    for name, r in rows.items():
        print(f"{name:<30} {r['stacked']:9.1f} {r['vmap']:9.1f} {r['loop']:11.1f} "
              f"{r['vmap'] / r['stacked']:9.2f}×")


if __name__ == "__main__":
    main()
