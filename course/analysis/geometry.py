"""The geometry of contextual representations (Unit 7): anisotropy, layer by layer.

Ethayarajh (2019) measured how "narrow" the cone of a model's token vectors is by the
average cosine similarity between the representations of random pairs of tokens:

    anisotropy = E_{(i, j) random, i ≠ j} [ cos(h_i, h_j) ],   cos(u, v) = uᵀv / (‖u‖ ‖v‖)   (GEO-1)

Random directions in d dimensions give about 0 (± 1/√d); vectors that share a large common
component give close to 1. The contextual models in that paper reach values near 1 in upper
layers: any two words look alike by cosine, so similarities must be read against this
baseline. :func:`layer_anisotropy` measures it for every layer of a model's ``hidden_states``
on the same random pairs of real (non-padding) tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from course.checks import expect_dtype, expect_shape

__all__ = ["random_token_pairs", "anisotropy", "layer_anisotropy"]


def random_token_pairs(
    attention_mask: torch.Tensor, num_pairs: int, generator: torch.Generator
) -> torch.Tensor:
    """(num_pairs, 2) flat indices into the B·T positions: two different real tokens each.

    ``attention_mask`` (B, T) marks real tokens with 1 (or True). Pairs are drawn uniformly
    with replacement among ordered pairs of distinct real positions, across sentences.
    """
    expect_shape(attention_mask, ("B", "T"), "attention_mask")
    real = attention_mask.reshape(-1).bool().nonzero().squeeze(1)  # (N,) flat positions
    if len(real) < 2:
        raise ValueError(f"attention_mask: need at least 2 real tokens, got {len(real)}")
    if num_pairs < 1:
        raise ValueError(f"num_pairs: expected a positive int, got {num_pairs}")
    first = torch.randint(len(real), (num_pairs,), generator=generator)
    # A second index that differs from the first: shift by 1 .. N−1 around the circle.
    shift = torch.randint(1, len(real), (num_pairs,), generator=generator)
    second = (first + shift) % len(real)
    return torch.stack([real[first], real[second]], 1)


def anisotropy(states: torch.Tensor, pairs: torch.Tensor) -> float:
    """Rule (GEO-1): the mean cosine of the vector pairs ``pairs`` (P, 2) of ``states``.

    ``states`` (B, T, d) floats; ``pairs`` holds flat indices into the B·T positions, as
    :func:`random_token_pairs` returns them.
    """
    expect_shape(states, ("B", "T", "d"), "states")
    expect_dtype(states, "f", "states")
    expect_shape(pairs, (None, 2), "pairs")
    flat = states.detach().reshape(-1, states.shape[-1]).double()  # (B·T, d)
    if int(pairs.max()) >= len(flat) or int(pairs.min()) < 0:
        raise ValueError(f"pairs: indices must be in [0, {len(flat)})")
    u, v = flat[pairs[:, 0]], flat[pairs[:, 1]]  # (P, d) each
    cos = (u * v).sum(1) / (u.norm(dim=1) * v.norm(dim=1)).clamp(min=1e-12)
    return float(cos.mean())


def layer_anisotropy(
    hidden_states: Sequence[torch.Tensor],
    attention_mask: torch.Tensor,
    num_pairs: int = 2000,
    seed: int = 0,
) -> list[float]:
    """Anisotropy of each layer's states (h^(0) .. h^(L)), on the same random token pairs."""
    if not hidden_states:
        raise ValueError("hidden_states: expected at least one (B, T, d) tensor")
    B, T = attention_mask.shape[:2] if attention_mask.dim() == 2 else (None, None)
    for k, h in enumerate(hidden_states):
        expect_shape(h, (B, T, None), f"hidden_states[{k}]")
    pairs = random_token_pairs(attention_mask, num_pairs, torch.Generator().manual_seed(seed))
    return [anisotropy(h, pairs) for h in hidden_states]
