"""Looking inside a model without changing it: hooks, gradient norms, stream sizes, memory.

Every probe leaves the model as it found it: hooks are removed, train/eval mode restored,
``.grad`` fields untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from onelayer.checks import check_choice


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """Inside the ``with`` block the model is in eval mode (dropout off); afterwards its
    previous mode is back."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


@contextmanager
def recorded(module: nn.Module, which: str = "output") -> Iterator[list[torch.Tensor]]:
    """Inside the ``with`` block, every forward call of ``module`` appends its output
    (``which="output"``) or its first input (``which="input"``), detached."""
    check_choice("which", which, ("input", "output"))
    seen: list[torch.Tensor] = []

    def hook(_module: nn.Module, args: tuple, out: torch.Tensor) -> None:
        seen.append((args[0] if which == "input" else out).detach())

    handle = module.register_forward_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def weight_grad_norms(loss: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """‖∂loss/∂W‖ (Frobenius) of each weight in ``weights``, shape [len(weights)], float64.

    Uses ``torch.autograd.grad``, so ``.grad`` fields stay untouched; the norm is taken in
    float64, because squaring a float32 entry of 1e-24 would underflow to 0.
    """
    grads = torch.autograd.grad(loss, list(weights))
    return torch.stack([g.double().norm() for g in grads])


@torch.no_grad()
def stream_rms(states: Sequence[torch.Tensor]) -> torch.Tensor:
    """Root mean square of each state of a residual stream, shape [len(states)]."""
    return torch.stack([h.pow(2).mean().sqrt() for h in states])


def saved_activation_bytes(run: Callable[[], object], module: nn.Module) -> int:
    """Bytes of the tensors that ``run()`` keeps for the backward pass, ``module``'s own
    parameters not counted; each storage is counted once."""
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(storages.values())
