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
# # Assignment 3: a stacked bidirectional reader, ELMo's scalar mix, and what each layer knows
#
# In Lecture 3 you saw a forward and a backward LSTM read the same sentence, layers stacked
# on top of each other, and ELMo mix the layers of a bidirectional language model into one
# vector per token. Here you write these pieces yourself in NumPy, for padded batches, and
# then use them the way ELMo's authors did: to ask which layer of a contextual model knows
# what, with measures that a vector common to a whole layer cannot fool.
#
# **Goals.** After this assignment you can
#
# 1. run a stack of bidirectional recurrent layers over a padded batch, each layer reading
#    both halves of the one below, with backward readers that start at each sentence's own
#    last word (Part A);
# 2. compute ELMo's scalar mix of layers, with a stable softmax and an optional layer
#    normalisation that looks only at real tokens (Part B);
# 3. measure how much the vectors of one word change from sentence to sentence, layer by
#    layer, once the layer's common direction is removed, and how many directions they
#    spread in (Part C);
# 4. find the layer whose vectors best separate two senses of a word (Part D);
# 5. predict and explain what these functions measure: which tokens reach a state of the
#    stack, and what a common offset and a small sample do to the measures of Part C (Part E,
#    written).
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
#   one to three layers, sequences in any order of length, garbage in the padding, huge
#   mixing weights, $N = 2$ occurrences, a large common offset, three senses, non-contiguous
#   arrays, labels given as strings...) and checks that bad input
#   raises `ValueError`. Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests torch's recurrent layers (`torch.nn.GRU`, `LSTM`, their
#   cells and functions, packing), its softmax, layer norm, cosine similarity, covariance,
#   eigenvalue and singular value routines, autograd and the helpers of the `course` package
#   (`course.analysis` included) are replaced by traps: calling them from your functions
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
# ## Part A: a stacked bidirectional reader over a padded batch (4 points)
#
# A bidirectional layer runs two GRUs over each sequence: a **forward** one reads positions
# $0, 1, \dots$ and gives $\overrightarrow{h}_t$, which has seen the inputs up to $t$; a
# **backward** one reads the same inputs from the last one back to position 0 and gives
# $\overleftarrow{h}_t$, which has seen the inputs from $t$ to the end. Both start from zero
# states, and the layer's output at $t$ is $[\overrightarrow{h}_t; \overleftarrow{h}_t]$, of
# size $2H$. Lecture 3 reads one such layer; here you **stack** them, wired as
# `torch.nn.GRU(bidirectional=True, num_layers=L)` wires them: the inputs of layer 1 are the
# $x_t$, and **both** readers of layer $l + 1$ take as their input at position $t$ the whole
# output of layer $l$ there,
#
# $$\overrightarrow{h}^{\,l+1}_t = \operatorname{GRU}^{\rightarrow}_{l+1}\big([\overrightarrow{h}^{\,l}_t; \overleftarrow{h}^{\,l}_t],\ \overrightarrow{h}^{\,l+1}_{t-1}\big),
# \qquad
# \overleftarrow{h}^{\,l+1}_t = \operatorname{GRU}^{\leftarrow}_{l+1}\big([\overrightarrow{h}^{\,l}_t; \overleftarrow{h}^{\,l}_t],\ \overleftarrow{h}^{\,l+1}_{t+1}\big),$$
#
# so the input matrices `U` of layer $l + 1$ have $2H$ columns, the forward half first. (The
# biLM of Lecture 3 keeps two separate stacks instead; Part E asks what the difference does.)
#
# Implement `stacked_bidirectional_gru(xs, lengths, layers)`, where `layers` is a list of
# $L \ge 1$ pairs `(params_fwd, params_bwd)`, layer 1 first, each a dict of weights as for
# `gru_step`. It returns a dict with
#
# * `"states"`, shape (B, T, 2H): the output of the **top** layer, $[\overrightarrow{h}^{\,L}_t;
#   \overleftarrow{h}^{\,L}_t]$, at real positions and **zeros** at padded ones (as PyTorch's
#   `pad_packed_sequence` gives);
# * `"h_n"`, shape (2L, B, H): the final state of every reader, in PyTorch's order (layer 1
#   forward, layer 1 backward, layer 2 forward, ...): a forward reader's state at the
#   sequence's last real token, a backward reader's after reading back to position 0.
#
# **Where the backward readers start matters, in every layer.** The "end" of sequence $b$ is its
# last *real* token, at position `lengths[b] - 1`: a backward reader that starts at position
# $T - 1$ reads the padding first, and its states for that sequence are then wrong, and so is
# everything the layers above compute from them. Padding must change nothing: each sequence
# must get exactly the states it gets when read alone.
#
# Bad input gets a `ValueError` with a clear message: `xs` that is not 3-D, `lengths` that is
# not one integer per sequence, a length outside $1, \dots, T$ (a sequence of length 0 has
# nothing to read), an empty `layers`, and an entry of `layers` that is not a pair. Use the
# given `gru_step` (it raises `ValueError` for weights of the wrong shape).


# %% nbgrader={"grade": false, "grade_id": "stacked_bidirectional_gru", "locked": false, "schema_version": 3, "solution": true, "task": false}
def stacked_bidirectional_gru(
    xs: np.ndarray,
    lengths: np.ndarray,
    layers: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]],
) -> dict[str, np.ndarray]:
    """Read a padded batch with L stacked bidirectional GRU layers (nn.GRU's wiring).

    Args:
        xs: inputs, shape (B, T, D); positions at or after lengths[b] are padding.
        lengths: the number of real tokens of each sequence, integers in [1, T], shape (B,).
        layers: L pairs (params_fwd, params_bwd), layer 1 first; layer 1's "U" is (3H, D),
            the "U" of the layers above is (3H, 2H).

    Returns:
        {"states": (B, T, 2H), the top layer's output, zeros at padded positions,
         "h_n": (2L, B, H), the final states: layer 1 forward, layer 1 backward, ...}.

    Raises:
        ValueError: for a wrong shape, a length outside [1, T] or a malformed `layers`.
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
    stack = list(layers)
    if not stack:
        raise ValueError("layers is empty: a reader needs at least one layer")
    is_real = (np.arange(n_pos)[None, :] < sizes[:, None])[:, :, None]  # (B, T, 1)
    below, finals = tokens, []  # below: the input of the current layer, (B, T, D or 2H)
    for depth, pair in enumerate(stack, start=1):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"layer {depth} should be a pair (params_fwd, params_bwd)")
        outputs = []
        for params, visit in zip(pair, (range(n_pos), range(n_pos - 1, -1, -1)), strict=True):
            carried = np.zeros((n_seq, np.shape(params["W"])[-1]))  # (B, H)
            read = np.zeros((n_seq, n_pos, carried.shape[1]))  # (B, T, H)
            for pos in visit:  # a padded position leaves the state as it is
                stepped = gru_step(below[:, pos], carried, params)
                carried = np.where(is_real[:, pos], stepped, carried)
                read[:, pos] = np.where(is_real[:, pos], carried, 0.0)
            outputs.append(read)
            finals.append(carried)
        below = np.concatenate(outputs, axis=-1)  # (B, T, 2H): what the next layer reads
    return {"states": below, "h_n": np.stack(finals)}  # h_n: (2L, B, H)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Two sequences of lengths 3 and 2, padded to $T = 3$, read by two layers ($D = 3$, $H = 2$);
# the padding of the second sequence holds large numbers. The test first reads the second
# sequence alone, without padding, and asks for the same states in the batch; then it
# compares with numbers from `torch.nn.GRU` with `bidirectional=True, num_layers=2` on packed
# sequences.

# %% nbgrader={"grade": true, "grade_id": "test_stacked_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(stacked_bidirectional_gru)

# %% nbgrader={"grade": true, "grade_id": "test_stacked_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): stacked_bidirectional_gru against torch.nn.GRU (bidirectional, 1 to
# 3 layers, on packed sequences) for B = 1, T = 1, H = 1, sequences of every length in any
# order, garbage in the padding, lengths given as a list, layers given as lists and
# non-contiguous arrays; inputs must come back unmodified; ValueError for a length of 0 or
# above T, a wrong number of lengths, xs that is not 3-D, no layer, a layer that is not a
# pair, and a layer 2 whose U does not read 2H inputs.
### BEGIN HIDDEN TESTS
from autograder.hidden.a3_bilstm_elmo import check_stacked_bidirectional_gru

check_stacked_bidirectional_gru(stacked_bidirectional_gru)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your reader against PyTorch's, and what the last token reaches
#
# Once Part A passes, this cell builds `torch.nn.GRU(..., bidirectional=True, num_layers=2)`
# with the same random weights (PyTorch orders the blocks r, z, n; ours are z, r, n), reads a
# padded batch through `pack_padded_sequence`, and prints the largest difference from your
# reader. Then it changes **only the last real token** of sequence 0 (length 5) and prints
# how much each of the four halves of the states at **position 0** moves: the two halves of
# layer 1 (read from the one-layer stack) and of layer 2. Part E asks you to predict these
# four numbers before you run the cell.

# %%
import torch


def torch_stacked(xs, lengths, layers):
    """states (B, T, 2H) and h_n (2L, B, H) from torch.nn.GRU on packed input."""
    B, T, D = xs.shape
    H = layers[0][0]["W"].shape[1]
    gru = torch.nn.GRU(
        D, H, num_layers=len(layers), batch_first=True, bidirectional=True, dtype=torch.float64
    )
    zrn_to_rzn = np.r_[H : 2 * H, 0:H, 2 * H : 3 * H]  # row order of PyTorch's blocks
    with torch.no_grad():
        for k, pair in enumerate(layers):
            for suffix, p in zip(("", "_reverse"), pair, strict=True):
                for name, key in (("weight_ih", "U"), ("weight_hh", "W"), ("bias_ih", "b_in"),
                                  ("bias_hh", "b_rec")):  # fmt: skip
                    getattr(gru, f"{name}_l{k}{suffix}").copy_(torch.tensor(p[key][zrn_to_rzn]))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(xs), torch.tensor(lengths), batch_first=True, enforce_sorted=False
        )
        out, h_n = gru(packed)
        states, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    return states.numpy(), h_n.numpy()


def random_gru(rng, D, H):
    return {
        "U": 0.5 * rng.normal(size=(3 * H, D)),
        "W": 0.5 * rng.normal(size=(3 * H, H)),
        "b_in": 0.1 * rng.normal(size=3 * H),
        "b_rec": 0.1 * rng.normal(size=3 * H),
    }


rng = np.random.default_rng(0)
D_x, H_x, lengths_x = 4, 3, np.array([5, 2, 4, 1])
layers_x = [(random_gru(rng, D_x, H_x), random_gru(rng, D_x, H_x))] + [
    (random_gru(rng, 2 * H_x, H_x), random_gru(rng, 2 * H_x, H_x))
]
xs_x = rng.normal(size=(len(lengths_x), lengths_x.max(), D_x))
xs_x[np.arange(lengths_x.max())[None, :] >= lengths_x[:, None]] = 5.0  # padding
states_ref, h_n_ref = torch_stacked(xs_x, lengths_x, layers_x)
try:
    mine = stacked_bidirectional_gru(xs_x, lengths_x, layers_x)
    gap = max(np.abs(mine["states"] - states_ref).max(), np.abs(mine["h_n"] - h_n_ref).max())
    print(f"largest difference from torch.nn.GRU (2 layers, bidirectional, packed): {gap:.1e}")
    changed_x = xs_x.copy()
    changed_x[0, lengths_x[0] - 1] += 1.0  # only the last real token of sequence 0
    for depth_x in (1, 2):
        before_x = stacked_bidirectional_gru(xs_x, lengths_x, layers_x[:depth_x])["states"]
        after_x = stacked_bidirectional_gru(changed_x, lengths_x, layers_x[:depth_x])["states"]
        move_x = np.abs(after_x[0, 0] - before_x[0, 0])  # (2H,) at position 0
        print(f"layer {depth_x} at position 0: the forward half moves by "
              f"{move_x[:H_x].max():.2e}, the backward half by {move_x[H_x:].max():.2e}")  # fmt: skip
except NotImplementedError:
    print("Implement stacked_bidirectional_gru first, then run this cell again.")

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
# ## Part C: how contextual is a word, once the common direction is removed? (3 points)
#
# Collect the vectors of one word, say *bank*, in $N$ different sentences, from every layer
# of a model: `vectors_by_layer` of shape (L, N, D). Ethayarajh (2019) calls the mean cosine
# similarity between the vectors of different occurrences the word's **self-similarity**,
# and Lecture 3 computes it for "green". He also found that the vectors of contextual models
# are **anisotropic**: all of a layer's vectors, whatever their word, share a large common
# component, so that any two of them have a high cosine. A high self-similarity can then mean
# "this layer hardly adapts the word to its context" or merely "this layer adds the same
# vector to everything". Two measures that a common component cannot inflate:
#
# * `centred_self_similarity(vectors_by_layer, background_by_layer)`: `background_by_layer`,
#   shape (L, M, D), holds the vectors of $M$ tokens of **any** words from the same layers
#   (a sample of the model's output). For each layer $j$, subtract the layer's mean vector
#   $\mu_j$, the mean of its $M$ background vectors, from each of the word's $N$ vectors:
#   $u_i = v_i - \mu_j$; the result is the mean of $\cos(u_i, u_k)$ over the $N(N-1)$ ordered
#   pairs $i \ne k$. Return a **list of L Python floats**.
# * `first_component_share(vectors_by_layer)`: for each layer, the share of the variance of
#   the word's $N$ vectors that their first principal component explains. Centre the
#   vectors on **their own** mean $\bar v$; with $\lambda_1 \ge \lambda_2 \ge \dots$ the
#   eigenvalues of their covariance matrix (equivalently, the squared singular values of the
#   centred (N, D) matrix), the share is $\lambda_1 / \sum_k \lambda_k$. It is near 1 when the
#   occurrences vary along one direction only, and smaller when they spread in many. Return
#   a **list of L Python floats**.
#
# Raise `ValueError` for arrays with the wrong number of dimensions, for $N < 2$ (there is no
# pair and no spread), and when a measure is undefined: an occurrence equal to the layer's
# mean vector (a centred vector of zero has no direction; `background_by_layer` must also have
# the same L and D, and $M \ge 1$), or a layer in which all $N$ vectors are equal (there is no
# variance to share). Use NumPy (its `np.linalg` included).


# %% nbgrader={"grade": false, "grade_id": "context_measures", "locked": false, "schema_version": 3, "solution": true, "task": false}
def centred_self_similarity(
    vectors_by_layer: np.ndarray, background_by_layer: np.ndarray
) -> list[float]:
    """Mean cosine over pairs of different occurrences, after removing each layer's mean vector.

    Args:
        vectors_by_layer: shape (L, N, D), N >= 2 occurrences of one word in each of L layers.
        background_by_layer: shape (L, M, D), M >= 1 vectors of any tokens from the same layers.

    Returns:
        A list of L floats.
    """
    ### BEGIN SOLUTION
    word = np.asarray(vectors_by_layer, dtype=np.float64)
    sample = np.asarray(background_by_layer, dtype=np.float64)
    shapes = f"vectors_by_layer {word.shape} and background_by_layer {sample.shape}"
    if word.ndim != 3 or sample.ndim != 3:
        raise ValueError(f"{shapes}: both should have 3 dimensions, (L, N, D) and (L, M, D)")
    if sample.shape[0] != word.shape[0] or sample.shape[2] != word.shape[2] or not sample.shape[1]:
        raise ValueError(f"{shapes}: the background needs the same L and D, and M >= 1")
    count = word.shape[1]
    if count < 2:
        raise ValueError(f"need at least two occurrences to compare, got N = {count}")
    shifted = word - sample.mean(axis=1, keepdims=True)  # (L, N, D): u_i = v_i - mu_j
    sizes = np.linalg.norm(shifted, axis=2, keepdims=True)  # (L, N, 1)
    if np.any(sizes == 0):
        raise ValueError("an occurrence equals its layer's mean vector: it has no direction")
    total = (shifted / sizes).sum(axis=1)  # (L, D): the sum of the unit vectors
    # sum over all ordered pairs, diagonal included, is |total|^2; the diagonal adds N ones
    return [float((s @ s - count) / (count * (count - 1))) for s in total]
    ### END SOLUTION


def first_component_share(vectors_by_layer: np.ndarray) -> list[float]:
    """The share of each layer's variance (about the word's own mean) on its first component.

    Args:
        vectors_by_layer: shape (L, N, D), N >= 2 occurrences of one word in each of L layers.

    Returns:
        A list of L floats in (0, 1].
    """
    ### BEGIN SOLUTION
    word = np.asarray(vectors_by_layer, dtype=np.float64)
    if word.ndim != 3:
        raise ValueError(f"vectors_by_layer should be (L, N, D), got shape {word.shape}")
    if word.shape[1] < 2:
        raise ValueError(f"need two occurrences or more to measure a spread, not {word.shape[1]}")
    shares = []
    for depth, occurrences in enumerate(word):
        spread = occurrences - occurrences.mean(axis=0)  # (N, D), centred on its own mean
        power = np.linalg.svd(spread, compute_uv=False) ** 2  # lambda_k up to a common factor
        if power.sum() == 0:
            raise ValueError(f"the vectors of layer {depth} are all equal: no variance to share")
        shares.append(float(power[0] / power.sum()))
    return shares
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C
#
# Two layers of four occurrences in two dimensions, with a background of three vectors per
# layer; then three layers for the first-component share: points on a line, a symmetric
# cross, and a cross stretched along one axis.

# %% nbgrader={"grade": true, "grade_id": "test_context_measures_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(centred_self_similarity, first_component_share)

# %% nbgrader={"grade": true, "grade_id": "test_context_measures_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): centred_self_similarity against a loop over pairs with torch's
# cosine similarity, and first_component_share against the eigenvalues of the covariance
# matrix computed with torch, for other L, N, M, D (N = 2, D = 1, M = 1, N < D, a type
# embedding, a large common offset, float32 and non-contiguous arrays); inputs must come back
# unmodified; ValueError for N < 2, an occurrence equal to the layer's mean, a layer without
# variance, mismatched background and arrays of the wrong number of dimensions.
### BEGIN HIDDEN TESTS
from autograder.hidden.a3_bilstm_elmo import check_context_measures

check_context_measures(centred_self_similarity, first_component_share)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): a common offset, and a small sample
#
# Synthetic vectors in $D = 16$ dimensions: one word in 12 contexts (a word vector plus a
# context vector each) and a background of 300 other tokens. The first table adds the same
# offset, of growing length, to **every** vector of the layer, occurrences and background
# alike, as an anisotropic layer does; the raw self-similarity is the centred one with a
# background of zeros ($\mu = 0$). The second table draws $N$ vectors of pure noise, the same
# in every direction, and prints their first-component share beside $1 / \min(N - 1, D)$.
# Part E asks about both tables.

# %%
rng = np.random.default_rng(2)
D_c = 16
word_c, offset_c = rng.normal(size=D_c), rng.normal(size=D_c)
contexts_c = rng.normal(size=(12, D_c))
background_c = 1.5 * rng.normal(size=(300, D_c))
try:
    print(f"{'offset length':>13} {'raw':>7} {'centred':>8} {'first-component share':>22}")
    for length_c in (0.0, 5.0, 20.0, 100.0):
        shift_c = length_c * offset_c / np.linalg.norm(offset_c)
        occurrences_c = (word_c + contexts_c + shift_c)[None]  # (L=1, N=12, D)
        raw_c = centred_self_similarity(occurrences_c, np.zeros((1, 1, D_c)))[0]
        centred_c = centred_self_similarity(occurrences_c, (background_c + shift_c)[None])[0]
        share_c = first_component_share(occurrences_c)[0]
        print(f"{length_c:13.0f} {raw_c:7.4f} {centred_c:8.4f} {share_c:22.4f}")
    print(f"\n{'N':>5} {'share of pure noise':>20} {'1 / min(N - 1, D)':>18}")
    for n_c in (2, 3, 5, 17, 100, 2000):
        noise_c = rng.normal(size=(1, n_c, D_c))
        share_c = first_component_share(noise_c)[0]
        print(f"{n_c:5d} {share_c:20.4f} {1 / min(n_c - 1, D_c):18.4f}")
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
# ## Part E: what the numbers say (2 points, graded by hand)
#
# Answer in 6 to 12 sentences in all, quoting the numbers that the two exploration cells
# print (after Part A and after Part C).
#
# 1. **Before** you run the exploration cell after Part A, write down your prediction: when
#    only the last real token of sequence 0 changes, which of the four halves at position 0
#    (layer 1 forward and backward, layer 2 forward and backward) move, and which stay
#    exactly as they were? Then run it and explain each of the four numbers. From which
#    layer on does a state depend on **every** token of the sentence? What would go wrong if
#    the forward half of this stack's top layer were trained to predict the next word?
# 2. In the first table after Part C, the raw self-similarity climbs with the offset while
#    the centred self-similarity and the first-component share do not move. Why does the raw
#    one climb, and towards what? Show, with a line of algebra, why the other two cannot
#    change at all. What does this mean for comparing the raw self-similarity of a word
#    across the layers of a model?
# 3. In the second table, the share is exactly 1 at $N = 2$, and it is never below
#    $1 / \min(N - 1, D)$. Derive both (the $N$ centred vectors sum to zero). Noise that is
#    the same in every direction still gives a share far above $1 / D$ when $N$ is small:
#    what does that mean for comparing the share of a frequent word with that of a rare one?

# %% [markdown] nbgrader={"grade": true, "grade_id": "what_the_numbers_say", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** (1) Changing the last real token of sequence 0 leaves the forward half of
# layer 1 at position 0 exactly as it was (it moves by 0.00e+00: it has read $x_0$ only),
# while the backward half of layer 1 moves by 4.84e-02: it starts at that token and carries
# it down to position 0. Both halves of layer 2 move, the forward one by 8.93e-03 and the
# backward one by 3.55e-02. The forward reader of layer 2 takes at its very first step the
# input $[\overrightarrow{h}^{\,1}_0; \overleftarrow{h}^{\,1}_0]$, and
# $\overleftarrow{h}^{\,1}_0$ has already read the whole sentence; so from layer 2 on, every
# state at every position depends on every token. A top forward half trained to predict
# $x_{t+1}$ could read $x_{t+1}$ out of its own inputs: it would learn to copy instead of to
# predict, and fail when the next word is not given, which is why the biLM keeps two separate
# stacks. (2) As the offset $c$ grows (length 0, 5, 20, 100), every vector $v_i + c$ points
# more nearly along $c$, and the raw self-similarity goes from 0.5091 through 0.8115 and
# 0.9721 to 0.9986, towards 1, whatever the contexts. The background carries the same
# offset, so its mean becomes $\mu + c$, and $u_i = (v_i + c) - (\mu + c) = v_i - \mu$: the
# centred vectors, and the centred self-similarity 0.5158, are exactly those without the
# offset; the share (0.2210) centres on the word's own mean $\bar v + c$ and loses $c$ in the
# same way. A raw self-similarity that is higher in one layer than in another may thus only
# say that the layer adds a larger common vector to everything, not that it adapts the word
# less to its context: compare layers after removing the common direction (or against the
# similarity of random pairs). (3) The centred vectors $w_i = v_i - \bar v$ sum to zero, so
# they span at most $N - 1$ dimensions (and at most $D$): the covariance has at most
# $r = \min(N - 1, D)$ nonzero eigenvalues. At $N = 2$, $w_2 = -w_1$, a single direction
# holds all the variance and the share is 1.0000 whatever the two vectors. The largest of
# $r$ nonnegative numbers is at least their mean, so the share is at least $1/r$, with
# equality when the $r$ eigenvalues are equal. Pure noise gives 0.7796 at $N = 3$, 0.4449 at
# $N = 5$, 0.2290 at $N = 17$, 0.1258 at $N = 100$ and 0.0739 at $N = 2000$, and approaches
# 0.0625 slowly: with few occurrences, chance alone makes one direction look dominant. A rare
# word therefore gets a high share because it is rare; shares should be compared at the same
# $N$ (subsample the frequent word) or against the share of noise at that $N$.
#
# *Grading notes: 1 point for (1): a prediction stated, layer 1's forward half exactly
# unchanged and the three other halves moved, explained by layer 2 reading
# $\overleftarrow{h}^{\,1}$ (every state from layer 2 on sees the whole sentence), and the
# leak of the next word into a forward language model; 1 point for (2) and (3): the raw
# cosine tends to 1 while the offset cancels in $u_i$ and in the centring on $\bar v$ (with
# the consequence for comparing layers), and the bound $1/\min(N-1, D)$ from the centred
# vectors summing to zero, with the small-$N$ bias. Accept the student's own printed numbers.
# The numbers above are those the reference prints; `tests/grading/test_a3_hidden_checks.py`
# checks each against the cells' output.*
