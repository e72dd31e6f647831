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
# # Assignment 4: sequence to sequence with attention
#
# In Lecture 4 an encoder reads a source sentence into states $s_1, \dots, s_m$, and a decoder
# writes the target one token at a time; at each step it looks back at the source through
# attention and picks the next token. The lecture's model follows Luong et al. (2015): the
# decoder's GRU steps first, and its new state $h_t$ scores the source. Here you write, in
# NumPy and for a padded batch, the decoder step the lecture only describes: Bahdanau's order
# (Bahdanau et al., 2015), where the *previous* state scores the source and the context enters
# the GRU, with the coverage score of See et al. (2017) and attention weights kept in the
# log domain. Then you write the search that turns next-token probabilities into an output
# sentence.
#
# **Goals.** After this assignment you can
#
# 1. compute the additive attention score with a coverage term, from the attention weights of
#    the previous steps, for a padded batch (Part A);
# 2. compute attention log-weights at a temperature, exactly $-\infty$ at padding, finite at
#    every real position however far below the best, and safe for a sentence with no real
#    position; and the context vector (Part B);
# 3. compute one decoder step in Bahdanau's order: attention from $h_{t-1}$, the context fed
#    into a GRU cell with PyTorch's weight layout, and the log-probabilities of the next token
#    (Part C);
# 4. run beam search with length normalisation over any model given as a step function
#    (Part D);
# 5. work out how much of exposure bias scheduled sampling at a fixed rate removes, and what its
#    targets teach (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. A batch has $B$ source sentences padded to a common
# length $m$. Encoder states have $H$ units, decoder states $D$ units (Bahdanau's encoder is
# bidirectional, so the two sizes differ in general), and the embedding of a target token has
# $E$ units. Vectors are **rows**: the decoder states of one step form `h` of shape (B, D), the
# encoder states `S` of shape (B, m, H), and a matrix $M$ acts on a batch of rows as
# `x @ M.T`. Source positions are numbered from 0: sentence $b$ has `lengths[b]` real tokens
# at positions $0, \dots, \text{lengths}[b] - 1$, and the encoder states at later positions are
# padding. The output vocabulary $\mathcal V$ has $|\mathcal V|$ tokens (`vocab_size` in code).
#
# One decoder step, for one sentence, in Bahdanau's order, with the attention weights of the
# earlier steps $a_{1}, \dots, a_{t-1}$ summed into the **coverage** $\operatorname{cov}_t$:
#
# $$\begin{aligned}
# e_{t,k} &= \operatorname{score}(h_{t-1}, s_k, \operatorname{cov}_{t,k}), \qquad
# a_{t,k} = \frac{\exp e_{t,k}}{\sum_{j \text{ real}} \exp e_{t,j}} \ (k \text{ real}), \qquad
# c_t = \sum_k a_{t,k}\, s_k,\\
# h_t &= \operatorname{GRU}\left([x_t; c_t],\, h_{t-1}\right), \qquad
# p(y_t \mid y_{<t}, x) = \operatorname{softmax}\left(W_o [h_t; c_t; x_t] + b_o\right),
# \end{aligned}$$
#
# where $x_t$ is the embedding of the previous output token $y_{t-1}$.
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off and by how much), and a **hidden test** that
#   runs at grading time on other shapes, seeds and edge cases ($B = 1$, $m = 1$, no earlier
#   step, sizes $D \ne H$, lengths in any order and of 0, garbage (even `inf` and `nan`) at
#   padded positions, huge scores, other search models, non-contiguous arrays...) and checks
#   that bad input raises `ValueError`. Hard-coding the visible answers keeps the visible
#   points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests torch's attention
#   (`torch.nn.functional.scaled_dot_product_attention`, `torch.nn.MultiheadAttention`), its
#   recurrent layers and cells (`torch.nn.GRUCell`, `torch.nn.GRU`...), the softmax,
#   log-softmax and log-sum-exp of torch and SciPy, autograd, and the helpers of the `course`
#   package (among them `course.decoding` and `course.models.seq2seq`) are replaced by traps:
#   calling them from your functions fails the test. (`course.checks` is allowed.) The
#   visible tests run your functions under the same rule and say so when one of them calls a
#   forbidden routine; their data and expected values are in
#   `course/checks/a4_seq2seq_attention.py`.
#
# Autograded: 14 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a4 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a4_seq2seq_attention/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
from collections.abc import Callable

import numpy as np

from course.checks.a4_seq2seq_attention import (
    check_part_a,
    check_part_b,
    check_part_c,
    check_part_d,
)

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## Part A: the additive score with coverage (4 points)
#
# Attention has no memory: at every step the decoder may look at the same source word again,
# and a translation then repeats a phrase or skips one. See et al. (2017) give the score a
# memory, the **coverage** of each position: the sum of the attention weights it received at
# the earlier steps of the output,
#
# $$\operatorname{cov}_{t,k} = \sum_{t' < t} a_{t',k} \qquad (\operatorname{cov}_{1,k} = 0),$$
#
# and add it to the additive score as one more input of its hidden layer of $A$ units:
#
# $$e_{t,k} = v^\top \tanh\left(W_q\, h + W_k\, s_k + w_{\text{cov}}\, \operatorname{cov}_{t,k}
# + b_{\text{att}}\right).$$
#
# Here $h$ is the decoder state that scores the source ($h_{t-1}$ in Part C), $W_q$ has shape
# (A, D), $W_k$ has shape (A, H), and $w_{\text{cov}}$, $b_{\text{att}}$ and $v$ have shape
# (A,). Through $w_{\text{cov}}$ and $v$ the model can learn to lower the score of a position
# that has already had its share of attention. The term $W_q h + b_{\text{att}}$ is the same
# for every position of a sentence: compute it once per sentence.
#
# Implement `coverage_scores(h, S, past_weights, params)` for `h` (B, D), `S` (B, m, H) and
# `past_weights` (B, T, m), the weights $a_{1}, \dots, a_{T}$ of the $T \ge 0$ earlier steps
# ($T = 0$ at the first step: the coverage is 0). Return the scores, shape (B, m), for every
# position, padded or not (Part B deals with padding). `params` holds `"W_q"`, `"W_k"`,
# `"w_cov"`, `"b_att"` and `"v"`, and may hold other keys. Raise `ValueError` for shapes that
# do not fit together (`h` not 2-D, `S` not 3-D, another $B$ in `S` than in `h`,
# `past_weights` not of shape (B, T, m), a missing or misshapen parameter).


# %% nbgrader={"grade": false, "grade_id": "coverage_scores", "locked": false, "schema_version": 3, "solution": true, "task": false}
def coverage_scores(
    h: np.ndarray, S: np.ndarray, past_weights: np.ndarray, params: dict[str, np.ndarray]
) -> np.ndarray:
    """Additive attention scores with a coverage term (See et al., 2017).

    Args:
        h: the decoder states that score the source, shape (B, D).
        S: encoder states s_k, shape (B, m, H).
        past_weights: the attention weights of the T >= 0 earlier steps, shape (B, T, m).
        params: "W_q" (A, D), "W_k" (A, H), "w_cov" (A,), "b_att" (A,), "v" (A,).

    Returns:
        The scores e_{t,k}, shape (B, m).

    Raises:
        ValueError: for shapes that do not fit together or a missing parameter.
    """
    ### BEGIN SOLUTION
    query = np.asarray(h, dtype=np.float64)
    keys = np.asarray(S, dtype=np.float64)
    history = np.asarray(past_weights, dtype=np.float64)
    if query.ndim != 2 or keys.ndim != 3 or keys.shape[0] != query.shape[0]:
        got = f"got h of shape {query.shape} and S of shape {keys.shape}"
        raise ValueError(f"h should be (B, D) and S (B, m, H) with the same B; {got}")
    n_rows, n_pos = keys.shape[:2]
    if history.ndim != 3 or history.shape[0] != n_rows or history.shape[2] != n_pos:
        wanted = f"(B, T, m) = ({n_rows}, T, {n_pos})"
        raise ValueError(f"past_weights should have shape {wanted}, got {history.shape}")

    for key in ("W_q", "W_k", "w_cov", "b_att", "v"):
        if key not in params:
            raise ValueError(f"the coverage score needs params[{key!r}]")
    n_hidden = np.shape(params["W_q"])[0] if np.ndim(params["W_q"]) == 2 else -1  # A
    shapes = {"W_q": (n_hidden, query.shape[1]), "W_k": (n_hidden, keys.shape[2])}
    shapes |= {key: (n_hidden,) for key in ("w_cov", "b_att", "v")}
    for key, shape in shapes.items():
        found = np.shape(params[key])
        if found != shape:
            wanted = str(shape).replace("-1", "A")
            raise ValueError(f"params[{key!r}] should have shape {wanted}, got {found}")
    W_q, W_k, w_cov, b_att, v = (np.asarray(params[k], dtype=np.float64) for k in shapes)
    coverage = history.sum(axis=1)  # (B, m), 0 when T = 0
    per_sentence = query @ W_q.T + b_att  # (B, A), once per sentence
    per_position = keys @ W_k.T + coverage[:, :, None] * w_cov  # (B, m, A)
    return np.tanh(per_sentence[:, None, :] + per_position) @ v  # (B, m)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Two sentences, $m = 3$, $D = 2$, $H = 3$, $A = 2$, with $T = 2$ earlier steps and with none.
# The expected scores were computed with torch, from $[h; s_k; \operatorname{cov}_{t,k}]$
# concatenated and one matrix $[W_q\; W_k\; w_{\text{cov}}]$.

# %% nbgrader={"grade": true, "grade_id": "test_coverage_scores_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(coverage_scores)

# %% nbgrader={"grade": true, "grade_id": "test_coverage_scores_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): coverage_scores against torch for B = 1, m = 1, D = H = A = 1,
# D != H, A above and below D and H, T = 0, 1 and several earlier steps, params with extra
# keys, float32 and non-contiguous arrays; inputs must come back unmodified; ValueError for
# shapes that do not fit (h, S, past_weights, each parameter, a missing key).
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_coverage_scores

check_coverage_scores(coverage_scores)
### END HIDDEN TESTS

# %% [markdown]
# ## Part B: attention in the log domain, at a temperature (3 points)
#
# The weights are a softmax of the scores over the **real** source positions of each
# sentence. Here you return their logarithms, at a **temperature** $\tau > 0$ that sharpens
# the weights ($\tau < 1$) or flattens them ($\tau > 1$). For sentence $b$ with
# $n = \text{lengths}[b]$ real positions and $z_k = e_{t,k} / \tau$:
#
# $$\log a_{t,k} = \begin{cases}
# z_k - M - \log \sum_{j < n} \exp\left(z_j - M\right), & k < n,
# \qquad M = \max_{j < n} z_j,\\[1ex]
# -\infty, & k \ge n,
# \end{cases} \qquad\qquad c_t = \sum_{k < n} a_{t,k}\, s_k.$$
#
# Three things this form must get right, which the lecture's softmax does not ask for:
#
# * **Finite at every real position.** At a low temperature the gap between two real scores
#   can be $10^6$: the softmax's weight $e^{-10^6}$ rounds to 0 and its logarithm to
#   $-\infty$, but $\log a_{t,k} = -10^6$ is a perfectly good float. Never take the logarithm
#   of a weight. The real scores are finite; the padding's may be anything.
# * **A sentence with no real position** (`lengths[b] = 0`, as a dummy row of a batch) has
#   log-weights $-\infty$ everywhere and context 0, with no `nan` and no warning.
# * **Padding is never read.** Padded encoder states may hold anything, even `inf` or `nan`,
#   and must not reach the context ($0 \cdot \infty$ is `nan`).
#
# Implement `log_attention(scores, lengths, S, temperature)`: `scores` (B, m), `lengths` B
# integers in $0, \dots, m$, `S` (B, m, H); return `(log_weights, context)` of shapes (B, m)
# and (B, H). Raise `ValueError` for a temperature that is not a positive finite number, a
# length outside $0, \dots, m$, a number of lengths other than $B$, lengths that are not
# integers, and shapes that do not fit together.


# %% nbgrader={"grade": false, "grade_id": "log_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def log_attention(
    scores: np.ndarray, lengths: np.ndarray, S: np.ndarray, temperature: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Attention log-weights over the real positions at a temperature, and the context.

    Args:
        scores: e_{t,k}, shape (B, m); positions at or after lengths[b] are padding.
        lengths: the number of real source positions of each sentence, integers in [0, m].
        S: encoder states, shape (B, m, H); the padding may hold anything.
        temperature: tau > 0; the weights are the softmax of scores / tau.

    Returns:
        (log_weights (B, m): -inf at padding, finite at real positions;
         context (B, H): 0 for a sentence with no real position).

    Raises:
        ValueError: for a bad temperature, a length outside [0, m] or shapes that do not fit.
    """
    ### BEGIN SOLUTION
    if isinstance(temperature, bool) or not np.isscalar(temperature):
        raise ValueError(f"temperature must be a number, got {temperature!r}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be positive and finite, got {temperature!r}")
    energies = np.asarray(scores, dtype=np.float64)
    states = np.asarray(S, dtype=np.float64)
    if energies.ndim != 2 or states.ndim != 3 or states.shape[:2] != energies.shape:
        got = f"got {energies.shape} and {states.shape}"
        raise ValueError(f"scores should be (B, m) and S (B, m, H) with the same B, m; {got}")
    n_rows, n_pos = energies.shape
    sizes = np.asarray(lengths)
    if sizes.shape != (n_rows,) or not np.issubdtype(sizes.dtype, np.integer):
        wanted = f"one integer per sentence, shape ({n_rows},)"
        raise ValueError(f"lengths should hold {wanted}, got {sizes.shape}, {sizes.dtype}")
    if n_rows and (sizes.min() < 0 or sizes.max() > n_pos):
        raise ValueError(f"every length must be between 0 and m = {n_pos}, got {sizes.tolist()}")
    real = np.arange(n_pos)[None, :] < sizes[:, None]  # (B, m)
    z = np.where(real, energies / temperature, -np.inf)  # padding can never win the max
    top = z.max(axis=1, keepdims=True, initial=-np.inf)  # (B, 1), -inf for an empty sentence
    shifted = z - np.where(real.any(axis=1, keepdims=True), top, 0.0)  # 0 at each row's best
    total = np.exp(shifted).sum(axis=1, keepdims=True)  # >= 1 where a real position exists
    log_norm = np.log(np.where(total > 0, total, 1.0))
    log_weights = np.where(real, shifted - log_norm, -np.inf)  # (B, m)
    kept = np.where(real[:, :, None], states, 0.0)  # inf or nan in the padding never read
    context = np.einsum("bk,bkh->bh", np.exp(log_weights), kept)  # (B, H)
    return log_weights, context
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Three sentences of lengths 3, 1 and 0 padded to $m = 3$, at $\tau = 1$ and at
# $\tau = 0.001$, where real scores 1 apart give log-weights 1000 apart; the padding holds a
# huge score and infinite states.

# %% nbgrader={"grade": true, "grade_id": "test_log_attention_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(log_attention)

# %% nbgrader={"grade": true, "grade_id": "test_log_attention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): log_attention against torch.log_softmax over the real positions for
# B = 1, m = 1, lengths in any order and of 0, temperatures from 0.001 to 100, real scores
# 1e6 apart, huge scores and inf or nan states in the padding, lengths given as a list,
# float32 and non-contiguous arrays; -inf exactly at padding, finite at real positions, no
# nan, inputs unmodified; ValueError for a temperature of 0, below 0 or inf, a length below
# 0 or above m, a wrong number of lengths, lengths that are not integers, and shapes that do
# not fit.
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_log_attention

check_log_attention(log_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): the logarithm of a softmax at a low temperature
#
# The cell compares your log-weights with the logarithm of the lecture's softmax weights on
# one sentence of five scores, as the temperature falls. It counts the real positions where
# the logarithm of the weight is $-\infty$, and prints the largest weight: a low temperature
# moves attention towards one position (hard attention in the limit).

# %%
scores_x = np.array([[2.0, 1.5, -1.0, 0.3, 1.9]])
with np.errstate(divide="ignore"):
    for tau_x in (1.0, 0.1, 0.01, 0.001):
        z_x = scores_x / tau_x
        weights_x = np.exp(z_x - z_x.max()) / np.exp(z_x - z_x.max()).sum()
        naive_x = np.log(weights_x)
        try:
            mine_x, _ = log_attention(scores_x, np.array([5]), np.zeros((1, 5, 1)), tau_x)
        except NotImplementedError:
            print("Implement Part B first, then run this cell again.")
            break
        print(
            f"tau = {tau_x:<6}: largest weight {weights_x.max():.4f}; log of the softmax is -inf "
            f"at {int(np.isinf(naive_x).sum())} of 5 real positions, yours at "
            f"{int(np.isinf(mine_x).sum())}; your smallest log-weight {mine_x.min():.1f}"
        )

# %% [markdown]
# ## Part C: one decoder step in Bahdanau's order (3 points)
#
# Lecture 4's decoder (Luong's order) steps first and then attends with the new state. In
# Bahdanau's order the decoder attends **before** it steps, with the previous state
# $h_{t-1}$, because the context is an *input* of the step:
#
# 1. $e_t$ = `coverage_scores(h_prev, S, past_weights, params)` (Part A) and
#    $\log a_t$, $c_t$ = `log_attention(e_t, lengths, S)` at $\tau = 1$ (Part B);
# 2. the GRU cell reads $u_t = [x_t; c_t]$ (shape (B, E + H)) and $h_{t-1}$, with PyTorch's
#    weight layout: `W_ih` (3D, E + H) and `W_hh` (3D, D) stack the weights of the reset
#    gate, the update gate and the candidate, **in that order** (rows $0..D-1$, $D..2D-1$,
#    $2D..3D-1$), and so do the biases `b_ih`, `b_hh` (3D,). With $g^{i} = W_{ih} u_t +
#    b_{ih}$ and $g^{h} = W_{hh} h_{t-1} + b_{hh}$ split into those three blocks:
#
#    $$r = \sigma(g^{i}_r + g^{h}_r), \quad z = \sigma(g^{i}_z + g^{h}_z), \quad
#    n = \tanh\left(g^{i}_n + r \odot g^{h}_n\right), \quad
#    h_t = (1 - z) \odot n + z \odot h_{t-1};$$
#
#    (the reset gate multiplies $W_{hn} h_{t-1} + b_{hn}$, bias included, and $z = 1$ keeps
#    the old state);
# 3. the output layer reads the new state, the context and the input again,
#    $o = W_o [h_t; c_t; x_t] + b_o$ with `W_o` of shape ($|\mathcal V|$, D + H + E), and
#    $\log p(y_t = v) = o_v - \log \sum_{u} \exp o_u$, computed stably (with $M = \max_u o_u$,
#    $\log \sum_u \exp o_u = M + \log \sum_u \exp(o_u - M)$).
#
# Implement `bahdanau_step(x, h_prev, S, lengths, past_weights, params)` for `x` (B, E),
# `h_prev` (B, D), and `S`, `lengths`, `past_weights` as in Parts A and B; `params` holds Part
# A's parameters and `"W_ih"`, `"W_hh"`, `"b_ih"`, `"b_hh"`, `"W_o"`, `"b_o"`. Return
# `(log_probs, h, log_weights)` of shapes (B, $|\mathcal V|$), (B, D) and (B, m). Use your
# Parts A and B. Raise `ValueError` for an `x` that is not of shape (B, E) with the $B$ of
# `h_prev`, and for GRU or output parameters that are missing or of the wrong shape.


# %% nbgrader={"grade": false, "grade_id": "bahdanau_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def bahdanau_step(
    x: np.ndarray,
    h_prev: np.ndarray,
    S: np.ndarray,
    lengths: np.ndarray,
    past_weights: np.ndarray,
    params: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One decoder step in Bahdanau's order: attend with h_{t-1}, then a GRU step on [x; c].

    Args:
        x: embeddings of the previous output tokens, shape (B, E).
        h_prev: decoder states h_{t-1}, shape (B, D).
        S: encoder states, shape (B, m, H), padded after lengths[b].
        lengths: real source positions per sentence, integers in [0, m].
        past_weights: attention weights of the earlier steps, shape (B, T, m).
        params: Part A's, and "W_ih" (3D, E + H), "W_hh" (3D, D), "b_ih" (3D,), "b_hh" (3D,),
            "W_o" (vocab_size, D + H + E), "b_o" (vocab_size,).

    Returns:
        (log_probs (B, vocab_size), h_t (B, D), log_weights (B, m)).

    Raises:
        ValueError: for parameters or inputs of the wrong shape.
    """
    ### BEGIN SOLUTION
    previous = np.asarray(h_prev, dtype=np.float64)
    embedded = np.asarray(x, dtype=np.float64)
    scores = coverage_scores(previous, S, past_weights, params)  # attend with h_{t-1}
    log_weights, context = log_attention(scores, lengths, S)
    if embedded.ndim != 2 or embedded.shape[0] != previous.shape[0]:
        raise ValueError(f"x should be (B, E) with B = {previous.shape[0]}, got {embedded.shape}")
    width, n_in = previous.shape[1], embedded.shape[1] + context.shape[1]
    for key in ("W_ih", "W_hh", "b_ih", "b_hh", "W_o", "b_o"):
        if key not in params:
            raise ValueError(f"params has no key {key!r}")
    n_out = np.shape(params["W_o"])[0] if np.ndim(params["W_o"]) == 2 else -1
    gates = 3 * width  # reset, update, candidate
    shapes = {"W_ih": (gates, n_in), "W_hh": (gates, width), "b_ih": (gates,), "b_hh": (gates,)}
    shapes |= {"W_o": (n_out, width + n_in), "b_o": (n_out,)}
    for key, shape in shapes.items():
        found = np.shape(params[key])
        if found != shape:
            wanted = str(shape).replace("-1", "vocab_size")
            raise ValueError(f"params[{key!r}] should have shape {wanted}, got {found}")
    W_ih, W_hh, b_ih, b_hh, W_o, b_o = (np.asarray(params[k], dtype=np.float64) for k in shapes)

    def sigmoid(a: np.ndarray) -> np.ndarray:
        return 0.5 * (1.0 + np.tanh(0.5 * a))  # no overflow for large |a|

    from_input = np.concatenate([embedded, context], axis=1) @ W_ih.T + b_ih  # (B, 3D)
    from_state = previous @ W_hh.T + b_hh  # (B, 3D)
    i_r, i_z, i_n = np.split(from_input, 3, axis=1)  # reset, update, candidate: (B, D) each
    s_r, s_z, s_n = np.split(from_state, 3, axis=1)
    reset, update = sigmoid(i_r + s_r), sigmoid(i_z + s_z)
    candidate = np.tanh(i_n + reset * s_n)
    state = (1.0 - update) * candidate + update * previous  # (B, D)
    logits = np.concatenate([state, context, embedded], axis=1) @ W_o.T + b_o  # (B, V)
    top = logits.max(axis=1, keepdims=True)
    log_probs = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    return log_probs, state, log_weights
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C
#
# The inputs of Part A's test with $T = 2$ earlier steps, lengths 3 and 2, $E = 2$,
# $|\mathcal V| = 4$. The expected values come from `torch.nn.GRUCell` given the same weights.
# The second call adds 1000 to one output bias: the log-probabilities must stay finite.

# %% nbgrader={"grade": true, "grade_id": "test_bahdanau_step_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(bahdanau_step)

# %% nbgrader={"grade": true, "grade_id": "test_bahdanau_step_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): bahdanau_step against torch.nn.GRUCell and torch.log_softmax for
# B = 1, m = 1, vocab_size = 1, D != H != E, no earlier step, lengths in any order and of 0,
# garbage in the padding, logits near 1e4, float32 and non-contiguous arrays; inputs must come
# back unmodified; ValueError for x, W_ih, W_hh, b_ih, b_hh, W_o, b_o of the wrong shape.
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_bahdanau_step

check_bahdanau_step(bahdanau_step)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): what the coverage term does
#
# Five decoder steps over one source sentence of six positions, with random weights and the
# same inputs, once with $w_{\text{cov}} = 0$ (no memory) and once with a strongly negative
# $w_{\text{cov}}$. The cell prints the coverage after the five steps and See et al.'s
# coverage loss $\sum_t \sum_k \min(a_{t,k}, \operatorname{cov}_{t,k})$, which counts the
# attention given again to positions already covered. Which positions does each model keep
# returning to?

# %%
rng = np.random.default_rng(5)
D_x, H_x, E_x, A_x, V_x, m_x = 3, 4, 2, 5, 6, 6
S_x = rng.normal(size=(1, m_x, H_x))
params_x = {
    "W_q": rng.normal(size=(A_x, D_x)),
    "W_k": rng.normal(size=(A_x, H_x)),
    "b_att": np.zeros(A_x),
    "v": np.ones(A_x),
    "W_ih": 0.5 * rng.normal(size=(3 * D_x, E_x + H_x)),
    "W_hh": 0.5 * rng.normal(size=(3 * D_x, D_x)),
    "b_ih": np.zeros(3 * D_x),
    "b_hh": np.zeros(3 * D_x),
    "W_o": rng.normal(size=(V_x, D_x + H_x + E_x)),
    "b_o": np.zeros(V_x),
}
x_x = rng.normal(size=(1, E_x))
try:
    for w_x in (0.0, -3.0):
        params_x["w_cov"] = np.full(A_x, w_x)
        h_prev_x, past_x, loss_x = np.zeros((1, D_x)), np.zeros((1, 0, m_x)), 0.0
        for _ in range(5):
            _, h_prev_x, log_a_x = bahdanau_step(
                x_x, h_prev_x, S_x, np.array([m_x]), past_x, params_x
            )
            loss_x += np.minimum(np.exp(log_a_x), past_x.sum(axis=1)).sum()
            past_x = np.concatenate([past_x, np.exp(log_a_x)[:, None, :]], axis=1)
        print(
            f"w_cov = {w_x:4}: coverage after 5 steps {past_x.sum(axis=1)[0].round(2)}, "
            f"coverage loss {loss_x:.2f}"
        )
except NotImplementedError:
    print("Implement Parts A to C first, then run this cell again.")

# %% [markdown]
# ## Part D: beam search with length normalisation (4 points)
#
# A trained decoder gives, for every prefix $y_{<t}$ of an output, the log-probabilities of
# the next token. Here the model is any function `step(prefix)`: `prefix` is a list of token
# ids that starts with `bos`, and `step` returns $|\mathcal V|$ log-probabilities, one per
# token $0, \dots, |\mathcal V| - 1$ (`eos`, the end of the sentence, is one of them).
# Greedy decoding takes the most probable token at each step; it can miss the most probable
# sentence, because a token that looks best now may lead only to unlikely continuations.
# Beam search keeps the `beam_size` best prefixes instead.
#
# **The search, exactly.** A hypothesis is `bos` followed by the tokens generated so far; its
# score is the sum of the log-probabilities of its generated tokens (`eos` included):
# $\log p(y \mid x) = \sum_t \log p(y_t \mid y_{<t}, x)$.
#
# 1. Start with one live hypothesis, `[bos]`, of score 0, and no finished one.
# 2. Repeat while fewer than `beam_size` hypotheses have finished, some hypothesis is live,
#    and fewer than `max_len` tokens have been generated:
#    1. extend every live hypothesis by every token; list the candidates live hypothesis by
#       live hypothesis (in their rank order), token by token (ids in increasing order);
#    2. rank the candidates by score, highest first; equal scores keep the order of the list
#       (a *stable* sort);
#    3. the candidates among the first `beam_size` that end in `eos` are finished (append them
#       to the finished list, in rank order);
#    4. the new live hypotheses are the first `beam_size` candidates that do **not** end in
#       `eos` (some may rank below the first `beam_size`).
# 3. If fewer than `beam_size` hypotheses have finished (the search reached `max_len`), the
#    live hypotheses join the finished list as they are, in rank order, without `eos`.
# 4. The answer is the finished hypothesis with the highest **normalised score**
#    $\log p(y \mid x) / n^{\alpha}$, where $n$ counts its generated tokens, `eos` included;
#    on a tie, the one that comes first in the finished list.
#
# **Why normalise.** Every token multiplies the probability by a number below 1, so the raw
# score prefers short outputs. Dividing by $n^\alpha$ ($\alpha = 0$: no normalisation,
# $\alpha = 1$: the mean log-probability per token; Wu et al., 2016, used a similar
# penalty) lets longer hypotheses compete.
#
# Implement `beam_search(step, bos, eos, beam_size, max_len, alpha)`. It returns
# `(tokens, log_prob, normalised)`: the generated tokens of the answer as a list of ints
# (without `bos`; ending in `eos` unless it was cut at `max_len`), its score and its normalised
# score, as floats. Call `step` only on live hypotheses. Raise `ValueError` for `beam_size` or
# `max_len` below 1, a negative `alpha`, an `eos` outside $0, \dots, |\mathcal V| - 1$, and a
# `step` whose outputs are not 1-D or change length.
#
# The tests call the given `beam_search_on_table`, which runs your `beam_search` on a model
# given as a table: for every prefix (a tuple, `bos` first) that a correct search may pass to
# `step`, the $|\mathcal V|$ log-probabilities. It raises `KeyError` for any other prefix: one
# that continues after `eos`, is longer than `max_len` allows, or comes after `beam_size`
# hypotheses have finished.


# %% nbgrader={"grade": false, "grade_id": "beam_search", "locked": false, "schema_version": 3, "solution": true, "task": false}
def beam_search(
    step: Callable[[list[int]], np.ndarray],
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    alpha: float = 0.0,
) -> tuple[list[int], float, float]:
    """Beam search with length normalisation over a next-token model.

    Args:
        step: step(prefix) -> vocab_size log-probabilities of the next token; prefix starts with bos.
        bos: the id that starts every prefix.
        eos: the id that ends a hypothesis, in [0, vocab_size).
        beam_size: how many hypotheses to keep, at least 1.
        max_len: the largest number of tokens to generate, at least 1.
        alpha: the length-normalisation exponent, at least 0.

    Returns:
        (tokens without bos, log-probability, log-probability / len(tokens) ** alpha).

    Raises:
        ValueError: for a beam_size or max_len below 1, a negative alpha, an eos that is not a
            token of the model, or a step whose outputs are not 1-D or change length.
    """
    ### BEGIN SOLUTION
    for name, count in (("beam_size", beam_size), ("max_len", max_len)):
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"{name} must be an integer of at least 1, got {count!r}")
    if not np.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a number of at least 0, got {alpha!r}")
    n_tokens = None

    def next_log_probs(prefix: list[int]) -> np.ndarray:
        nonlocal n_tokens
        row = np.asarray(step(list(prefix)), dtype=np.float64)
        if row.ndim != 1 or row.size == 0 or (n_tokens is not None and row.size != n_tokens):
            expected = "a 1-D array" if n_tokens is None else f"{n_tokens} values, as before"
            raise ValueError(f"step({prefix}) returned shape {row.shape}; expected {expected}")
        if n_tokens is None:
            n_tokens = row.size
            if not 0 <= eos < n_tokens:
                raise ValueError(f"eos = {eos} is not a token of a model with {n_tokens} tokens")
        return row

    frontier = [([int(bos)], 0.0)]  # (prefix with bos, score), in rank order
    ended: list[tuple[list[int], float]] = []
    n_generated = 0
    while frontier and len(ended) < beam_size and n_generated < max_len:
        tails, totals = [], []
        for prefix, score in frontier:
            row = next_log_probs(prefix)
            tails += [prefix + [token] for token in range(row.size)]
            totals.append(score + row)
        flat = np.concatenate(totals)  # the candidates' scores, in the order of the list
        ranked = np.argsort(-flat, kind="stable")  # best first; equal scores keep their order
        ended += [(tails[i], float(flat[i])) for i in ranked[:beam_size] if tails[i][-1] == eos]
        frontier = [(tails[i], float(flat[i])) for i in ranked if tails[i][-1] != eos][:beam_size]
        n_generated += 1
    if len(ended) < beam_size:
        ended += frontier
    normalised = [score / (len(prefix) - 1) ** alpha for prefix, score in ended]
    best = int(np.argmax(normalised))  # the first of equal maxima
    prefix, score = ended[best]
    return prefix[1:], score, float(normalised[best])
    ### END SOLUTION


def beam_search_on_table(
    table: dict[tuple[int, ...], np.ndarray],
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    alpha: float = 0.0,
) -> tuple[list[int], float, float]:
    """Given (do not change): beam_search over a model given as a table of prefixes."""

    def step(prefix: list[int]) -> np.ndarray:
        key = tuple(int(token) for token in prefix)
        if key not in table:
            raise KeyError(
                f"the model has no entry for the prefix {list(key)}; a correct search never "
                "asks for it (it continues after eos, goes beyond max_len, or comes after "
                "beam_size hypotheses have finished)"
            )
        return np.array(table[key], dtype=np.float64)

    return beam_search(step, bos, eos, beam_size, max_len, alpha)


# %% [markdown]
# ### A tiny model
#
# Three tokens, `</s>` = 0, `yes` = 1, `ok` = 2, with `<s>` = 3 as `bos`, known up to two
# generated tokens (so `max_len` is at most 3). Greedy decoding (`beam_size` = 1) says
# "yes yes"; "ok ok" is more probable, and a wider beam finds the short "yes" more probable
# still, unless the score is normalised by length. Run this cell; it is not graded.

# %% nbgrader={"grade": false, "grade_id": "given_toy_model", "locked": true, "schema_version": 3, "solution": false, "task": false}
words_d = ["</s>", "yes", "ok"]
probabilities_d = {  # prefix -> p(</s>), p(yes), p(ok)
    (3,): [0.10, 0.50, 0.40],
    (3, 1): [0.35, 0.37, 0.28],
    (3, 2): [0.05, 0.15, 0.80],
    (3, 1, 1): [0.50, 0.30, 0.20],
    (3, 1, 2): [0.60, 0.25, 0.15],
    (3, 2, 1): [0.55, 0.25, 0.20],
    (3, 2, 2): [0.45, 0.30, 0.25],
}
table_d = {prefix: np.log(p) for prefix, p in probabilities_d.items()}

# %% [markdown]
# ### Visible test for Part D

# %% nbgrader={"grade": true, "grade_id": "test_beam_search_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(beam_search_on_table, table_d, words_d)

# %% nbgrader={"grade": true, "grade_id": "test_beam_search_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): beam_search against exhaustive search on tiny random models (a beam
# wider than the number of prefixes is exact), against greedy decoding (beam_size = 1), against
# an exact implementation of the rules above on models where beam search is not exact, the
# effect of alpha on short and long hypotheses, the cut at max_len, a tie between finished
# hypotheses; ValueError for beam_size 0, max_len 0, alpha < 0, an eos outside the model, a
# step whose outputs change length.
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_beam_search

check_beam_search(beam_search_on_table)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): beam width and length normalisation
#
# The visible test's model, decoded with every beam width and three values of $\alpha$.
# Which output does each setting choose, and why does $\alpha$ stop mattering once the beam
# is narrow?

# %%
try:
    for beam_x in (1, 2, 3):
        for alpha_x in (0.0, 0.5, 1.0):
            tokens_x, log_prob_x, score_x = beam_search_on_table(table_d, 3, 0, beam_x, 3, alpha_x)
            sentence_x = " ".join(words_d[t] for t in tokens_x)
            print(
                f"beam {beam_x}, alpha {alpha_x}: {sentence_x:15} p = {np.exp(log_prob_x):.4f}, "
                f"normalised score {score_x:.3f}"
            )
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# ## Part E: exposure bias under scheduled sampling (2 points, graded by hand)
#
# Lecture 4 trained its numbers model with teacher forcing and measured what running free does
# to its errors. Suppose it is trained instead with **scheduled sampling** at a fixed rate
# $\epsilon = 0.25$: at every step $t \ge 2$ of training, the token it reads as $y_{t-1}$ is, with
# probability $\epsilon$, its own prediction instead of the target's $y^\ast_{t-1}$, and the loss
# at step $t$ still asks for $y^\ast_t$. Suppose also that its own prediction is wrong with
# probability $q = 0.1$ at any step whose prefix is right. For a six-digit number the target
# has 7 tokens: six digits and $\langle/s\rangle$.
#
# In 4 to 7 sentences:
#
# 1. For $t = 2, \dots, 7$, what is the probability that the prefix read at step $t$ holds at
#    least one wrong token, in training and at test time (running free)? Compare the two at
#    $t = 7$, and with teacher forcing.
# 2. What does the loss teach the model at a step whose prefix holds a wrong digit? Is that
#    right for this task? Name a task where it would not be, and say why.
#
# You may compute in the code cell below; it is not graded.

# %%
# Not graded: compute the probabilities of Part E here.

# %% [markdown] nbgrader={"grade": true, "grade_id": "exposure_bias", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** The prefix read at step $t$ holds $t - 1$ tokens, and a wrong token stays in
# it, so only the first one matters. In training a token read is wrong when it is the model's
# own (probability $\epsilon$) and that is wrong ($q$), so the prefix is right with probability
# $(1 - \epsilon q)^{t-1} = 0.975^{t-1}$; running free every token is the model's own, and the
# prefix is right with probability $(1 - q)^{t-1} = 0.9^{t-1}$. A wrong prefix then has
# probability 0.025, 0.049, 0.073, 0.096, 0.119 and 0.141 for $t = 2, \dots, 7$ in training,
# against 0.100, 0.190, 0.271, 0.344, 0.410 and 0.469 at test time. At $t = 7$ the model meets
# a wrong prefix in 14% of its training steps and in 47% of its outputs at test, about 0.30 as
# often (about $\epsilon$ times, for small $q$); teacher forcing never showed it one. So
# scheduled sampling at this rate narrows the mismatch, it does not remove it. At a step after
# a wrong digit the loss still asks for $y^\ast_t$, the right next digit: it teaches the model
# to carry on correctly whatever it wrote before. That is right here, since each digit of the
# output is fixed by the source and its position, not by the digits written before it. It is
# wrong where an earlier token changes what should follow: in a translation whose reference is
# "he did not go", a model that wrote "he didn't" is taught to go on with "not".
#
# *Grading notes: 1 point for the probabilities, $1 - 0.975^{t-1}$ in training against
# $1 - 0.9^{t-1}$ at test (0.141 against 0.469 at $t = 7$, and 0 under teacher forcing), so
# the model trains on far fewer wrong prefixes than it meets; 1 point for the target: the
# reference token $y^\ast_t$ teaches recovery, right for digits fixed by position, wrong when
# an earlier token changes what should follow (another word order or wording, a token that
# shifts the rest).*
