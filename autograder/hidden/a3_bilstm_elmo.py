"""Hidden checks of Assignment 3: a bidirectional GRU reader, ELMo's scalar mix, probes.

The hidden test cells of ``a3_bilstm_elmo`` call, at autograde time::

    check_stacked_bidirectional_gru(stacked_bidirectional_gru)
    check_scalar_mix(scalar_mix, mix_weights)
    check_context_measures(centred_self_similarity, first_component_share)
    check_sense_separation(sense_separation, best_layer)

Each check runs the student's functions on inputs the visible tests do not use (other shapes
and seeds, B = 1, T = 1, H = 1, one to three layers, lengths in any order, garbage in the
padding, huge mixing weights, a large common offset, three senses, string labels,
non-contiguous arrays...) and compares the results with references computed *before* the
call and in another way than the assignment asks: ``torch.nn.GRU(bidirectional=True,
num_layers=L)`` on packed sequences, ``torch.softmax`` and AllenNLP's masked statistics
written with torch, loops over pairs with ``torch.nn.functional.cosine_similarity``, the
eigenvalues of ``torch.cov`` (``torch.linalg.eigvalsh``), and loops over held-out
occurrences. Then it checks that bad input raises ValueError.

While a student's function runs, the routines that would do its work (torch's recurrent
layers and their functions, packing, softmax, layer norm, cosine similarity, covariance,
eigenvalues and singular values, autograd, and every public callable of the ``course``
package except ``course.checks``, ``course.analysis`` included) are replaced by traps that
raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import ShortcutUsed
from course.checks import assert_close
from course.checks import snapshot_inputs as _snapshot
from course.checks.cases import Case
from course.checks.cases import describe as _describe
from course.checks.cases import expect_floats as _expect_floats
from course.checks.cases import expect_unchanged as _expect_unchanged
from course.checks.cases import strided as _strided
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_stacked_bidirectional_gru",
    "check_scalar_mix",
    "check_context_measures",
    "check_sense_separation",
]

READ_BY_HAND = "run the two readers by hand with NumPy and the given gru_step"
MIX_BY_HAND = "compute the softmax and the normalisation by hand with NumPy"
SPREAD_BY_HAND = "compute the centred vectors, cosines and variances by hand with NumPy"
PROBE_BY_HAND = "compute the centroids and the accuracies by hand with NumPy"


# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a3_bilstm_elmo"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_expect_value_error = shortcuts.value_error_checker(_call_by_hand)


def _gru_params(rng: np.random.Generator, D: int, H: int, scale: float = 0.6) -> dict:
    return {
        "U": scale * rng.normal(size=(3 * H, D)),  # input matrices U_z, U_r, U_h
        "W": scale * rng.normal(size=(3 * H, H)),  # recurrent matrices W_z, W_r, W_h
        "b_in": 0.3 * rng.normal(size=3 * H),
        "b_rec": 0.3 * rng.normal(size=3 * H),
    }


def _zrn_to_rzn(matrix: np.ndarray) -> torch.Tensor:
    """Rows (3H, ...) regrouped from the assignment's blocks (z, r, n) to PyTorch's (r, z, n)."""
    z, r, n = np.split(np.asarray(matrix, dtype=np.float64), 3)
    return torch.tensor(np.concatenate([r, z, n]))


# --------------------------------------------------------------------------------------------
# Part A: stacked_bidirectional_gru
# --------------------------------------------------------------------------------------------


def _stacked_case(
    label: str,
    seed: int,
    lengths: tuple[int, ...],
    D: int,
    H: int,
    num_layers: int,
    *,
    as_lists: bool = False,  # lengths a list, layers a list of lists
    strided: bool = False,
    scale: float = 0.6,  # of the weights
) -> Case:
    return Case(
        label,
        seed=seed,
        lengths=lengths,
        D=D,
        H=H,
        num_layers=num_layers,
        as_lists=as_lists,
        strided=strided,
        scale=scale,
    )


STACKED_CASES = (
    _stacked_case("one layer, B=1, T=1, D=1, H=1", 501, (1,), 1, 1, 1),
    _stacked_case(
        "two layers, B=3, T=6, lengths 6, 2, 4, garbage in the padding", 502, (6, 2, 4), 3, 4, 2
    ),
    _stacked_case(
        "three layers, B=5, T=7, lengths 1, 7, 3, 7, 5, lengths and layers given as lists",
        503,
        (1, 7, 3, 7, 5),
        2,
        3,
        3,
        as_lists=True,
    ),
    _stacked_case(
        "two layers, B=2, T=5, lengths 2, 5, H=1, non-contiguous arrays",
        504,
        (2, 5),
        4,
        1,
        2,
        strided=True,
    ),
    _stacked_case(
        "two layers, B=4, T=4, no padding, saturated gates", 505, (4, 4, 4, 4), 3, 2, 2, scale=6.0
    ),
)


def _stacked_layers(rng: np.random.Generator, D: int, H: int, num_layers: int, scale: float):
    """num_layers pairs (params_fwd, params_bwd); layer 1 reads D inputs, the others 2H."""
    return [
        (_gru_params(rng, D if k == 0 else 2 * H, H, scale),
         _gru_params(rng, D if k == 0 else 2 * H, H, scale))
        for k in range(num_layers)
    ]  # fmt: skip


def _torch_stacked(
    xs: np.ndarray, lengths: Sequence[int], layers: Sequence[tuple[dict, dict]]
) -> tuple[np.ndarray, np.ndarray]:
    """states (B, T, 2H) with zeros at padding and h_n (2L, B, H): torch.nn.GRU, packed."""
    B, T, D = xs.shape
    H = layers[0][0]["W"].shape[1]
    gru = torch.nn.GRU(
        D, H, num_layers=len(layers), batch_first=True, bidirectional=True, dtype=torch.float64
    )
    with torch.no_grad():
        for k, pair in enumerate(layers):
            for suffix, params in zip(("", "_reverse"), pair, strict=True):
                getattr(gru, f"weight_ih_l{k}{suffix}").copy_(_zrn_to_rzn(params["U"]))
                getattr(gru, f"weight_hh_l{k}{suffix}").copy_(_zrn_to_rzn(params["W"]))
                getattr(gru, f"bias_ih_l{k}{suffix}").copy_(_zrn_to_rzn(params["b_in"]))
                getattr(gru, f"bias_hh_l{k}{suffix}").copy_(_zrn_to_rzn(params["b_rec"]))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(xs), list(lengths), batch_first=True, enforce_sorted=False
        )
        out, h_n = gru(packed)
        states, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    return states.numpy(), h_n.numpy()


def _explain_stacked(result: Any, from_padding: tuple, swapped: tuple, real: np.ndarray) -> str:
    """A hint when the output matches a reader that starts at position T - 1, or a layer 2 that
    reads [backward; forward]."""
    got = np.asarray(result["states"], dtype=np.float64)
    if got.shape != from_padding[0].shape:
        return ""
    if np.allclose(got[real], from_padding[0][real], atol=1e-7):
        return (
            ". The states match backward readers that start at position T - 1, in the padding: "
            "each must start at its sequence's last real token, lengths[b] - 1"
        )
    if np.allclose(got[real], swapped[0][real], atol=1e-7):
        return (
            ". The states match a stack whose upper layers read [backward; forward]: the input "
            "of layer l + 1 is [forward; backward] of layer l, the forward half first"
        )
    return ""


def _swap_inputs(layers: Sequence[tuple[dict, dict]]) -> list[tuple[dict, dict]]:
    """The same stack with the columns of every upper U swapped between the two halves: what
    torch computes from [backward; forward] with the original weights."""
    swapped = [tuple(layers[0])]
    for pair in layers[1:]:
        moved = []
        for params in pair:
            half = params["U"].shape[1] // 2
            moved.append(params | {"U": np.roll(params["U"], half, axis=1)})
        swapped.append(tuple(moved))
    return swapped


def check_stacked_bidirectional_gru(stacked_bidirectional_gru: Callable[..., Any]) -> None:
    """Hidden test of Part A: padded batches against torch.nn.GRU (bidirectional, stacked)."""
    for case in STACKED_CASES:
        lengths, D, H = case.lengths, case.D, case.H
        rng = np.random.default_rng(case.seed)
        B, T = len(lengths), max(lengths)
        layers = _stacked_layers(rng, D, H, case.num_layers, case.scale)
        xs = rng.normal(size=(B, T, D))
        real = np.arange(T)[None, :] < np.array(lengths)[:, None]  # (B, T)
        xs[~real] = 7.0  # padding with garbage: it must not matter
        states_ref, h_n_ref = _torch_stacked(xs, lengths, layers)
        from_padding = _torch_stacked(xs, [T] * B, layers)
        swapped = _torch_stacked(xs, lengths, _swap_inputs(layers))
        sizes: Any = list(lengths) if case.as_lists else np.array(lengths)
        given: Any = [list(pair) for pair in layers] if case.as_lists else layers
        if case.strided:
            xs = _strided(xs)
            given = [tuple({k: _strided(v) for k, v in p.items()} for p in pair) for pair in layers]
        inputs = {"xs": xs, "lengths": sizes, "layers": given}
        before = _snapshot(inputs)
        with case.named("stacked_bidirectional_gru"), np.errstate(over="ignore"):
            result = _call_by_hand(stacked_bidirectional_gru, READ_BY_HAND, xs, sizes, given)
            _expect_unchanged("stacked_bidirectional_gru", inputs, before)
            keys = ("states", "h_n")
            if not isinstance(result, Mapping) or not set(keys) <= set(result):
                raise AssertionError(
                    f"stacked_bidirectional_gru should return a dict with the keys {list(keys)}, "
                    f"got {_describe(result)}"
                    + (f" with the keys {sorted(result)}" if isinstance(result, Mapping) else "")
                )
            against = f"torch.nn.GRU (bidirectional, num_layers={case.num_layers}, packed)"
            try:
                assert_close(
                    "states", result["states"], states_ref, atol=1e-9, rtol=1e-7, against=against
                )
            except AssertionError as error:
                hint = _explain_stacked(result, from_padding, swapped, real)
                raise AssertionError(f"{error}{hint}") from None
            assert_close(
                "h_n (layer 1 forward, layer 1 backward, layer 2 forward, ...)",
                result["h_n"],
                h_n_ref,
                atol=1e-9,
                rtol=1e-7,
                against=against,
            )

    rng = np.random.default_rng(506)
    layers = _stacked_layers(rng, 3, 2, 2, 0.6)
    xs = rng.normal(size=(2, 4, 3))
    narrow_top = [layers[0], (_gru_params(rng, 2, 2), _gru_params(rng, 2, 2))]
    bad_calls = [
        ("lengths [3, 0] (a sequence of length 0)", xs, np.array([3, 0]), layers),
        ("lengths [3, 5] with T = 4", xs, np.array([3, 5]), layers),
        ("lengths [-1, 2]", xs, np.array([-1, 2]), layers),
        ("lengths [3] for B = 2 sequences", xs, np.array([3]), layers),
        ("xs of shape (4, 3), not (B, T, D)", xs[0], np.array([4]), layers),
        ("layers = [] (no layer)", xs, np.array([4, 2]), []),
        ("a layer that is one dict, not a pair", xs, np.array([4, 2]), [layers[0][0]]),
        ("a layer 2 whose U reads H = 2 inputs, not 2H = 4", xs, np.array([4, 2]), narrow_top),
    ]
    for description, *args in bad_calls:
        call = f"stacked_bidirectional_gru with {description}"
        _expect_value_error(stacked_bidirectional_gru, READ_BY_HAND, call, *args)
    total = len(STACKED_CASES) + len(bad_calls)
    print(f"check_stacked_bidirectional_gru: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: mix_weights and scalar_mix
# --------------------------------------------------------------------------------------------

MIX_WEIGHT_CASES = (
    Case("w = [0, 0, 0, 0]", w=np.zeros(4)),
    Case("w = [800, -800, 799.5] (exp(800) overflows)", w=np.array([800.0, -800.0, 799.5])),
    Case(
        "w = [-1000, -1001, -1003] (exp(-1000) underflows to 0)",
        w=np.array([-1000.0, -1001.0, -1003.0]),
    ),
    Case("w = [3.7], a single layer", w=np.array([3.7])),
    Case("w given as a list [0.5, -0.25]", w=[0.5, -0.25]),
)

SCALAR_MIX_CASES = (  # shape: (L+1, B, T, D); lengths None: no mask
    Case(
        "L+1=3, B=2, T=4, D=5, no layer norm",
        seed=601,
        shape=(3, 2, 4, 5),
        lengths=None,
        w=(0.2, -0.4, 1.1),
        gamma=0.7,
        layer_norm=False,
        options="",
    ),
    Case(
        "L+1=4, B=3, T=5, D=3, layer norm, lengths 5, 2, 4, garbage in the padding",
        seed=602,
        shape=(4, 3, 5, 3),
        lengths=(5, 2, 4),
        w=(1.0, 0.0, -0.5, 2.0),
        gamma=1.3,
        layer_norm=True,
        options="scales",
    ),
    Case(
        "L+1=2, B=1, T=1, D=6, layer norm, mask=None",
        seed=603,
        shape=(2, 1, 1, 6),
        lengths=None,
        w=(0.3, 0.1),
        gamma=2.0,
        layer_norm=True,
        options="",
    ),
    Case(
        "L+1=3, B=2, T=3, D=2, w = [700, 710, 705], layer norm, integer mask, non-contiguous",
        seed=604,
        shape=(3, 2, 3, 2),
        lengths=(3, 1),
        w=(700.0, 710.0, 705.0),
        gamma=0.9,
        layer_norm=True,
        options="int mask, strided",
    ),
    Case(
        "one layer (L+1=1), B=2, T=2, D=3, gamma = -0.5, a mask and no layer norm",
        seed=605,
        shape=(1, 2, 2, 3),
        lengths=(2, 1),
        w=(4.0,),
        gamma=-0.5,
        layer_norm=False,
        options="",
    ),
)


def _reference_mix(
    layers: np.ndarray, w: Sequence[float], gamma: float, mask: np.ndarray | None, layer_norm: bool
) -> np.ndarray:
    """AllenNLP's ScalarMix forward, written with torch tensors: one masked mean and variance
    per layer over its real tokens and features."""
    stack = torch.tensor(np.asarray(layers, dtype=np.float64))
    weights = torch.softmax(torch.tensor(np.asarray(w, dtype=np.float64)), dim=0)
    if layer_norm:
        keep = (
            torch.ones(stack.shape[1:3], dtype=torch.float64)
            if mask is None
            else torch.tensor(np.asarray(mask, dtype=np.float64))
        )
        keep = keep.unsqueeze(-1)  # (B, T, 1)
        count = keep.sum() * stack.shape[-1]
        normalised = []
        for layer in stack:
            masked = layer * keep
            mean = masked.sum() / count
            variance = (((masked - mean) * keep) ** 2).sum() / count
            normalised.append((layer - mean) / torch.sqrt(variance + 1e-12))
        stack = torch.stack(normalised)
    return (gamma * (weights[:, None, None, None] * stack).sum(0)).numpy()


def _scalar_mix_inputs(seed, shape, lengths, options):
    rng = np.random.default_rng(seed)
    layers = rng.normal(size=shape)
    if "scales" in options:  # layers whose sizes differ by orders of magnitude
        layers *= np.geomspace(1e-2, 1e2, shape[0])[:, None, None, None]
    mask = None
    if lengths is not None:
        mask = np.arange(shape[2])[None, :] < np.array(lengths)[:, None]  # (B, T)
        layers[:, ~mask] = 1e3  # garbage in the padding
        if "int mask" in options:
            mask = mask.astype(np.int64)
    return layers, mask


def check_scalar_mix(scalar_mix: Callable[..., Any], mix_weights: Callable[..., Any]) -> None:
    """Hidden test of Part B: a stable softmax, and AllenNLP's masked layer normalisation."""
    for case in MIX_WEIGHT_CASES:
        w = case.w
        expected = torch.softmax(torch.tensor(np.asarray(w, dtype=np.float64)), dim=0).numpy()
        before = _snapshot({"w": w})
        with case.named("mix_weights"), np.errstate(all="ignore"):
            s = _call_by_hand(mix_weights, MIX_BY_HAND, w)
            _expect_unchanged("mix_weights", {"w": w}, before)
            assert_close("s", s, expected, atol=1e-12, rtol=1e-9, against="torch.softmax")

    for case in SCALAR_MIX_CASES:
        shape, gamma, layer_norm, options = case.shape, case.gamma, case.layer_norm, case.options
        layers, mask = _scalar_mix_inputs(case.seed, shape, case.lengths, options)
        w = np.array(case.w)
        expected = _reference_mix(layers, w, gamma, mask, layer_norm)
        real = np.ones(shape[1:3], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        if "strided" in options:
            layers, w = _strided(layers), _strided(w)
            mask = _strided(mask)
        inputs = {"layers": layers, "w": w} | ({} if mask is None else {"mask": mask})
        before = _snapshot(inputs)
        with case.named("scalar_mix"), np.errstate(all="ignore"):
            mixed = _call_by_hand(scalar_mix, MIX_BY_HAND, layers, w, gamma, mask, layer_norm)
            _expect_unchanged("scalar_mix", inputs, before)
            if np.shape(mixed) != shape[1:]:
                raise AssertionError(
                    f"scalar_mix should return shape (B, T, D) = {shape[1:]}, got "
                    f"{_describe(mixed)}"
                )
            where = "" if mask is None else " at the real tokens"
            assert_close(
                f"the mix{where}",
                np.asarray(mixed)[real],
                expected[real],
                atol=1e-9,
                rtol=1e-7,
                against="AllenNLP's ScalarMix (written with torch)"
                + (" with do_layer_norm=True" if layer_norm else ""),
            )

    rng = np.random.default_rng(606)
    layers = rng.normal(size=(3, 2, 4, 2))
    no_token = np.zeros((2, 4), dtype=bool)
    bad_calls = [
        ("w of length 2 for 3 layers", layers, np.zeros(2), 1.0, None, False),
        ("layers of shape (2, 4, 2), not 4-D", layers[0], np.zeros(2), 1.0, None, False),
        ("a mask with no real token and layer_norm=True", layers, np.zeros(3), 1.0, no_token, True),
        ("a mask of shape (2, 5) for B=2, T=4", layers, np.zeros(3), 1.0, np.ones((2, 5)), True),
    ]
    for description, *args in bad_calls:
        _expect_value_error(scalar_mix, MIX_BY_HAND, f"scalar_mix with {description}", *args)
    bad_weights = [("an empty w", np.zeros(0)), ("w of shape (3, 2)", np.ones((3, 2)))]
    for description, w in bad_weights:
        _expect_value_error(mix_weights, MIX_BY_HAND, f"mix_weights with {description}", w)
    total = len(MIX_WEIGHT_CASES) + len(SCALAR_MIX_CASES) + len(bad_calls) + len(bad_weights)
    print(f"check_scalar_mix: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: centred_self_similarity and first_component_share
# --------------------------------------------------------------------------------------------


def centred_cases() -> list[Case]:
    """The hidden cases of centred_self_similarity: (L, N, D) occurrences, (L, M, D) background."""
    rng = np.random.default_rng(701)
    word = rng.normal(size=3)
    typed = np.stack([np.tile(word, (7, 1)), word + rng.normal(size=(7, 3))])
    offset = 1e3 * rng.normal(size=4)  # a common component far larger than the rest
    return [
        Case(
            "L=3, N=5, D=4, M=20",
            vectors_by_layer=rng.normal(size=(3, 5, 4)) + 0.5,
            background_by_layer=rng.normal(size=(3, 20, 4)),
        ),
        Case(
            "L=1, N=2, D=1, M=3, on both sides of the mean",
            vectors_by_layer=np.array([[[3.0], [-1.0]]]),
            background_by_layer=np.array([[[0.0], [1.0], [2.0]]]),
        ),
        Case(
            "L=2, N=7, D=3, M=1, layer 0 a type embedding",
            vectors_by_layer=typed,
            background_by_layer=rng.normal(size=(2, 1, 3)),
        ),
        Case(
            "L=2, N=6, D=4, M=50, a common offset of size 1e3 in every vector",
            vectors_by_layer=rng.normal(size=(2, 6, 4)) + 0.3 + offset,
            background_by_layer=rng.normal(size=(2, 50, 4)) + offset,
        ),
        Case(
            "L=4, N=3, D=5, M=8, float32, non-contiguous",
            vectors_by_layer=_strided(rng.normal(size=(4, 3, 5)).astype(np.float32)),
            background_by_layer=_strided(rng.normal(size=(4, 8, 5)).astype(np.float32)),
        ),
    ]


def share_cases() -> list[Case]:
    """The hidden cases of first_component_share: vectors_by_layer (L, N, D)."""
    rng = np.random.default_rng(702)
    stretched = rng.normal(size=(10, 3)) * np.array([5.0, 1.0, 0.2]) + 1e3
    return [
        Case("L=3, N=6, D=4", vectors_by_layer=rng.normal(size=(3, 6, 4)) + 2.0),
        Case("L=1, N=2, D=5 (the share is 1)", vectors_by_layer=rng.normal(size=(1, 2, 5))),
        Case(
            "L=2, N=10, D=3, stretched along one axis, far from the origin",
            vectors_by_layer=np.stack([stretched, stretched[:, ::-1] * [1.0, -1.0, 1.0]]),
        ),
        Case("L=2, N=4, D=1", vectors_by_layer=rng.normal(size=(2, 4, 1))),
        Case("L=2, N=3, D=8 (N < D)", vectors_by_layer=rng.normal(size=(2, 3, 8))),
        Case(
            "L=3, N=7, D=6, float32, non-contiguous",
            vectors_by_layer=_strided(rng.normal(size=(3, 7, 6)).astype(np.float32)),
        ),
    ]


def _centred_pairs(vectors: np.ndarray, background: np.ndarray) -> float:
    """The mean cosine over ordered pairs of different rows, after subtracting the background's
    mean, one pair at a time with torch."""
    mean = torch.tensor(np.asarray(background, dtype=np.float64)).mean(dim=0)
    rows = torch.tensor(np.asarray(vectors, dtype=np.float64)) - mean
    values = [
        float(torch.nn.functional.cosine_similarity(rows[i], rows[k], dim=0, eps=0.0))
        for i in range(len(rows))
        for k in range(len(rows))
        if i != k
    ]
    return sum(values) / len(values)


def _covariance_share(vectors: np.ndarray) -> float:
    """The largest eigenvalue of the covariance matrix over the sum of its eigenvalues, with
    torch's covariance and eigenvalues (not a singular value decomposition)."""
    rows = torch.tensor(np.asarray(vectors, dtype=np.float64))
    spread = torch.cov(rows.T, correction=0).reshape(rows.shape[1], rows.shape[1])  # (D, D)
    eigenvalues = torch.linalg.eigvalsh(spread).clamp(min=0.0)
    return float(eigenvalues.max() / eigenvalues.sum())


def _explain_centred(got: Any, stack: np.ndarray, background: np.ndarray) -> str:
    """A hint when the means are the raw self-similarities, or centred on the word's own mean."""
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    zero = np.zeros((1, stack.shape[2]))
    raw = [_centred_pairs(layer, zero) for layer in stack]
    own = [_centred_pairs(layer, layer) for layer in stack]
    if values.shape == (len(stack),) and np.allclose(values, raw, atol=1e-7):
        return ". These are the raw self-similarities: subtract each layer's background mean first"
    if values.shape == (len(stack),) and np.allclose(values, own, atol=1e-7):
        return (
            ". These centre the word's vectors on their own mean: subtract the mean of the "
            "layer's background vectors"
        )
    return ""


def check_context_measures(
    centred_self_similarity: Callable[..., Any], first_component_share: Callable[..., Any]
) -> None:
    """Hidden test of Part C: self-similarity after removing a layer's mean, and the share of
    the first principal component."""
    centred = centred_cases()
    for case in centred:
        stack, background = case.vectors_by_layer, case.background_by_layer
        expected = [_centred_pairs(v, m) for v, m in zip(stack, background, strict=True)]
        inputs = {"vectors_by_layer": stack, "background_by_layer": background}
        before = _snapshot(inputs)
        with case.named("centred_self_similarity"):
            means = _call_by_hand(centred_self_similarity, SPREAD_BY_HAND, stack, background)
            _expect_unchanged("centred_self_similarity", inputs, before)
            means = _expect_floats("centred_self_similarity", means, len(stack))
            try:
                assert_close(
                    "the centred self-similarity by layer",
                    means,
                    expected,
                    atol=1e-9,
                    rtol=1e-7,
                    against="a loop over pairs with F.cosine_similarity, after the layer's mean",
                )
            except AssertionError as error:
                hint = _explain_centred(means, stack, background)
                raise AssertionError(f"{error}{hint}") from None

    shares = share_cases()
    for case in shares:
        stack = case.vectors_by_layer
        expected = [_covariance_share(layer) for layer in stack]
        before = _snapshot({"vectors_by_layer": stack})
        with case.named("first_component_share"):
            got = _call_by_hand(first_component_share, SPREAD_BY_HAND, stack)
            _expect_unchanged("first_component_share", {"vectors_by_layer": stack}, before)
            got = _expect_floats("first_component_share", got, len(stack))
            assert_close(
                "the first-component share by layer",
                got,
                expected,
                atol=1e-9,
                rtol=1e-7,
                against="the eigenvalues of the covariance matrix (torch.linalg.eigvalsh)",
            )

    rng = np.random.default_rng(703)
    stack = rng.normal(size=(2, 4, 3))
    background = rng.normal(size=(2, 5, 3))
    at_mean = stack.copy()
    at_mean[1, 2] = background[1].mean(axis=0)
    still = stack.copy()
    still[1] = stack[1, 0]  # layer 1: four equal vectors
    bad_centred = [
        ("N = 1 occurrence", stack[:, :1], background),
        ("occurrence 2 of layer 1 equal to the layer's mean", at_mean, background),
        ("a background of 3 layers for 2", stack, rng.normal(size=(3, 5, 3))),
        ("a background with D = 4 for D = 3", stack, rng.normal(size=(2, 5, 4))),
        ("an empty background (M = 0)", stack, np.zeros((2, 0, 3))),
        ("vectors_by_layer of shape (4, 3)", stack[0], background),
    ]
    for description, *args in bad_centred:
        call = f"centred_self_similarity with {description}"
        _expect_value_error(centred_self_similarity, SPREAD_BY_HAND, call, *args)
    bad_shares = [
        ("N = 1 occurrence", stack[:, :1]),
        ("a layer whose 4 vectors are equal", still),
        ("vectors_by_layer of shape (4, 3)", stack[0]),
    ]
    for description, argument in bad_shares:
        call = f"first_component_share with {description}"
        _expect_value_error(first_component_share, SPREAD_BY_HAND, call, argument)
    total = len(centred) + len(shares) + len(bad_centred) + len(bad_shares)
    print(f"check_context_measures: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: sense_separation and best_layer
# --------------------------------------------------------------------------------------------


def _senses(
    seed: int, counts: Sequence[int], strengths: Sequence[float], D: int, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """vectors_by_layer (L, N, D) with a sense signal of the given strength in each layer, and
    the sense index (N,) of each occurrence."""
    rng = np.random.default_rng(seed)
    which = np.repeat(np.arange(len(counts)), counts)
    rng.shuffle(which)
    directions = rng.normal(size=(len(counts), D))
    base = 2.0 * rng.normal(size=D)
    stack = np.stack(
        [base + s * directions[which] + noise * rng.normal(size=(len(which), D)) for s in strengths]
    )
    return stack, which


def loo_accuracies(
    vectors_by_layer: np.ndarray, senses: Sequence[Any]
) -> tuple[list[float], float]:
    """Leave-one-out nearest-centroid accuracy per layer, one occurrence at a time, and the
    smallest gap between the two most similar centroids over all occurrences (a tie check)."""
    labels = list(senses)
    names = sorted(set(labels))
    accuracies, closest_call = [], np.inf
    for layer in np.asarray(vectors_by_layer, dtype=np.float64):
        right = 0
        for i, vector in enumerate(layer):
            similarity = []
            for name in names:
                members = [k for k, tag in enumerate(labels) if tag == name and k != i]
                centre = layer[members].mean(axis=0)
                similarity.append(
                    vector @ centre / (np.linalg.norm(vector) * np.linalg.norm(centre))
                )
            ranked = sorted(similarity, reverse=True)
            closest_call = min(closest_call, ranked[0] - ranked[1])
            right += bool(names[int(np.argmax(similarity))] == labels[i])
        accuracies.append(float(right / len(labels)))
    return accuracies, closest_call


def sense_cases() -> list[Case]:
    """The hidden cases of sense_separation and best_layer: vectors_by_layer (L, N, D), senses."""
    cases = []
    stack, which = _senses(803, (4, 4), (0.0, 0.8, 2.5), 4)
    cases.append(
        Case(
            "L=3, N=8, D=4, two senses as 0 and 1",
            vectors_by_layer=stack,
            senses=[int(k) for k in which],
        )
    )
    stack, which = _senses(804, (2, 2, 2), (0.6, 1.2), 2, noise=0.8)
    tags = ["bank/river", "bank/money", "bank/tilt"]
    cases.append(
        Case(
            "L=2, N=6, D=2, three senses of two occurrences each, as strings",
            vectors_by_layer=stack,
            senses=[tags[k] for k in which],
        )
    )
    stack, which = _senses(803, (6, 6), (0.0, 6.0, 1.0, 6.0), 5)
    cases.append(
        Case(
            "L=4, N=12, D=5, layers 1 and 3 tie at the top",
            vectors_by_layer=stack,
            senses=which.astype(np.int64),
        )
    )
    stack, which = _senses(804, (2, 2), (1.5,), 3)
    cases.append(
        Case(
            "L=1, N=4, D=3, a single layer, non-contiguous",
            vectors_by_layer=_strided(stack),
            senses=which.astype(np.int64),
        )
    )
    stack, which = _senses(805, (7, 3), (0.3, 1.0, 0.6), 6)
    cases.append(
        Case(
            "L=3, N=10, D=6, unbalanced senses (7 and 3)",
            vectors_by_layer=stack,
            senses=["coin" if k else "ink" for k in which],
        )
    )
    return cases


def check_sense_separation(
    sense_separation: Callable[..., Any], best_layer: Callable[..., Any]
) -> None:
    """Hidden test of Part D: leave-one-out accuracies, and the best layer (lowest on ties)."""
    cases = sense_cases()
    for case in cases:
        stack, senses = case.vectors_by_layer, case.senses
        expected, _ = loo_accuracies(stack, senses)
        best = int(np.argmax(expected))
        inputs = dict(case.inputs)
        before = _snapshot(inputs)
        with case.named("sense_separation"):
            accuracies = _call_by_hand(sense_separation, PROBE_BY_HAND, stack, senses)
            _expect_unchanged("sense_separation", inputs, before)
            accuracies = _expect_floats("sense_separation", accuracies, len(stack))
            assert_close(
                "the accuracy by layer",
                accuracies,
                expected,
                atol=1e-9,
                against="leave-one-out nearest centroids",
            )
        with case.named("best_layer"):
            chosen = _call_by_hand(best_layer, PROBE_BY_HAND, stack, senses)
            _expect_unchanged("best_layer", inputs, before)
            if isinstance(chosen, (bool, np.bool_)) or not isinstance(chosen, (int, np.integer)):
                raise AssertionError(
                    f"best_layer should return the index of a layer as an int, got "
                    f"{_describe(chosen)}"
                )
            if int(chosen) != best:
                ties = [j for j, a in enumerate(expected) if a == expected[best]]
                detail = f" (layers {ties} tie; the lowest wins)" if len(ties) > 1 else ""
                raise AssertionError(
                    f"best_layer chose layer {int(chosen)}, but layer {best} has the best "
                    f"accuracy{detail}; the accuracies are {[round(a, 4) for a in expected]}"
                )

    rng = np.random.default_rng(806)
    stack = rng.normal(size=(2, 6, 3))
    bad_calls = [
        ("5 labels for N = 6 occurrences", [0, 0, 0, 1, 1]),
        ("a single sense", ["river"] * 6),
        ("a sense with one example", [0, 0, 0, 0, 0, 1]),
    ]
    for description, senses in bad_calls:
        call = f"sense_separation with {description}"
        _expect_value_error(sense_separation, PROBE_BY_HAND, call, stack, senses)
    total = 2 * len(cases) + len(bad_calls)
    print(f"check_sense_separation: all {total} hidden cases passed.")
