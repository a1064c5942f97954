"""Rotary position embedding, RoPE (Su et al. 2021, RoFormer).

A query or key at position t has its d_head dimensions taken as d_head/2 pairs (a, b); pair j
is turned by the angle t·ω_j:

    (a, b) ↦ (a·cos tω_j − b·sin tω_j,  b·cos tω_j + a·sin tω_j),    ω_j = θ^(−2j/d_head)

A rotation keeps each pair's length, and turning q by mω and k by nω changes their dot product
only through (m − n)ω: after the rotation, a score q_m·k_n depends on where the two tokens
are only through their distance m − n.

Which dimensions form pair j is a convention. The RoFormer paper and Meta's LLaMA code pair
2j with 2j + 1 (``apply_rope_interleaved``); Hugging Face's Llama and Qwen pair j with
j + d_head/2 (``rotate_half``, ``apply_rope``), which is what onelayer's attention uses, so its
weights load into those models unchanged. The two differ by a permutation of the dimensions
(``interleaved_to_half``).
"""

from __future__ import annotations

import torch

from onelayer.checks import check_positive_int


def check_d_head(d_head: int) -> int:
    """Return ``d_head`` if it is a positive even int (the rotation works on pairs)."""
    check_positive_int("d_head", d_head)
    if d_head % 2:
        raise ValueError(f"旋转位置编码按两维一对旋转，d_head 应为偶数，实际为 {d_head}")
    return d_head


def check_theta(theta: float) -> float:
    """Return ``theta`` (the base θ of the angular speeds) if it is a number > 0."""
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
        raise ValueError(f"rope_theta 应为正数，实际为 {theta!r}")
    return float(theta)


def rope_frequencies(d_head: int, theta: float = 10000.0) -> torch.Tensor:
    """The angular speed of each pair, ω_j = θ^(−2j/d_head) for j = 0 … d_head/2 − 1: [d_head/2].

    ω_0 = 1 radian per position; the later pairs turn ever more slowly."""
    check_d_head(d_head)
    theta = check_theta(theta)
    two_j = torch.arange(0, d_head, 2, dtype=torch.float32)  # 2j
    return 1.0 / theta ** (two_j / d_head)                   # ω_j = 1 / θ^(2j/d_head)


def rope_angles(positions: torch.Tensor, d_head: int,
                theta: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) of the angles t·ω_j at ``positions`` [T], each [T, d_head], in the half-split
    layout: the T × d_head/2 angles, then the same angles again (dimension j and j + d_head/2
    form pair j)."""
    if positions.dim() != 1:
        raise ValueError(f"positions 应为一维张量 [T]，实际形状为 {list(positions.shape)}")
    omega = rope_frequencies(d_head, theta).to(positions.device)
    angles = positions.float()[:, None] * omega[None, :]     # t·ω_j, [T, d_head/2]
    angles = torch.cat([angles, angles], dim=-1)             # [T, d_head]：前后两半同一组角
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(a, b) → (−b, a), a and b the two halves of the last dimension."""
    check_d_head(x.shape[-1] if x.dim() else 0)
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` [..., T, d_head] by the angles of ``rope_angles`` (each [T, d_head]):
    x·cos + rotate_half(x)·sin, i.e. a·cos − b·sin in the first half, b·cos + a·sin in the
    second."""
    if cos.shape != sin.shape or cos.dim() != 2 or x.dim() < 2 or x.shape[-2:] != cos.shape:
        raise ValueError(f"x 应为 [..., T, d_head]，cos 与 sin 为同样的 [T, d_head]，实际 x 为 "
                         f"{list(x.shape)}，cos 为 {list(cos.shape)}，sin 为 {list(sin.shape)}")
    return x * cos + rotate_half(x) * sin


def apply_rope_interleaved(x: torch.Tensor, positions: torch.Tensor,
                           theta: float = 10000.0) -> torch.Tensor:
    """The RoFormer paper's pairing: dimension 2j and 2j + 1 form pair j. x [..., T, d_head],
    ``positions`` [T]."""
    if x.dim() < 2 or positions.shape != x.shape[-2:-1]:
        raise ValueError(f"x 应为 [..., T, d_head]、positions 为 [T]，实际 x 为 "
                         f"{list(x.shape)}，positions 为 {list(positions.shape)}")
    d_head = check_d_head(x.shape[-1])
    angles = positions.float()[:, None] * rope_frequencies(d_head, theta).to(x.device)
    cos, sin = angles.cos(), angles.sin()                    # [T, d_head/2]
    a, b = x[..., 0::2], x[..., 1::2]                        # 每对的两维：2j 与 2j + 1
    turned = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1)
    return turned.flatten(-2)                                # 放回 2j、2j + 1 的位置


def interleaved_to_half(d_head: int) -> torch.Tensor:
    """The permutation ``perm`` [d_head] with apply_rope(x[..., perm], …) equal to
    apply_rope_interleaved(x, …)[..., perm]: the even dimensions, then the odd ones, so that
    interleaved pair (2j, 2j + 1) lands on the half-split pair (j, j + d_head/2)."""
    check_d_head(d_head)
    return torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])
