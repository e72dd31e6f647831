"""XLNet's permutation language modelling, small and exact (Unit 8; Yang et al. 2019).

An autoregressive model factorises p(x) left to right. Any order z (a permutation of the
positions 1..T) gives another factorisation of the same joint distribution:

    log p(x) = Σ_t log p(x_{z_t} | x_{z_<t})        for every order z                  (XL-1)

XLNet trains one Transformer on all orders, sampling z, so that each position learns from
context on both sides while the model stays autoregressive. The order changes the masks, not
the positions of the tokens (the input stays in its natural order). Two streams run side by side:

    content stream  h_{z_t} sees x_{z_≤t}  (itself included): the representation passed on
    query stream    g_{z_t} sees x_{z_<t}  and the position z_t, but not x_{z_t}: it predicts it

:func:`permutation_masks` builds both masks; :func:`factorised_log_likelihood` computes (XL-1)
from an exact joint table, conditioning each token on what its query-stream row allows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["permutation_masks", "factorised_log_likelihood"]


def _check_order(order: Sequence[int]) -> list[int]:
    z = [int(i) for i in order]
    if sorted(z) != list(range(len(z))) or not z:
        raise ValueError(
            f"order: expected a permutation of the positions 0..T-1 (T >= 1), got {list(order)}"
        )
    return z


def permutation_masks(order: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(content, query) masks (T, T) bool for the factorisation order z: True = may attend.

    Row i is the query at position i, column j the key at position j (natural positions):
    content[i, j] = j comes no later than i in z; query[i, j] = j comes strictly before i.
    """
    z = _check_order(order)
    rank = torch.empty(len(z), dtype=torch.long)
    rank[torch.tensor(z)] = torch.arange(len(z))  # rank[i]: the step at which i is predicted
    content = rank[None, :] <= rank[:, None]  # (T, T)
    query = rank[None, :] < rank[:, None]  # (T, T)
    return content, query


def factorised_log_likelihood(
    joint: torch.Tensor, x: Sequence[int], order: Sequence[int]
) -> tuple[float, list[float]]:
    """Rule (XL-1): (log p(x), [log p(x_{z_t} | x_{z_<t}) for t = 1..T]), in nats.

    ``joint`` (|𝒱|,) * T holds p(x) for every sequence (non-negative, summing to 1). Each
    conditional is a ratio of marginals, p(x_i, x_S) / p(x_S), with S the positions the query
    stream of position i may see.
    """
    z = _check_order(order)
    T = len(z)
    if joint.dim() != T or len(x) != T:
        raise ValueError(
            f"joint: expected {T} axes, one per position of x (length {len(x)}), got "
            f"{joint.dim()} axes"
        )
    if not joint.is_floating_point() or bool((joint < 0).any()):
        raise ValueError("joint: expected non-negative floating-point probabilities")
    if abs(float(joint.sum()) - 1.0) > 1e-9:
        raise ValueError(f"joint: probabilities must sum to 1, got {float(joint.sum())}")
    if any(not 0 <= int(x[i]) < joint.shape[i] for i in range(T)):
        raise ValueError(f"x: ids out of range for a joint of shape {tuple(joint.shape)}")
    if float(joint[tuple(int(i) for i in x)]) <= 0:
        raise ValueError("x: has probability 0 under the joint, so its log-likelihood is -inf")
    _, query = permutation_masks(z)

    def marginal(positions: list[int]) -> float:
        """p(x_S) for the positions S: the joint summed over every other position."""
        others = [j for j in range(T) if j not in positions]
        table = joint.sum(dim=others) if others else joint  # axes left: S, in order
        return float(table[tuple(int(x[j]) for j in sorted(positions))])

    terms = []
    for i in z:
        seen = [j for j in range(T) if query[i, j]]
        terms.append(math.log(marginal(seen + [i])) - math.log(marginal(seen)))
    return sum(terms), terms
