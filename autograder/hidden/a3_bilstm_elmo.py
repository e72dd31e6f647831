"""Hidden checks of Assignment 3: a bidirectional GRU reader, ELMo's scalar mix, probes.

The hidden test cells of ``a3_bilstm_elmo`` call, at autograde time::

    check_bidirectional_gru(bidirectional_gru)
    check_scalar_mix(scalar_mix, mix_weights)
    check_context_similarity(cosine_similarity_matrix, mean_context_similarity)
    check_sense_separation(sense_separation, best_layer)

Each check runs the student's functions on inputs the visible tests do not use (other shapes
and seeds, B = 1, T = 1, H = 1, lengths in any order, garbage in the padding, huge mixing
weights, three senses, string labels, non-contiguous arrays...) and compares the results with
references computed *before* the call and in another way than the assignment asks:
``torch.nn.GRU(bidirectional=True)`` on packed sequences, ``torch.softmax`` and AllenNLP's
masked statistics written with torch, ``torch.nn.functional.cosine_similarity``, and loops
over pairs and held-out occurrences. Then it checks that bad input raises ValueError.

While a student's function runs, the routines that would do its work (torch's recurrent
layers and their functions, packing, softmax, layer norm, cosine similarity, autograd, and
every public callable of the ``course`` package except ``course.checks``) are replaced by
traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import Case, ShortcutUsed
from autograder.hidden.shortcuts import describe as _describe
from autograder.hidden.shortcuts import expect_floats as _expect_floats
from autograder.hidden.shortcuts import expect_unchanged as _expect_unchanged
from autograder.hidden.shortcuts import snapshot as _snapshot
from autograder.hidden.shortcuts import strided as _strided
from course.checks import assert_close
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_bidirectional_gru",
    "check_scalar_mix",
    "check_context_similarity",
    "check_sense_separation",
]

READ_BY_HAND = "run the two readers by hand with NumPy and the given gru_step"
MIX_BY_HAND = "compute the softmax and the normalisation by hand with NumPy"
COSINE_BY_HAND = "compute the cosine similarities by hand with NumPy"
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
# Part A: bidirectional_gru
# --------------------------------------------------------------------------------------------


def _bidirectional_case(
    label: str,
    seed: int,
    lengths: tuple[int, ...],
    D: int,
    H: int,
    *,
    as_list: bool = False,  # lengths given as a list, not an array
    strided: bool = False,
    scale: float = 0.6,  # of the weights
) -> Case:
    return Case(
        label, seed=seed, lengths=lengths, D=D, H=H, as_list=as_list, strided=strided, scale=scale
    )


BIDIRECTIONAL_CASES = (
    _bidirectional_case("B=1, T=1, D=1, H=1", 501, (1,), 1, 1),
    _bidirectional_case("B=3, T=6, lengths 6, 2, 4, garbage in the padding", 502, (6, 2, 4), 3, 4),
    _bidirectional_case(
        "B=5, T=7, lengths 1, 7, 3, 7, 5 given as a list", 503, (1, 7, 3, 7, 5), 2, 3, as_list=True
    ),
    _bidirectional_case(
        "B=2, T=5, lengths 2, 5, H=1, non-contiguous arrays", 504, (2, 5), 4, 1, strided=True
    ),
    _bidirectional_case(
        "B=4, T=4, no padding, saturated gates", 505, (4, 4, 4, 4), 3, 2, scale=6.0
    ),
)


def _torch_bidirectional(
    xs: np.ndarray, lengths: Sequence[int], params_fwd: dict, params_bwd: dict
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """states (B, T, 2H) with zeros at padding, final_fwd and final_bwd (B, H): torch.nn.GRU."""
    B, T, D = xs.shape
    H = params_fwd["W"].shape[1]
    layer = torch.nn.GRU(D, H, batch_first=True, bidirectional=True, dtype=torch.float64)
    with torch.no_grad():
        for suffix, params in (("", params_fwd), ("_reverse", params_bwd)):
            getattr(layer, f"weight_ih_l0{suffix}").copy_(_zrn_to_rzn(params["U"]))
            getattr(layer, f"weight_hh_l0{suffix}").copy_(_zrn_to_rzn(params["W"]))
            getattr(layer, f"bias_ih_l0{suffix}").copy_(_zrn_to_rzn(params["b_in"]))
            getattr(layer, f"bias_hh_l0{suffix}").copy_(_zrn_to_rzn(params["b_rec"]))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(xs), list(lengths), batch_first=True, enforce_sorted=False
        )
        out, h_n = layer(packed)
        states, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    return states.numpy(), h_n[0].numpy(), h_n[1].numpy()


def _explain_states(states: Any, from_padding: np.ndarray, real: np.ndarray) -> str:
    """A hint when the backward half matches a reader that starts at position T - 1."""
    got = np.asarray(states, dtype=np.float64)
    if got.shape != from_padding.shape:
        return ""
    H = got.shape[-1] // 2
    if np.allclose(got[..., H:][real], from_padding[..., H:][real], atol=1e-7):
        return (
            ". The backward states match a backward reader that starts at position T - 1, in "
            "the padding: it must start at each sequence's last real token, lengths[b] - 1"
        )
    return ""


def check_bidirectional_gru(bidirectional_gru: Callable[..., Any]) -> None:
    """Hidden test of Part A: padded batches against torch.nn.GRU (bidirectional, packed)."""
    for case in BIDIRECTIONAL_CASES:
        lengths, D, H, scale = case.lengths, case.D, case.H, case.scale
        rng = np.random.default_rng(case.seed)
        B, T = len(lengths), max(lengths)
        params_fwd, params_bwd = _gru_params(rng, D, H, scale), _gru_params(rng, D, H, scale)
        xs = rng.normal(size=(B, T, D))
        real = np.arange(T)[None, :] < np.array(lengths)[:, None]  # (B, T)
        xs[~real] = 7.0  # padding with garbage: it must not matter
        states_ref, fwd_ref, bwd_ref = _torch_bidirectional(xs, lengths, params_fwd, params_bwd)
        from_padding, _, _ = _torch_bidirectional(xs, [T] * B, params_fwd, params_bwd)
        sizes: Any = list(lengths) if case.as_list else np.array(lengths)
        if case.strided:
            xs = _strided(xs)
            params_fwd = {k: _strided(v) for k, v in params_fwd.items()}
            params_bwd = {k: _strided(v) for k, v in params_bwd.items()}
        inputs = {"xs": xs, "lengths": sizes, "params_fwd": params_fwd, "params_bwd": params_bwd}
        before = _snapshot(inputs)
        with case.named("bidirectional_gru"), np.errstate(over="ignore"):
            result = _call_by_hand(
                bidirectional_gru, READ_BY_HAND, xs, sizes, params_fwd, params_bwd
            )
            _expect_unchanged("bidirectional_gru", inputs, before)
            keys = ("states", "final_fwd", "final_bwd")
            if not isinstance(result, Mapping) or not set(keys) <= set(result):
                raise AssertionError(
                    f"bidirectional_gru should return a dict with the keys {list(keys)}, got "
                    f"{_describe(result)}"
                    + (f" with the keys {sorted(result)}" if isinstance(result, Mapping) else "")
                )
            against = "torch.nn.GRU (bidirectional, packed)"
            try:
                assert_close(
                    "states", result["states"], states_ref, atol=1e-9, rtol=1e-7, against=against
                )
            except AssertionError as error:
                raise AssertionError(
                    f"{error}{_explain_states(result['states'], from_padding, real)}"
                ) from None
            assert_close(
                "final_fwd", result["final_fwd"], fwd_ref, atol=1e-9, rtol=1e-7, against=against
            )
            assert_close(
                "final_bwd", result["final_bwd"], bwd_ref, atol=1e-9, rtol=1e-7, against=against
            )

    rng = np.random.default_rng(506)
    params_fwd, params_bwd = _gru_params(rng, 3, 2), _gru_params(rng, 3, 2)
    xs = rng.normal(size=(2, 4, 3))
    wrong_width = _gru_params(rng, 4, 2)
    bad_calls = [
        ("lengths [3, 0] (a sequence of length 0)", xs, np.array([3, 0]), params_fwd, params_bwd),
        ("lengths [3, 5] with T = 4", xs, np.array([3, 5]), params_fwd, params_bwd),
        ("lengths [-1, 2]", xs, np.array([-1, 2]), params_fwd, params_bwd),
        ("lengths [3] for B = 2 sequences", xs, np.array([3]), params_fwd, params_bwd),
        ("xs of shape (4, 3), not (B, T, D)", xs[0], np.array([4]), params_fwd, params_bwd),
        (
            "params_fwd['U'] for D = 4 and xs with D = 3",
            xs,
            np.array([4, 2]),
            wrong_width,
            params_bwd,
        ),
    ]
    for description, *args in bad_calls:
        call = f"bidirectional_gru with {description}"
        _expect_value_error(bidirectional_gru, READ_BY_HAND, call, *args)
    total = len(BIDIRECTIONAL_CASES) + len(bad_calls)
    print(f"check_bidirectional_gru: all {total} hidden cases passed.")


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
# Part C: cosine_similarity_matrix and mean_context_similarity
# --------------------------------------------------------------------------------------------


def cosine_cases() -> list[Case]:
    """The hidden cases of cosine_similarity_matrix: vectors (N, D)."""
    rng = np.random.default_rng(701)
    spread = rng.normal(size=(6, 3)) * np.geomspace(1e-3, 1e3, 6)[:, None]
    return [
        Case("N=5, D=4", vectors=rng.normal(size=(5, 4))),
        Case("N=2, D=1, anti-parallel vectors", vectors=np.array([[2.0], [-0.5]])),
        Case("N=6, D=3, lengths from 1e-3 to 1e3", vectors=spread),
        Case(
            "N=4, D=7, float32, non-contiguous",
            vectors=_strided(rng.normal(size=(4, 7)).astype(np.float32)),
        ),
    ]


def context_cases() -> list[Case]:
    """The hidden cases of mean_context_similarity: vectors_by_layer (L, N, D)."""
    rng = np.random.default_rng(702)
    word = rng.normal(size=3)
    typed = np.stack([np.tile(word, (7, 1)), word + rng.normal(size=(7, 3))])
    return [
        Case("L=3, N=5, D=4", vectors_by_layer=rng.normal(size=(3, 5, 4)) + 0.5),
        Case("L=1, N=2, D=1, anti-parallel", vectors_by_layer=np.array([[[3.0], [-1.0]]])),
        Case("L=2, N=7, D=3, layer 0 a type embedding", vectors_by_layer=typed),
        Case(
            "L=4, N=3, D=5, float32, non-contiguous",
            vectors_by_layer=_strided(rng.normal(size=(4, 3, 5)).astype(np.float32)),
        ),
    ]


def _pairwise_mean(vectors: np.ndarray) -> float:
    """The mean cosine similarity over ordered pairs of different rows, one pair at a time."""
    rows = np.asarray(vectors, dtype=np.float64)
    total, pairs = 0.0, 0
    for i in range(len(rows)):
        for k in range(len(rows)):
            if i != k:
                total += rows[i] @ rows[k] / (np.linalg.norm(rows[i]) * np.linalg.norm(rows[k]))
                pairs += 1
    return total / pairs


def check_context_similarity(
    cosine_similarity_matrix: Callable[..., Any], mean_context_similarity: Callable[..., Any]
) -> None:
    """Hidden test of Part C: cosine matrices, and means over pairs without the diagonal."""
    cosines = cosine_cases()
    for case in cosines:
        vectors = case.vectors
        as_tensor = torch.tensor(np.asarray(vectors, dtype=np.float64))
        expected = torch.nn.functional.cosine_similarity(
            as_tensor[:, None], as_tensor[None, :], dim=-1, eps=0.0
        ).numpy()
        before = _snapshot({"vectors": vectors})
        with case.named("cosine_similarity_matrix"):
            table = _call_by_hand(cosine_similarity_matrix, COSINE_BY_HAND, vectors)
            _expect_unchanged("cosine_similarity_matrix", {"vectors": vectors}, before)
            assert_close(
                "the cosine matrix",
                table,
                expected,
                atol=1e-9,
                rtol=1e-7,
                against="F.cosine_similarity",
            )

    contexts = context_cases()
    for case in contexts:
        stack = case.vectors_by_layer
        expected = [_pairwise_mean(layer) for layer in stack]
        before = _snapshot({"vectors_by_layer": stack})
        with case.named("mean_context_similarity"):
            means = _call_by_hand(mean_context_similarity, COSINE_BY_HAND, stack)
            _expect_unchanged("mean_context_similarity", {"vectors_by_layer": stack}, before)
            means = _expect_floats("mean_context_similarity", means, len(stack))
            assert_close(
                "the mean similarity by layer",
                means,
                expected,
                atol=1e-9,
                rtol=1e-7,
                against="the mean over pairs of different occurrences",
            )

    rng = np.random.default_rng(703)
    with_zero = rng.normal(size=(4, 3))
    with_zero[2] = 0.0
    bad_calls = [
        (cosine_similarity_matrix, "cosine_similarity_matrix", "a zero vector (row 2)", with_zero),
        (
            cosine_similarity_matrix,
            "cosine_similarity_matrix",
            "vectors of shape (2, 3, 4)",
            rng.normal(size=(2, 3, 4)),
        ),
        (
            mean_context_similarity,
            "mean_context_similarity",
            "N = 1 occurrence",
            rng.normal(size=(3, 1, 4)),
        ),
        (
            mean_context_similarity,
            "mean_context_similarity",
            "a zero vector in layer 1",
            np.stack([rng.normal(size=(4, 3)), with_zero]),
        ),
        (
            mean_context_similarity,
            "mean_context_similarity",
            "vectors_by_layer of shape (5, 3)",
            rng.normal(size=(5, 3)),
        ),
    ]
    for function, name, description, argument in bad_calls:
        _expect_value_error(function, COSINE_BY_HAND, f"{name} with {description}", argument)
    total = len(cosines) + len(contexts) + len(bad_calls)
    print(f"check_context_similarity: all {total} hidden cases passed.")


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
