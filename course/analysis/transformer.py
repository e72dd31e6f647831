"""Measurements on Transformers that return numbers (Lecture 6).

- :func:`attention_maps`: every attention weight a trained encoder–decoder computes for a
  batch (encoder self-attention, decoder self-attention and cross-attention, layer by layer),
  read with forward hooks so the model's code stays as it is.
- :func:`gradient_norms_by_depth`: how large the gradient is at the input of each layer of a
  deep stack of feed-forward sublayers, with and without residual connections, and with the
  LayerNorm after the residual sum (post-norm), before the sublayer (pre-norm) or absent.

The figures that show them are in ``course.viz.transformer``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from course.models.transformer import FeedForward, Seq2SeqTransformer

__all__ = ["NORM_PLACEMENTS", "attention_maps", "gradient_norms_by_depth"]

NORM_PLACEMENTS = ("post", "pre", "none")


@torch.no_grad()
def attention_maps(
    model: Seq2SeqTransformer, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor
) -> dict[str, list[torch.Tensor]]:
    """The attention weights of one teacher-forced pass, one tensor per layer.

    Returns {"encoder": [(B, h, m, m)], "decoder": [(B, h, T, T)], "cross": [(B, h, T, m)]},
    each list ordered from the bottom layer up. Weights at padded keys are exactly 0.
    """
    maps: dict[str, list[torch.Tensor]] = {"encoder": [], "decoder": [], "cross": []}
    hooks = []

    def keep(part: str):
        def hook(_module: nn.Module, _inputs: object, output: tuple[torch.Tensor, torch.Tensor]):
            maps[part].append(output[1].detach().clone())

        return hook

    body = model.transformer
    for layer in body.encoder_layers:
        hooks.append(layer.self_attn.register_forward_hook(keep("encoder")))
    for layer in body.decoder_layers:
        hooks.append(layer.self_attn.register_forward_hook(keep("decoder")))
        hooks.append(layer.cross_attn.register_forward_hook(keep("cross")))
    was_training = model.training
    try:
        model.eval()
        model(src, src_len, tgt_in)
    finally:
        model.train(was_training)
        for hook in hooks:
            hook.remove()
    return maps


def gradient_norms_by_depth(
    depth: int = 24,
    *,
    residual: bool = True,
    norm: str = "pre",
    d: int = 64,
    n: int = 32,
    seed: int = 0,
) -> np.ndarray:
    """‖∂L/∂x_l‖ at the input x_l of each layer l = 0..depth of a fresh stack, (depth + 1,).

    Each layer wraps a feed-forward sublayer F (width d, hidden 2d, torch's default init):

        residual, post-norm: x ← LN(x + F(x))     no residual, post-norm: x ← LN(F(x))
        residual, pre-norm:  x ← x + F(LN(x))     no residual, pre-norm:  x ← F(LN(x))
        residual, no norm:   x ← x + F(x)         no residual, no norm:   x ← F(x)

    The input is n random vectors of unit-variance entries and the loss is the mean of the
    top layer's output projected on a fixed random direction, so the numbers depend only on
    the stack. Index 0 is the bottom of the stack (furthest from the loss).
    """
    if depth < 1 or d < 1 or n < 1:
        raise ValueError(f"depth, d and n must be at least 1, got {depth}, {d}, {n}")
    if norm not in NORM_PLACEMENTS:
        raise ValueError(f"norm: expected one of {NORM_PLACEMENTS}, got {norm!r}")
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        sublayers = [FeedForward(d, 2 * d, dropout=0.0) for _ in range(depth)]
        norms = [nn.LayerNorm(d) for _ in range(depth)]
    x = torch.randn(n, d, generator=generator)
    direction = torch.randn(d, generator=generator)
    inputs = []
    for F, LN in zip(sublayers, norms, strict=True):
        x = x.detach().requires_grad_(True) if not inputs else x
        x.retain_grad()
        inputs.append(x)
        if norm == "pre":
            out = F(LN(x))
            x = x + out if residual else out
        else:
            out = x + F(x) if residual else F(x)
            x = LN(out) if norm == "post" else out
    x.retain_grad()
    inputs.append(x)
    (x @ direction).mean().backward()
    return np.array([float(z.grad.norm()) for z in inputs])
