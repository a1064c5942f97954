"""A deep MLP made of FFN layers, with or without shortcuts (chapters 3 and 4's network).

embed ``Linear(d_in, d_model)`` → ``n_layers`` × (h ← h + FFN(h), or h ← FFN(h)) → head;
with ``norm=True`` each FFN reads LayerNorm(h) instead of h (chapter 4).
"""

from __future__ import annotations

import torch
from torch import nn

from onelayer.checks import check_choice, check_input, check_positive_int
from onelayer.ffn import FeedForward
from onelayer.norms import LayerNorm
from onelayer.residual import residual_add

MLP_INITS = ("default", "he")


def he_init_(ffn: FeedForward) -> FeedForward:
    """Variance-preserving init for a ReLU FFN: W1 ~ N(0, 2/d_model), W2 ~ N(0, 1/d_ff).

    Uses ``nn.init.kaiming_normal_`` (gain √2 before ReLU, 1 after it); biases are zeroed.
    """
    nn.init.kaiming_normal_(ffn.w1.weight, nonlinearity="relu")
    nn.init.kaiming_normal_(ffn.w2.weight, nonlinearity="linear")
    for layer in (ffn.w1, ffn.w2):
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return ffn


class DeepMLP(nn.Module):
    """embed ``Linear(d_in, d_model)`` → ``n_layers`` FFN layers → head ``Linear(d_model, d_out)``.

    With ``shortcut=True`` each layer updates the stream as h ← h + FFN(h); without it,
    h ← FFN(h). Both versions have exactly the same parameters, so one seed gives both the
    same initial weights. ``init="default"`` keeps PyTorch's ``nn.Linear`` init;
    ``init="he"`` re-initialises the FFN layers with ``he_init_``. ``norm=True`` puts a
    LayerNorm at the entrance of every layer: h ← h + FFN(LN(h)), or h ← FFN(LN(h)). Its
    γ = 1, β = 0 draw no random numbers, so a seed gives the FFN weights of the network
    without norms.
    """

    def __init__(
        self,
        n_layers: int,
        d_model: int = 16,
        d_ff: int | None = None,
        shortcut: bool = True,
        init: str = "default",
        d_in: int = 2,
        d_out: int = 1,
        activation: str = "relu",
        norm: bool = False,
    ) -> None:
        super().__init__()
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.d_model = check_positive_int("d_model", d_model)
        self.d_ff = check_positive_int("d_ff", d_model if d_ff is None else d_ff)
        self.d_in = check_positive_int("d_in", d_in)
        self.shortcut = bool(shortcut)
        self.init = check_choice("init", init, MLP_INITS)
        self.embed = nn.Linear(d_in, d_model)
        self.layers = nn.ModuleList(
            FeedForward(d_model, self.d_ff, activation=activation) for _ in range(n_layers)
        )
        self.head = nn.Linear(d_model, check_positive_int("d_out", d_out))
        self.norms = nn.ModuleList(LayerNorm(d_model) for _ in range(n_layers)) if norm else None
        if init == "he":
            for layer in self.layers:
                he_init_(layer)

    def stream(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The stream h after the embedding and after each FFN layer (n_layers + 1 tensors)."""
        check_input(x, self.d_in, self.embed.weight.dtype, "d_in")
        h = self.embed(x)
        states = [h]
        for i, ffn in enumerate(self.layers):
            u = self.norms[i](h) if self.norms is not None else h  # LN(h) 或 h
            h = residual_add(h, ffn(u)) if self.shortcut else ffn(u)  # h + f(u) 或 f(u)
            states.append(h)
        return states

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stream(x)[-1])

    def extra_repr(self) -> str:
        return f"shortcut={self.shortcut}, init={self.init!r}, norm={self.norms is not None}"
