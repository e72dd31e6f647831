# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Assignment 3: a bidirectional reader, ELMo's scalar mix, and what each layer knows
#
# In Lecture 3 you saw a forward and a backward LSTM read the same sentence, layers stacked
# on top of each other, and ELMo mix the layers of a bidirectional language model into one
# vector per token. Here you write these pieces yourself in NumPy, for padded batches, and
# then use them the way ELMo's authors did: to ask which layer of a contextual model knows
# what.
#
# **Goals.** After this assignment you can
#
# 1. run a bidirectional recurrent reader over a padded batch, with a backward reader that
#    starts at each sentence's own last word (Part A);
# 2. compute ELMo's scalar mix of layers, with a stable softmax and an optional layer
#    normalisation that looks only at real tokens (Part B);
# 3. measure how much the vectors of one word change from sentence to sentence, layer by
#    layer (Part C);
# 4. find the layer whose vectors best separate two senses of a word (Part D);
# 5. explain why ELMo learns a mix of layers for each task (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. A batch has $B$ sequences padded to a common length $T$;
# inputs have $D$ features and each reader has $H$ hidden units. Vectors are **rows**: a
# batch of inputs at one step has shape (B, D), so a weight matrix $M$ acts as `x @ M.T`.
# Positions are numbered from 0: sequence $b$ has `lengths[b]` real tokens at positions
# $0, \dots, \text{lengths}[b] - 1$, and whatever sits at the later positions is padding.
#
# **The GRU** is PyTorch's, the one Lecture 2 writes (Assignment 2's Part C asks for the
# original variant instead), with the keys of Assignment 2: for the gates in the order
# **update, reset, candidate** (labelled z, r, n), `params["U"]` (3H, D) holds the input
# matrices $U_z, U_r, U_h$, `params["W"]` (3H, H) the recurrent matrices $W_z, W_r, W_h$,
# and `params["b_in"]`, `params["b_rec"]` (3H,) the biases on the input and recurrent side:
#
# $$\begin{aligned}
# z_t &= \sigma(U_z x_t + b^{\text{in}}_z + W_z h_{t-1} + b^{\text{rec}}_z), \qquad
# r_t = \sigma(U_r x_t + b^{\text{in}}_r + W_r h_{t-1} + b^{\text{rec}}_r)\\
# \tilde h_t &= \tanh\left(U_h x_t + b^{\text{in}}_h + r_t \odot (W_h h_{t-1} + b^{\text{rec}}_h)\right), \qquad
# h_t = (1 - z_t) \odot \tilde h_t + z_t \odot h_{t-1}
# \end{aligned}$$
#
# The step is **given** below as `gru_step`: you write no GRU here.
#
# **ELMo.** A bidirectional language model with $L$ layers gives each token $k$ the vectors
# $h_{k,0}$ (the token layer, which sees no context) and $h_{k,j} = [\overrightarrow{h}_{k,j};
# \overleftarrow{h}_{k,j}]$ for the biLSTM layers $j = 1, \dots, L$. A task then uses
#
# $$\text{ELMo}_k = \gamma \sum_{j=0}^{L} s_j\, h_{k,j}, \qquad s = \operatorname{softmax}(w),$$
#
# with $L + 1$ weights $w_j$ and one scale $\gamma$, learned with the task.
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off and by how much), and a **hidden test** that
#   runs at grading time on other shapes, seeds and edge cases ($B = 1$, $T = 1$, $H = 1$,
#   sequences in any order of length, garbage in the padding, huge mixing weights, three
#   senses, non-contiguous arrays, labels given as strings...) and checks that bad input
#   raises `ValueError`. Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests torch's recurrent layers (`torch.nn.GRU`, `LSTM`, their
#   cells and functions), its softmax, layer norm and cosine similarity, autograd and the
#   helpers of the `course` package are replaced by traps: calling them from your functions
#   fails the test. (`course.checks` is allowed.) The visible tests run your functions under
#   the same rule and say so when one of them calls a forbidden routine; their data and
#   expected values are in `course/checks/a3_bilstm_elmo.py`.
#
# Autograded: 13 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a3 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a3_bilstm_elmo/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a3_bilstm_elmo import check_part_a, check_part_b, check_part_c, check_part_d

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## The given GRU step
#
# Run this cell; it is not graded. `gru_step` checks the shapes of its weights, so a reader
# that hands it the wrong dictionary gets a clear `ValueError`.


# %% nbgrader={"grade": false, "grade_id": "given_gru_step", "locked": true, "schema_version": 3, "solution": false, "task": false}
def gru_step(x: np.ndarray, h: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
    """One GRU step for a batch (PyTorch's convention, as in Lecture 2), given.

    Args:
        x: inputs x_t, shape (B, D).
        h: previous states h_{t-1}, shape (B, H).
        params: "U" (3H, D), "W" (3H, H), "b_in" (3H,), "b_rec" (3H,); blocks z, r, n.

    Returns:
        The new states h_t, shape (B, H).
    """
    x = np.asarray(x, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    H = h.shape[-1]
    expected = {"U": (3 * H, x.shape[-1]), "W": (3 * H, H), "b_in": (3 * H,), "b_rec": (3 * H,)}
    for key, shape in expected.items():
        if key not in params:
            raise ValueError(f"gru_step: params has no key {key!r}")
        if np.shape(params[key]) != shape:
            raise ValueError(
                f"gru_step: params[{key!r}] should have shape {shape} for D = {x.shape[-1]} "
                f"and H = {H}, got {np.shape(params[key])}"
            )
    via_input = x @ np.asarray(params["U"]).T + params["b_in"]  # (B, 3H)
    via_state = h @ np.asarray(params["W"]).T + params["b_rec"]  # (B, 3H)
    gates = 0.5 * (1.0 + np.tanh(0.5 * (via_input[:, : 2 * H] + via_state[:, : 2 * H])))
    z, r = gates[:, :H], gates[:, H:]  # update and reset gates, (B, H) each
    candidate = np.tanh(via_input[:, 2 * H :] + r * via_state[:, 2 * H :])
    return (1.0 - z) * candidate + z * h


# %% [markdown]
# ## Part A: a bidirectional reader over a padded batch (4 points)
#
# A bidirectional reader runs two GRUs over each sequence: a **forward** one, with weights
# `params_fwd`, reads positions $0, 1, \dots$ and gives $\overrightarrow{h}_t$, which has
# seen the tokens up to $t$; a **backward** one, with weights `params_bwd`, reads the same
# tokens from the last one back to position 0 and gives $\overleftarrow{h}_t$, which has seen
# the tokens from $t$ to the end. Both start from zero states. The representation of token
# $t$ is the concatenation $[\overrightarrow{h}_t; \overleftarrow{h}_t]$, of size $2H$.
#
# Implement `bidirectional_gru`. It returns a dict with
#
# * `"states"`, shape (B, T, 2H): $[\overrightarrow{h}_t; \overleftarrow{h}_t]$ at real
#   positions and **zeros** at padded ones (as PyTorch's `pad_packed_sequence` gives);
# * `"final_fwd"`, shape (B, H): the forward state at each sequence's last real token;
# * `"final_bwd"`, shape (B, H): the backward state after reading back to position 0.
#
# **Where the backward reader starts matters.** The "end" of sequence $b$ is its last *real*
# token, at position `lengths[b] - 1`: a backward reader that starts at position $T - 1$
# reads the padding first, and every backward state of that sequence is then wrong. Padding
# must change nothing: each sequence must get exactly the states it gets when read alone.
#
# Bad input gets a `ValueError` with a clear message: `xs` that is not 3-D, `lengths` that is
# not one integer per sequence, and a length outside $1, \dots, T$ (a sequence of length 0
# has nothing to read). Use the given `gru_step`.


# %% nbgrader={"grade": false, "grade_id": "bidirectional_gru", "locked": false, "schema_version": 3, "solution": true, "task": false}
def bidirectional_gru(
    xs: np.ndarray,
    lengths: np.ndarray,
    params_fwd: dict[str, np.ndarray],
    params_bwd: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Read a padded batch forward and backward with two GRUs.

    Args:
        xs: inputs, shape (B, T, D); positions at or after lengths[b] are padding.
        lengths: the number of real tokens of each sequence, integers in [1, T], shape (B,).
        params_fwd: the forward GRU's weights, as for gru_step.
        params_bwd: the backward GRU's weights, as for gru_step.

    Returns:
        {"states": (B, T, 2H), zeros at padded positions,
         "final_fwd": (B, H), "final_bwd": (B, H)}.

    Raises:
        ValueError: for a wrong shape or a length outside [1, T].
    """
    ### BEGIN SOLUTION
    tokens = np.asarray(xs, dtype=np.float64)
    if tokens.ndim != 3:
        raise ValueError(f"xs should have shape (B, T, D), got {tokens.ndim} dimensions")
    n_seq, n_pos = tokens.shape[:2]
    sizes = np.asarray(lengths)
    if sizes.shape != (n_seq,) or not np.issubdtype(sizes.dtype, np.integer):
        wanted = f"one integer per sequence, shape ({n_seq},)"
        raise ValueError(f"lengths should hold {wanted}, got {sizes.shape}, {sizes.dtype}")
    if n_seq and (sizes.min() < 1 or sizes.max() > n_pos):
        span = f"between 1 and T = {n_pos} (a length of 0 leaves nothing to read)"
        raise ValueError(f"every length must be {span}, got {sizes.tolist()}")
    is_real = np.arange(n_pos)[None, :] < sizes[:, None]  # (B, T)
    carried_fwd = np.zeros((n_seq, np.shape(params_fwd["W"])[-1]))  # (B, H)
    carried_bwd = np.zeros((n_seq, np.shape(params_bwd["W"])[-1]))  # (B, H)
    read_fwd = np.zeros((n_seq, n_pos, carried_fwd.shape[1]))
    read_bwd = np.zeros((n_seq, n_pos, carried_bwd.shape[1]))
    for pos in range(n_pos):
        here = is_real[:, pos : pos + 1]  # (B, 1): this position is a real token
        stepped = gru_step(tokens[:, pos], carried_fwd, params_fwd)  # (B, H)
        carried_fwd = np.where(here, stepped, carried_fwd)
        read_fwd[:, pos] = np.where(here, carried_fwd, 0.0)
    for pos in range(n_pos - 1, -1, -1):  # padding leaves the backward state at zero
        here = is_real[:, pos : pos + 1]
        stepped = gru_step(tokens[:, pos], carried_bwd, params_bwd)
        carried_bwd = np.where(here, stepped, carried_bwd)
        read_bwd[:, pos] = np.where(here, carried_bwd, 0.0)
    both = np.concatenate([read_fwd, read_bwd], axis=-1)  # (B, T, 2H)
    return {"states": both, "final_fwd": carried_fwd, "final_bwd": carried_bwd}
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Two sequences of lengths 3 and 2, padded to $T = 3$; the padding of the second holds large
# numbers. The test first reads the second sequence alone, without padding, and asks for the
# same states in the batch; then it compares with numbers from `torch.nn.GRU` with
# `bidirectional=True` on packed sequences.

# %% nbgrader={"grade": true, "grade_id": "test_bidirectional_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(bidirectional_gru)

# %% nbgrader={"grade": true, "grade_id": "test_bidirectional_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): bidirectional_gru against torch.nn.GRU (bidirectional, on packed
# sequences) for B = 1, T = 1, H = 1, sequences of every length in any order, garbage in the
# padding, lengths given as a list and non-contiguous arrays; inputs must come back
# unmodified; ValueError for a length of 0 or above T, a wrong number of lengths, xs that is
# not 3-D.
### BEGIN HIDDEN TESTS
from autograder.hidden.a3_bilstm_elmo import check_bidirectional_gru

check_bidirectional_gru(bidirectional_gru)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your reader against PyTorch's
#
# Once Part A passes, this cell builds `torch.nn.GRU(..., bidirectional=True)` with the same
# random weights (PyTorch orders the blocks r, z, n; ours are z, r, n), reads a padded batch
# through `pack_padded_sequence`, and prints the largest difference from your reader. It
# also shows what goes wrong when the backward reader starts at the padding.

# %%
import torch


def torch_bidirectional(xs, lengths, params_fwd, params_bwd):
    """states (B, T, 2H), final_fwd and final_bwd (B, H) from torch.nn.GRU on packed input."""
    B, T, D = xs.shape
    H = params_fwd["W"].shape[1]
    layer = torch.nn.GRU(D, H, batch_first=True, bidirectional=True, dtype=torch.float64)
    zrn_to_rzn = np.r_[H : 2 * H, 0:H, 2 * H : 3 * H]  # row order of PyTorch's blocks
    with torch.no_grad():
        for suffix, p in (("", params_fwd), ("_reverse", params_bwd)):
            getattr(layer, f"weight_ih_l0{suffix}").copy_(torch.tensor(p["U"][zrn_to_rzn]))
            getattr(layer, f"weight_hh_l0{suffix}").copy_(torch.tensor(p["W"][zrn_to_rzn]))
            getattr(layer, f"bias_ih_l0{suffix}").copy_(torch.tensor(p["b_in"][zrn_to_rzn]))
            getattr(layer, f"bias_hh_l0{suffix}").copy_(torch.tensor(p["b_rec"][zrn_to_rzn]))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(xs), torch.tensor(lengths), batch_first=True, enforce_sorted=False
        )
        out, h_n = layer(packed)
        states, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    return states.numpy(), h_n[0].numpy(), h_n[1].numpy()


rng = np.random.default_rng(0)
D_x, H_x, lengths_x = 4, 3, np.array([5, 2, 4, 1])
params_x = [
    {
        "U": 0.5 * rng.normal(size=(3 * H_x, D_x)),
        "W": 0.5 * rng.normal(size=(3 * H_x, H_x)),
        "b_in": 0.1 * rng.normal(size=3 * H_x),
        "b_rec": 0.1 * rng.normal(size=3 * H_x),
    }
    for _ in range(2)
]
xs_x = rng.normal(size=(len(lengths_x), lengths_x.max(), D_x))
xs_x[np.arange(lengths_x.max())[None, :] >= lengths_x[:, None]] = 5.0  # padding
states_ref, fwd_ref, bwd_ref = torch_bidirectional(xs_x, lengths_x, *params_x)
try:
    mine = bidirectional_gru(xs_x, lengths_x, *params_x)
    gap = max(
        np.abs(mine["states"] - states_ref).max(),
        np.abs(mine["final_fwd"] - fwd_ref).max(),
        np.abs(mine["final_bwd"] - bwd_ref).max(),
    )
    print(f"largest difference from torch.nn.GRU (bidirectional, packed): {gap:.1e}")
    # A backward reader that starts at position T - 1 reads the padding of every short row:
    from_padding = bidirectional_gru(xs_x, np.full(4, lengths_x.max()), *params_x)
    print(
        "final_bwd if the backward reader starts at the padding: off by up to "
        f"{np.abs(from_padding['final_bwd'] - bwd_ref).max():.2f} (sequence 0, with no "
        f"padding, is off by {np.abs(from_padding['final_bwd'][0] - bwd_ref[0]).max():.1e})"
    )
except NotImplementedError:
    print("Implement bidirectional_gru first, then run this cell again.")

# %% [markdown]
# ## Part B: ELMo's scalar mix (3 points)
#
# ELMo hands a task one vector per token: a weighted sum of the biLM's layers. Implement
#
# * `mix_weights(w)`: $s = \operatorname{softmax}(w)$ for a 1-D array $w$ of $L + 1$ weights.
#   Compute it **stably**: the weights are learned, nothing keeps them small, and
#   $e^{1000}$ overflows. Softmax does not change when the same number is subtracted from
#   every $w_j$; subtract $\max_j w_j$.
# * `scalar_mix(layers, w, gamma, mask=None, layer_norm=False)`: `layers` has shape
#   (L+1, B, T, D), layer $j = 0$ first; return $\gamma \sum_j s_j h_j$, shape (B, T, D).
#
# **With `layer_norm=True`** each layer is first normalised as a whole, the way AllenNLP's
# `ScalarMix(do_layer_norm=True)` does it: for layer $j$, one mean $\mu_j$ and one variance
# $\sigma_j^2$ are taken over **all its real tokens and all their $D$ features together**
# (the tokens where `mask == 1`, across the whole batch; `mask=None` means every position is
# real), and the layer becomes $(h_j - \mu_j) / \sqrt{\sigma_j^2 + 10^{-12}}$ before it is
# weighted. The variance divides by the number of values (no $-1$), and there is no learned
# scale or shift. Padding must not change $\mu_j$ or $\sigma_j$. (This is not PyTorch's
# `nn.LayerNorm`, which normalises each token over its own $D$ features.) The output at padded
# positions is not graded; with `layer_norm=False` the mask changes nothing.
#
# `mix_weights` raises `ValueError` for a `w` that is not a non-empty 1-D array. `scalar_mix`
# raises it for `layers` that is not 4-D, a `w` whose length is not $L + 1$, a mask whose shape
# is not (B, T), and (with `layer_norm=True`) a mask with no real token.


# %% nbgrader={"grade": false, "grade_id": "scalar_mix", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mix_weights(w: np.ndarray) -> np.ndarray:
    """softmax(w), computed without overflow. w: shape (L+1,). Returns s, shape (L+1,)."""
    ### BEGIN SOLUTION
    raw = np.asarray(w, dtype=np.float64)
    if raw.ndim != 1 or raw.size == 0:
        raise ValueError(f"w should be a non-empty 1-D array, got shape {raw.shape}")
    lifted = np.exp(raw - raw.max())  # the largest becomes exp(0) = 1: nothing overflows
    return lifted / lifted.sum()
    ### END SOLUTION


def scalar_mix(
    layers: np.ndarray,
    w: np.ndarray,
    gamma: float,
    mask: np.ndarray | None = None,
    layer_norm: bool = False,
) -> np.ndarray:
    """ELMo's mix gamma * sum_j softmax(w)_j * layers[j].

    Args:
        layers: shape (L+1, B, T, D), the token layer first.
        w: the L+1 mixing weights, before the softmax, shape (L+1,).
        gamma: the scale.
        mask: (B, T), 1 or True at real tokens; None means every position is real.
        layer_norm: normalise each layer over its real tokens and features first.

    Returns:
        The mix, shape (B, T, D).
    """
    ### BEGIN SOLUTION
    stack = np.asarray(layers, dtype=np.float64)
    if stack.ndim != 4:
        raise ValueError(f"layers should have shape (L+1, B, T, D), got shape {stack.shape}")
    share = mix_weights(w)  # (L+1,)
    if share.shape[0] != stack.shape[0]:
        raise ValueError(f"w has {share.shape[0]} weights for {stack.shape[0]} layers")
    grid = stack.shape[1:3]  # (B, T)
    counted = np.ones(grid, dtype=bool) if mask is None else np.asarray(mask).astype(bool)
    if counted.shape != grid:
        raise ValueError(f"mask should have shape (B, T) = {grid}, got {counted.shape}")
    if layer_norm:
        if not counted.any():
            raise ValueError("the mask marks no real token: there is nothing to normalise over")
        picked = stack[:, counted]  # (L+1, number of real tokens, D)
        centre = picked.mean(axis=(1, 2)).reshape(-1, 1, 1, 1)
        scale = np.sqrt(picked.var(axis=(1, 2)) + 1e-12).reshape(-1, 1, 1, 1)
        stack = (stack - centre) / scale
    return gamma * np.tensordot(share, stack, axes=1)  # (B, T, D)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Three layers of a batch of two sequences of lengths 3 and 2 ($B = 2$, $T = 3$, $D = 2$);
# the padded token holds large numbers.

# %% nbgrader={"grade": true, "grade_id": "test_scalar_mix_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(scalar_mix, mix_weights)

# %% nbgrader={"grade": true, "grade_id": "test_scalar_mix_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): mix_weights for huge positive and negative weights and a single
# weight, ValueError for a w that is empty or 2-D; scalar_mix with and without layer normalisation on other shapes (one layer, B = 1,
# T = 1, an integer mask, mask=None, garbage in the padding, non-contiguous arrays), against
# a reference computed in another way; inputs must come back unmodified; ValueError for
# mismatched shapes and a mask with no real token.
### BEGIN HIDDEN TESTS
from autograder.hidden.a3_bilstm_elmo import check_scalar_mix

check_scalar_mix(scalar_mix, mix_weights)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): the mix against PyTorch, and why normalise
#
# With a mask, AllenNLP's statistics are those of the real values of a layer taken as one
# long vector: `torch.nn.functional.layer_norm` over that vector gives the same numbers. The
# cell checks your `scalar_mix` against it and `torch.softmax`, then shows why one would
# normalise at all: layers of a biLM can differ in scale by orders of magnitude, and without
# normalisation the loudest layer drowns the others whatever the weights say.

# %%
rng = np.random.default_rng(1)
layers_x = rng.normal(size=(3, 4, 6, 5)) * np.array([1.0, 10.0, 0.1])[:, None, None, None]
mask_x = np.arange(6)[None, :] < np.array([6, 3, 5, 1])[:, None]  # (B=4, T=6)
layers_x[:, ~mask_x] = 1e3  # padding
w_x, gamma_x = np.array([0.3, -1.0, 2.0]), 1.7
s_torch = torch.softmax(torch.tensor(w_x), dim=0)
flat_norm = [
    torch.nn.functional.layer_norm(
        torch.tensor(layer[mask_x].ravel()), (mask_x.sum() * 5,), eps=1e-12
    )
    for layer in layers_x
]  # each layer's real values as one long normalised vector
mix_torch = gamma_x * sum(s_j * v for s_j, v in zip(s_torch, flat_norm, strict=True))
try:
    gap_s = np.abs(mix_weights(w_x) - s_torch.numpy()).max()
    mine_x = scalar_mix(layers_x, w_x, gamma_x, mask=mask_x, layer_norm=True)
    gap_mix = np.abs(mine_x[mask_x].ravel() - mix_torch.numpy()).max()
    print(f"mix_weights against torch.softmax: largest difference {gap_s:.1e}")
    print(f"scalar_mix (layer_norm=True) against F.layer_norm per layer: {gap_mix:.1e}")
    for norm in (False, True):
        mixed = scalar_mix(layers_x, np.zeros(3), 1.0, mask=mask_x, layer_norm=norm)[mask_x]
        share = [abs(np.corrcoef(mixed.ravel(), layer[mask_x].ravel())[0, 1]) for layer in layers_x]
        print(
            f"equal weights, layer_norm={norm}: |correlation| of the mix with each layer",
            np.round(share, 2),
        )
except NotImplementedError:
    print("Implement mix_weights and scalar_mix first, then run this cell again.")

# %% [markdown]
# ## Part C: how contextual is a word? (3 points)
#
# Collect the vectors of one word, say *bank*, in $N$ different sentences, from every layer
# of a model: `vectors_by_layer` of shape (L, N, D). If a layer gave the word the same vector
# everywhere (a type embedding, like ELMo's token layer), all $N$ vectors would point the
# same way; the more a layer adapts the word to its context, the more the vectors spread.
# Ethayarajh (2019) measures this with the mean cosine similarity between the vectors of
# different occurrences.
#
# Implement
#
# * `cosine_similarity_matrix(vectors)`: for `vectors` (N, D), the (N, N) matrix
#   $C_{ik} = v_i \cdot v_k / (\lVert v_i\rVert\,\lVert v_k\rVert)$;
# * `mean_context_similarity(vectors_by_layer)`: for each of the $L$ layers, the mean of
#   $C_{ik}$ over the $N(N-1)$ pairs $i \ne k$ (the diagonal, always 1, is left out). Return a
#   **list of L Python floats**.
#
# A zero vector has no direction: raise `ValueError` (both functions), as for arrays of the
# wrong number of dimensions. `mean_context_similarity` also raises `ValueError` when
# $N < 2$: there is no pair to compare. A type embedding gives 1.0 (up to rounding).


# %% nbgrader={"grade": false, "grade_id": "context_similarity", "locked": false, "schema_version": 3, "solution": true, "task": false}
def cosine_similarity_matrix(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows. vectors: (N, D). Returns (N, N)."""
    ### BEGIN SOLUTION
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"vectors should have shape (N, D), got shape {rows.shape}")
    sizes = np.sqrt(np.einsum("nd,nd->n", rows, rows))  # (N,)
    if np.any(sizes == 0):
        raise ValueError(f"vector {int(np.argmin(sizes))} is zero: it has no direction")
    directions = rows / sizes[:, None]
    return directions @ directions.T  # (N, N)
    ### END SOLUTION


def mean_context_similarity(vectors_by_layer: np.ndarray) -> list[float]:
    """Mean cosine similarity over pairs of different occurrences, per layer.

    Args:
        vectors_by_layer: shape (L, N, D), N >= 2 occurrences of one word in each of L layers.

    Returns:
        A list of L floats.
    """
    ### BEGIN SOLUTION
    per_layer = np.asarray(vectors_by_layer, dtype=np.float64)
    if per_layer.ndim != 3:
        raise ValueError(f"vectors_by_layer should be (L, N, D), got shape {per_layer.shape}")
    count = per_layer.shape[1]
    if count < 2:
        raise ValueError(f"need at least two occurrences to compare, got N = {count}")
    pairs = count * (count - 1)
    result = []
    for one_layer in per_layer:
        table = cosine_similarity_matrix(one_layer)
        result.append(float((table.sum() - np.trace(table)) / pairs))
    return result
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C

# %% nbgrader={"grade": true, "grade_id": "test_context_similarity_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(cosine_similarity_matrix, mean_context_similarity)

# %% nbgrader={"grade": true, "grade_id": "test_context_similarity_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): cosine_similarity_matrix against torch's cosine similarity and
# mean_context_similarity against a direct mean over pairs, for other L, N, D (N = 2, D = 1,
# vectors of very different lengths, anti-parallel vectors, a type embedding, float32 and
# non-contiguous arrays); inputs must come back unmodified; ValueError for a zero vector,
# N < 2 and arrays of the wrong number of dimensions.
### BEGIN HIDDEN TESTS
from autograder.hidden.a3_bilstm_elmo import check_context_similarity

check_context_similarity(cosine_similarity_matrix, mean_context_similarity)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): a word whose vectors spread layer by layer
#
# Synthetic vectors, made to behave like a contextual model's: layer 0 gives every occurrence
# the same vector, and each layer above adds more of a context-dependent part. The cell also
# checks your matrix against `torch.nn.functional.cosine_similarity`.

# %%
rng = np.random.default_rng(2)
word_x = rng.normal(size=16)
contexts_x = rng.normal(size=(12, 16))  # one context vector per sentence
synthetic_x = np.stack([word_x + mix * contexts_x for mix in (0.0, 0.5, 1.0, 2.0)])  # (L=4, N, D)
try:
    pairs_torch = torch.nn.functional.cosine_similarity(
        torch.tensor(synthetic_x[2])[:, None], torch.tensor(synthetic_x[2])[None, :], dim=-1
    )
    gap_c = np.abs(cosine_similarity_matrix(synthetic_x[2]) - pairs_torch.numpy()).max()
    print(f"cosine_similarity_matrix against F.cosine_similarity: largest difference {gap_c:.1e}")
    for layer_x, value_x in enumerate(mean_context_similarity(synthetic_x)):
        print(f"layer {layer_x}: mean similarity across sentences {value_x:.3f}")
except NotImplementedError:
    print("Implement Part C first, then run this cell again.")

# %% [markdown]
# ## Part D: which layer separates two senses? (3 points)
#
# Peters et al. (2018) found that ELMo's upper layer is better at telling the senses of a word
# apart, and its lower layer better at part-of-speech. A simple probe: given the vectors of a
# word in $N$ sentences, with the sense used in each (`senses`, a list or array of $N$ labels,
# numbers or strings), classify each occurrence by the sense whose **centroid** (the mean of
# its vectors) it is most similar to, by cosine, and count how often that is right.
#
# To be honest, the probe must not see the answer: when occurrence $i$ is classified, the
# centroid of its own sense is computed **without** $v_i$ (leave-one-out); the centroids of the
# other senses use all their vectors. Otherwise $v_i$ pulls its own centroid towards itself,
# and with few examples per sense the accuracy looks better than it is.
#
# Implement
#
# * `sense_separation(vectors_by_layer, senses)`: for `vectors_by_layer` of shape (L, N, D),
#   a **list of L floats**, the leave-one-out nearest-centroid accuracy of each layer (the
#   fraction of the $N$ occurrences classified correctly);
# * `best_layer(vectors_by_layer, senses)`: the index of the layer with the highest accuracy,
#   as a Python `int`; when several layers tie, the **lowest** one.
#
# Raise `ValueError` when `senses` does not have $N$ labels, when there are fewer than two
# senses, or when a sense has a single example (leaving it out leaves no centroid). The tests
# avoid inputs where an occurrence is exactly as similar to two centroids.


# %% nbgrader={"grade": false, "grade_id": "sense_separation", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sense_separation(vectors_by_layer: np.ndarray, senses: list | np.ndarray) -> list[float]:
    """Leave-one-out nearest-centroid accuracy (cosine) of each layer.

    Args:
        vectors_by_layer: shape (L, N, D).
        senses: N labels (numbers or strings), at least two senses, each at least twice.

    Returns:
        A list of L floats in [0, 1].
    """
    ### BEGIN SOLUTION
    per_layer = np.asarray(vectors_by_layer, dtype=np.float64)
    if per_layer.ndim != 3:
        raise ValueError(f"vectors_by_layer must have 3 dimensions (L, N, D), not {per_layer.ndim}")
    tags = list(senses)
    n_items = per_layer.shape[1]
    if len(tags) != n_items:
        raise ValueError(f"senses has {len(tags)} labels for N = {n_items} occurrences")
    names, which, support = np.unique(np.asarray(tags), return_inverse=True, return_counts=True)
    which = which.ravel()
    if len(names) < 2:
        raise ValueError(f"need at least two senses, got {len(names)}")
    if support.min() < 2:
        lonely = names[int(np.argmin(support))]
        raise ValueError(f"sense {lonely!r} has a single example: no centroid is left without it")
    members = (which[:, None] == np.arange(len(names))[None, :]).astype(np.float64)  # (N, S)
    scores = []
    for one_layer in per_layer:
        sums = members.T @ one_layer  # (S, D)
        centres = np.repeat((sums / support[:, None])[None], n_items, axis=0)  # (N, S, D)
        others = (support[which] - 1)[:, None]  # (N, 1): the size of each own sense, minus one
        centres[np.arange(n_items), which] = (sums[which] - one_layer) / others
        lengths = np.linalg.norm(one_layer, axis=1)[:, None] * np.linalg.norm(centres, axis=2)
        if np.any(lengths == 0):
            raise ValueError("a zero vector or a zero centroid has no direction")
        closeness = np.einsum("nd,nsd->ns", one_layer, centres) / lengths  # (N, S)
        scores.append(float(np.mean(np.argmax(closeness, axis=1) == which)))
    return scores
    ### END SOLUTION


def best_layer(vectors_by_layer: np.ndarray, senses: list | np.ndarray) -> int:
    """The index of the layer with the best sense_separation (the lowest one on a tie)."""
    ### BEGIN SOLUTION
    accuracies = sense_separation(vectors_by_layer, senses)
    return int(np.argmax(accuracies))  # argmax returns the first of equal maxima
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# Six occurrences of a word with two senses, three of each, in three layers of 2-D vectors.
# In layer 1 a centroid that kept the held-out vector would look perfect.

# %% nbgrader={"grade": true, "grade_id": "test_sense_separation_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(sense_separation, best_layer)

# %% nbgrader={"grade": true, "grade_id": "test_sense_separation_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): sense_separation against a direct leave-one-out loop and best_layer,
# for other L, N, D, three senses, integer and string labels, small senses where leaving one
# out changes the answer, layers that tie, non-contiguous arrays; inputs must come back
# unmodified; ValueError for a sense with one example, a single sense, mismatched lengths.
### BEGIN HIDDEN TESTS
from autograder.hidden.a3_bilstm_elmo import check_sense_separation

check_sense_separation(sense_separation, best_layer)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): a sense that only the upper layers see
#
# Synthetic again: 20 occurrences of a word with two senses. Layer 0 is a type embedding with
# a little noise (it cannot know the sense), layer 1 carries a weak trace of the sense and
# layer 2 a strong one. Try fewer occurrences per sense, and compare with centroids that keep
# the held-out vector.

# %%
rng = np.random.default_rng(3)
senses_x = ["river"] * 10 + ["money"] * 10
direction_x = rng.normal(size=(2, 8))  # one direction per sense
signal_x = np.array([direction_x[0 if s == "river" else 1] for s in senses_x])  # (N, D)
base_x = rng.normal(size=8) * 3.0
probe_x = np.stack(
    [base_x + strength * signal_x + rng.normal(size=(20, 8)) for strength in (0.0, 0.7, 2.0)]
)  # (L=3, N=20, D=8)
try:
    for layer_x, accuracy_x in enumerate(sense_separation(probe_x, senses_x)):
        print(f"layer {layer_x}: leave-one-out accuracy {accuracy_x:.2f}")
    print("best layer:", best_layer(probe_x, senses_x))
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# ## Part E: why a mix of layers? (2 points, graded by hand)
#
# In 4 to 8 sentences, explain why ELMo gives each downstream task its own learned weights
# $s_j$ (and scale $\gamma$) over all the biLM's layers instead of handing it the top layer.
# Say what the different layers are known to hold, what the top layer was trained for, what
# the mix costs, and what $\gamma$ is for.

# %% [markdown] nbgrader={"grade": true, "grade_id": "why_mix_layers", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** The layers of a biLM hold different information: the token layer has only
# the word's spelling and type, the first biLSTM layer is best for syntax (part-of-speech
# tagging probes peak there), and the second for meaning in context (word-sense
# disambiguation peaks there). A task needs its own blend: a tagger or parser leans on the
# lower layers, a sense-aware task on the upper one. The top layer was trained for one thing,
# predicting the next (or previous) word, so it is specialised to that objective and can drop
# what the language model no longer needs but the task does. Learning the mix lets the task
# choose, with gradient descent, how much of each layer to use; it costs only $L + 1$ weights
# and one scale, so it fits even small labelled data sets, and it never does worse than a fixed
# choice of layer since a one-hot $s$ is among its options (Peters et al. report gains over
# using the top layer alone, and more with a small regularisation toward equal weights). The
# softmax keeps the weights positive and summing to one, and $\gamma$ rescales the whole ELMo
# vector to the size the task model expects, since the biLM's activations have a scale of
# their own (layer normalisation of each layer serves the same purpose across layers).
#
# *Grading notes: 1 point for the different content of the layers (syntax lower, semantics
# higher, the top specialised to language modelling) and thus different needs of tasks; 1 point
# for the cost of the mix (a handful of parameters, learned with the task, with a one-hot mix
# as a special case) and the role of $\gamma$ (scale).*
