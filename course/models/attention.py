"""Self-attention, multi-head attention and positional encodings (Unit 5), for Units 5 to 8.

Notation (the course's notation page; seeds 001 and 003). X (n, d_model), one row per token:

    Q = X W^Qᵀ,  K = X W^Kᵀ,  V = X W^Vᵀ                  queries, keys, values
    A = softmax(Q Kᵀ / √d_k + M)                           M = 0 where allowed, −∞ where masked
    Z = A V
    head_r = Attention(Q_r, K_r, V_r)                      Q_r: columns r·d_k .. (r+1)·d_k − 1
    MultiHead(X) = Concat(head_1, ..., head_h) W^Oᵀ        d_k = d_v = d_model / h

Masks are boolean, True where a query may attend to a key ("allowed"), broadcast to
(B, h, n, m). Positional encodings: sinusoidal and learned vectors are added to the inputs;
ALiBi adds −m_r·|i − j| to head r's scores; RoPE rotates each query and key by its position.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "attention",
    "fused_attention",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "sinusoidal_encoding",
    "LearnedPositions",
    "alibi_slopes",
    "alibi_bias",
    "rope",
]


def _expect_fit(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    """The checks of :func:`attention` and :func:`fused_attention`: shapes that fit, and a key
    for every query."""
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"q (..., n, d_k), k (..., m, d_k), v (..., m, d_v) do not fit: "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if mask is not None and not bool(mask.any(-1).all()):
        raise ValueError("a query has no key it may attend to (a row of the mask is False)")


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Z = softmax(Q Kᵀ / √d_k + bias + M) V, and the weights A.

    q (..., n, d_k), k (..., m, d_k), v (..., m, d_v); mask broadcastable to (..., n, m), True
    where allowed; bias (an additive score, e.g. ALiBi) broadcastable to (..., n, m).
    Returns (Z (..., n, d_v), A (..., n, m)). A query with no allowed key is an error.
    """
    _expect_fit(q, k, v, mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., n, m)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """The Z of :func:`attention`, from PyTorch's fused kernel, without the weights A.

    ``F.scaled_dot_product_attention`` never writes the (n, m) score matrix out as a tensor of
    its own, which makes a training step of Lecture 8's GPT on windows of 256 characters about
    40% cheaper on a CPU. Training never reads A: ``course.models.transformer.fuse_attention``
    has a model's layers use this while they train; tests/course/test_attention.py checks that it
    gives attention()'s Z and gradients.
    """
    _expect_fit(q, k, v, mask)
    if bias is not None:  # one additive mask: the bias, and −∞ where masked
        mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def causal_mask(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(n, n) bool, True on and below the diagonal: position i may attend to j <= i.

    Made on ``device`` (the CPU by default): pass the device of the scores it will mask.
    """
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: torch.Tensor, m: int) -> torch.Tensor:
    """(B, 1, 1, m) bool, True at the real key positions j < lengths[b] (on lengths' device)."""
    return (torch.arange(m, device=lengths.device)[None, :] < lengths[:, None])[:, None, None, :]


class MultiHeadAttention(nn.Module):
    """h heads of scaled dot-product attention, with optional ALiBi bias or RoPE.

    forward(x, context=None, mask=None, bias=None): queries from x (B, n, d); keys and values
    from ``context`` (B, m, d), or from x itself (self-attention). With ``rope=True`` the
    queries and keys are rotated by their positions 0, 1, ... before the scores. With
    ``need_weights=False`` the heads come from :func:`fused_attention` and the weights
    returned are None.
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = True, rope: bool = False):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.use_rope = rope
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n, d_model) -> (B, h, n, d_k): head r gets columns r·d_k .. (r+1)·d_k − 1."""
        B, n, _ = x.shape
        return x.view(B, n, self.num_heads, self.d_k).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        context: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(output (B, n, d_model), weights (B, h, n, m), or None without need_weights)."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected (B, n, {self.d_model}), got {tuple(x.shape)}")
        context = x if context is None else context
        q, k, v = (
            self.split(self.W_q(x)),
            self.split(self.W_k(context)),
            self.split(self.W_v(context)),
        )
        if self.use_rope:
            q = rope(q, torch.arange(q.shape[-2], device=q.device))
            k = rope(k, torch.arange(k.shape[-2], device=k.device))
        if need_weights:
            z, weights = attention(q, k, v, mask, bias)  # (B, h, n, d_k)
        else:
            z, weights = fused_attention(q, k, v, mask, bias), None
        B, _, n, _ = z.shape
        return self.W_o(z.transpose(1, 2).reshape(B, n, self.d_model)), weights


def sinusoidal_encoding(
    n: int, d: int, base: float = 10000.0, device: torch.device | str | None = None
) -> torch.Tensor:
    """(n, d) float32 on ``device`` (the CPU by default): p_{i,2r} = sin(i ω_r),
    p_{i,2r+1} = cos(i ω_r), ω_r = base^(−2r/d)."""
    if d % 2:
        raise ValueError(f"d must be even (sine and cosine pairs), got {d}")
    # Computed in float64 on the CPU (MPS has no float64), so every device gets the same numbers.
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * omega[None, :]  # (n, d/2)
    encoding = torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(n, d).float()
    return encoding.to(device)


class LearnedPositions(nn.Module):
    """One learned vector per position, up to ``max_len``; added to the token embeddings."""

    def __init__(self, max_len: int, d: int) -> None:
        super().__init__()
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d)

    def forward(self, n: int) -> torch.Tensor:
        if n > self.max_len:
            raise ValueError(f"learned positions go up to {self.max_len}, got a length of {n}")
        return self.table.weight[:n]


def alibi_slopes(num_heads: int, device: torch.device | str | None = None) -> torch.Tensor:
    """m_r = 2^(−8r/h) for heads r = 1..h (Press et al.'s slopes for a power of two)."""
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, device=device) / num_heads)


def alibi_bias(n: int, slopes: torch.Tensor, m: int | None = None) -> torch.Tensor:
    """(h, n, m) additive scores −m_r·|i − j|: a penalty that grows with the distance."""
    m = n if m is None else m
    i, j = torch.arange(n, device=slopes.device), torch.arange(m, device=slopes.device)
    distance = (i[:, None] - j[None, :]).abs()  # (n, m)
    return -slopes[:, None, None] * distance[None]


def rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate each pair (x_{2r}, x_{2r+1}) of x (..., n, d) by the angle positions_i · θ_r.

    θ_r = base^(−2r/d). Then rope(q)_i · rope(k)_j depends on i − j and not on i and j.
    """
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"RoPE rotates pairs: the last size must be even, got {d}")
    # The angles in float64 on the CPU (MPS has no float64); cos and sin then go to x's device.
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = positions.cpu().to(torch.float64)[:, None] * theta[None, :]  # (n, d/2)
    cos, sin = angles.cos().to(x.device, x.dtype), angles.sin().to(x.device, x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., n, d/2)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2)
