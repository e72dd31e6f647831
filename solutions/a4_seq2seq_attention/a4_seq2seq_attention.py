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
# attention and picks the next token. Here you write the pieces of one decoder step yourself,
# in NumPy and for a padded batch, and then the search that turns next-token probabilities
# into an output sentence.
#
# **Goals.** After this assignment you can
#
# 1. compute four attention scoring functions for a batch of decoder states (Part A);
# 2. turn scores into attention weights over the real source positions only, stably, and
#    form the context vector (Part B);
# 3. compute the attentional output of one decoder step: Luong's $\tilde h_t$ and the
#    log-probabilities of the next token (Part C);
# 4. run beam search with length normalisation over any model given as a step function
#    (Part D);
# 5. work out how much of exposure bias scheduled sampling at a fixed rate removes, and what its
#    targets teach (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. A batch has $B$ source sentences padded to a common
# length $m$; encoder and decoder states have $H$ units. Vectors are **rows**: the decoder
# states of one step form `h` of shape (B, H), the encoder states `S` of shape (B, m, H), and
# a matrix $M$ acts on a batch of rows as `x @ M.T`. Source positions are numbered from 0:
# sentence $b$ has `lengths[b]` real tokens at positions $0, \dots, \text{lengths}[b] - 1$,
# and the encoder states at later positions are padding. The output vocabulary $\mathcal V$
# has $|\mathcal V|$ tokens (`vocab_size` in code).
#
# One decoder step, for one sentence (Luong et al., 2015, "global attention"):
#
# $$\begin{aligned}
# e_{t,k} &= \operatorname{score}(h_t, s_k), \qquad
# a_{t,k} = \frac{\exp e_{t,k}}{\sum_{j \text{ real}} \exp e_{t,j}} \ (k \text{ real}), \qquad
# c_t = \sum_k a_{t,k}\, s_k,\\
# \tilde h_t &= \tanh\left(W_c [c_t; h_t] + b_c\right), \qquad
# p(y_t \mid y_{<t}, x) = \operatorname{softmax}\left(W_o \tilde h_t + b_o\right).
# \end{aligned}$$
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off and by how much), and a **hidden test** that
#   runs at grading time on other shapes, seeds and edge cases ($B = 1$, $m = 1$, $H = 1$,
#   lengths in any order, garbage at padded positions, huge scores, other search models,
#   non-contiguous arrays...) and checks that bad input raises `ValueError`. Hard-coding the
#   visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests torch's attention
#   (`torch.nn.functional.scaled_dot_product_attention`, `torch.nn.MultiheadAttention`), the
#   softmax, log-softmax and log-sum-exp of torch and SciPy, autograd, and the helpers of the
#   `course` package (among them `course.decoding` and `course.models.seq2seq`) are replaced by
#   traps: calling them from your functions fails the test. (`course.checks` is allowed.) The
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
# ## Part A: four scoring functions over a batch (4 points)
#
# A score $e_{t,k}$ says how well source position $k$ matches what the decoder looks for at
# step $t$. With $h_t$ as the query and $s_k$ as the key:
#
# $$\begin{aligned}
# \text{dot:}\quad & e_{t,k} = h_t^\top s_k &
# \text{scaled dot:}\quad & e_{t,k} = h_t^\top s_k / \sqrt{H}\\
# \text{bilinear:}\quad & e_{t,k} = h_t^\top W_a\, s_k &
# \text{additive:}\quad & e_{t,k} = w_2^\top \tanh\left(W_1 [h_t; s_k]\right)
# \end{aligned}$$
#
# $W_a$ has shape (H, H) and is not symmetric in general, so $h_t^\top W_a s_k \ne
# s_k^\top W_a h_t$. The additive score (Bahdanau et al., 2015) has a hidden layer of $A$
# units: $W_1$ has shape (A, 2H), its **first $H$ columns act on $h_t$** and the last $H$ on
# $s_k$, and $w_2$ has shape (A,). Since $W_1 [h_t; s_k] = W_1^{(h)} h_t + W_1^{(s)} s_k$, the
# part that depends on $h_t$ needs computing only once per sentence.
#
# Implement `attention_scores(kind, h, S, params)` for `h` (B, H) and `S` (B, m, H); it returns
# the scores, shape (B, m), for every position, padded or not (Part B deals with padding).
# `kind` is one of `"dot"`, `"scaled_dot"`, `"bilinear"`, `"additive"`; `params` holds
# `"W_a"` for the bilinear score and `"W_1"`, `"w_2"` for the additive one, and may hold other
# keys (or be `None` for the two dot products). Raise `ValueError` for an unknown kind (the
# message names it), and for shapes that do not fit together (`h` not 2-D, `S` not 3-D,
# another $B$ or $H$ in `S` than in `h`, a missing or misshapen parameter).


# %% nbgrader={"grade": false, "grade_id": "attention_scores", "locked": false, "schema_version": 3, "solution": true, "task": false}
KINDS = ("dot", "scaled_dot", "bilinear", "additive")


def attention_scores(
    kind: str, h: np.ndarray, S: np.ndarray, params: dict[str, np.ndarray] | None
) -> np.ndarray:
    """Attention scores e_{t,k} of decoder states against encoder states.

    Args:
        kind: "dot", "scaled_dot", "bilinear" or "additive".
        h: decoder states h_t, shape (B, H).
        S: encoder states s_k, shape (B, m, H).
        params: "W_a" (H, H) for "bilinear"; "W_1" (A, 2H) and "w_2" (A,) for "additive".

    Returns:
        The scores, shape (B, m).

    Raises:
        ValueError: for an unknown kind or shapes that do not fit together.
    """
    ### BEGIN SOLUTION
    if kind not in KINDS:
        raise ValueError(f"unknown kind of score {kind!r}; use one of {list(KINDS)}")
    query = np.asarray(h, dtype=np.float64)
    keys = np.asarray(S, dtype=np.float64)
    shapes = f"h of shape {query.shape} and S of shape {keys.shape}"
    if query.ndim != 2 or keys.ndim != 3:
        raise ValueError(f"h should be (B, H) and S (B, m, H), got {shapes}")
    n_rows, width = query.shape
    if keys.shape[0] != n_rows or keys.shape[2] != width:
        raise ValueError(f"{shapes} do not fit: S should be (B, m, H) = ({n_rows}, m, {width})")

    def weight(key: str, shape: tuple[int | None, ...]) -> np.ndarray:
        """params[key] as float64, checked against shape (None: any size)."""
        if not params or key not in params:
            raise ValueError(f"the {kind} score needs params[{key!r}]")
        value = np.asarray(params[key], dtype=np.float64)
        sizes = zip(value.shape, shape, strict=False)
        if value.ndim != len(shape) or any(n not in (None, v) for v, n in sizes):
            wanted = tuple("A" if n is None else n for n in shape)
            raise ValueError(f"params[{key!r}] should have shape {wanted}, got {value.shape}")
        return value  # float64, of the checked shape

    if kind in ("dot", "scaled_dot"):
        scores = np.einsum("bh,bkh->bk", query, keys)  # (B, m)
        return scores / np.sqrt(width) if kind == "scaled_dot" else scores
    if kind == "bilinear":
        W_a = weight("W_a", (width, width))
        return np.einsum("bh,bkh->bk", query @ W_a, keys)  # h^T W_a s for each k
    W_1 = weight("W_1", (None, 2 * width))
    w_2 = weight("w_2", (W_1.shape[0],))
    from_query = query @ W_1[:, :width].T  # (B, A), once per sentence
    from_keys = keys @ W_1[:, width:].T  # (B, m, A)
    return np.tanh(from_query[:, None, :] + from_keys) @ w_2  # (B, m)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Two sentences, $m = 3$, $H = 2$, $A = 3$. The expected scores were computed with torch
# (`torch.einsum` and `torch.tanh`).

# %% nbgrader={"grade": true, "grade_id": "test_attention_scores_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(attention_scores)

# %% nbgrader={"grade": true, "grade_id": "test_attention_scores_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): attention_scores against torch for every kind, B = 1, m = 1, H = 1,
# A different from H, W_a far from symmetric, params with extra keys or None, float32 and
# non-contiguous arrays; inputs must come back unmodified; ValueError for unknown kinds and
# shapes that do not fit (S, W_a, W_1, w_2, a missing key).
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_attention_scores

check_attention_scores(attention_scores)
### END HIDDEN TESTS

# %% [markdown]
# ## Part B: masked softmax and the context vector (3 points)
#
# The weights are a softmax of the scores over the **real** source positions of each
# sentence, and the context vector is the average of the encoder states under those weights.
# For sentence $b$ with $n = \text{lengths}[b]$ real positions:
#
# $$a_{t,k} = \begin{cases}
# \dfrac{\exp\left(e_{t,k} - M\right)}{\sum_{j < n} \exp\left(e_{t,j} - M\right)}, & k < n,
# \qquad M = \max_{j < n} e_{t,j},\\[1ex]
# 0, & k \ge n,
# \end{cases} \qquad\qquad c_t = \sum_{k} a_{t,k}\, s_k.$$
#
# Subtracting $M$ changes nothing mathematically and keeps $\exp$ from overflowing (scores of
# 1000 happen with large states and the unscaled dot product). Take the maximum over the real
# positions only: the padding may hold any number, even a huge one.
#
# Implement `attend(scores, lengths, S)`: `scores` (B, m), `lengths` B integers, `S`
# (B, m, H); return `(weights, context)` of shapes (B, m) and (B, H). Padded positions get
# weight **exactly** 0 and each row of weights sums to 1. Raise `ValueError` for a length
# outside $1, \dots, m$ (a sentence of length 0 has nothing to attend to), a number of lengths
# other than $B$, and shapes that do not fit together.


# %% nbgrader={"grade": false, "grade_id": "attend", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attend(scores: np.ndarray, lengths: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masked softmax of the scores over the real positions, and the context vectors.

    Args:
        scores: e_{t,k}, shape (B, m); positions at or after lengths[b] are padding.
        lengths: the number of real source positions of each sentence, integers in [1, m].
        S: encoder states, shape (B, m, H).

    Returns:
        (weights (B, m), exactly 0 at padded positions, rows summing to 1; context (B, H)).

    Raises:
        ValueError: for a length outside [1, m] or shapes that do not fit together.
    """
    ### BEGIN SOLUTION
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
    if n_rows and (sizes.min() < 1 or sizes.max() > n_pos):
        span = f"between 1 and m = {n_pos} (a sentence of length 0 has nothing to attend to)"
        raise ValueError(f"every length must be {span}, got {sizes.tolist()}")
    real = np.arange(n_pos)[None, :] < sizes[:, None]  # (B, m)
    kept = np.where(real, energies, -np.inf)  # padding can never win the max
    top = kept.max(axis=1, keepdims=True)  # (B, 1), a real score
    lifted = np.exp(kept - top)  # exp(-inf) = 0 at padding; the largest real score gives 1
    weights = lifted / lifted.sum(axis=1, keepdims=True)  # (B, m)
    context = np.einsum("bk,bkh->bh", weights, np.where(real[:, :, None], states, 0.0))
    return weights, context  # (B, m), (B, H)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Two sentences of lengths 3 and 2 padded to $m = 3$; the second has a huge score in its
# padding, and the first has scores near 1000.

# %% nbgrader={"grade": true, "grade_id": "test_attend_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(attend)

# %% nbgrader={"grade": true, "grade_id": "test_attend_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): attend against torch.softmax over the real positions for B = 1,
# m = 1, lengths in any order, scores of +-1e4, huge scores and garbage states in the padding,
# lengths given as a list, float32 and non-contiguous arrays; weights exactly 0 at padding,
# rows summing to 1, inputs unmodified; ValueError for a length of 0 or above m, a wrong
# number of lengths, and shapes that do not fit.
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_attend

check_attend(attend)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your attention against PyTorch's
#
# With the scaled dot score, one decoder state as a query of length 1, and keys = values =
# the encoder states, Parts A and B compute what
# `torch.nn.functional.scaled_dot_product_attention` computes; its `attn_mask` (True = may
# attend) plays the role of `lengths`. The cell prints the largest difference.

# %%
import torch

rng = np.random.default_rng(0)
lengths_x = np.array([5, 2, 4])
S_x = rng.normal(size=(3, 5, 8))
h_x = rng.normal(size=(3, 8))
real_x = np.arange(5)[None, :] < lengths_x[:, None]  # (B, m)
with torch.no_grad():
    context_torch = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(h_x)[:, None, :],  # queries (B, 1, H)
        torch.tensor(S_x),  # keys (B, m, H)
        torch.tensor(S_x),  # values (B, m, H)
        attn_mask=torch.tensor(real_x)[:, None, :],  # (B, 1, m)
    )[:, 0]
try:
    _, context_mine = attend(attention_scores("scaled_dot", h_x, S_x, None), lengths_x, S_x)
    gap_x = np.abs(context_mine - context_torch.numpy()).max()
    print(f"context against F.scaled_dot_product_attention: largest difference {gap_x:.1e}")
except NotImplementedError:
    print("Implement Parts A and B first, then run this cell again.")

# %% [markdown]
# ## Part C: the output of one decoder step (3 points)
#
# Luong's decoder does not predict from $h_t$ directly. It combines the context with the
# state into the **attentional state** $\tilde h_t$ and reads the next token's distribution
# from that:
#
# $$\tilde h_t = \tanh\left(W_c [c_t; h_t] + b_c\right), \qquad
# \log p(y_t = v \mid y_{<t}, x) = o_v - \log \sum_{u \in \mathcal V} \exp o_u, \qquad
# o = W_o \tilde h_t + b_o.$$
#
# $W_c$ has shape (H, 2H) and its **first $H$ columns act on $c_t$**; $b_c$ is (H,),
# $W_o$ is ($|\mathcal V|$, H) and $b_o$ is ($|\mathcal V|$,). Compute the log-sum-exp stably:
# with $M = \max_u o_u$, $\log \sum_u \exp o_u = M + \log \sum_u \exp(o_u - M)$. The state
# $h_t$ itself comes from the decoder's GRU (Lecture 2's cell); here it is given.
#
# Implement `decoder_output(kind, h, S, lengths, params)`: `params` holds `"W_c"`, `"b_c"`,
# `"W_o"`, `"b_o"` and the parameters of the score `kind`. Return `(log_probs, weights)` of
# shapes (B, $|\mathcal V|$) and (B, m). Use your Parts A and B. Raise `ValueError` for
# output parameters of the wrong shape.


# %% nbgrader={"grade": false, "grade_id": "decoder_output", "locked": false, "schema_version": 3, "solution": true, "task": false}
def decoder_output(
    kind: str,
    h: np.ndarray,
    S: np.ndarray,
    lengths: np.ndarray,
    params: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Log-probabilities of the next token after one attentional decoder step.

    Args:
        kind: the score, as for attention_scores.
        h: decoder states h_t, shape (B, H).
        S: encoder states, shape (B, m, H), padded after lengths[b].
        lengths: real source positions per sentence, integers in [1, m].
        params: "W_c" (H, 2H), "b_c" (H,), "W_o" (vocab_size, H), "b_o" (vocab_size,), and the score's.

    Returns:
        (log_probs (B, vocab_size), weights (B, m)).

    Raises:
        ValueError: for parameters or inputs of the wrong shape.
    """
    ### BEGIN SOLUTION
    query = np.asarray(h, dtype=np.float64)
    weights, context = attend(attention_scores(kind, query, S, params), lengths, S)
    width = query.shape[1]
    sizes = {"W_c": (width, 2 * width), "b_c": (width,)}
    for key in ("W_c", "b_c", "W_o", "b_o"):
        if key not in params:
            raise ValueError(f"params has no key {key!r}")
    n_out = np.shape(params["W_o"])[0] if np.ndim(params["W_o"]) == 2 else -1
    sizes |= {"W_o": (n_out, width), "b_o": (n_out,)}
    for key, shape in sizes.items():
        found = np.shape(params[key])
        if found != shape:
            raise ValueError(f"params[{key!r}] should have shape {shape}, got {found}")
    W_c = np.asarray(params["W_c"], dtype=np.float64)
    joined = np.concatenate([context, query], axis=1)  # [c_t; h_t], (B, 2H)
    attentional = np.tanh(joined @ W_c.T + params["b_c"])  # (B, H)
    logits = attentional @ np.asarray(params["W_o"], dtype=np.float64).T + params["b_o"]
    top = logits.max(axis=1, keepdims=True)  # (B, 1)
    log_norm = top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    return logits - log_norm, weights  # (B, vocab_size), (B, m)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C
#
# The inputs of Part A's test with the dot score, lengths 3 and 2, $|\mathcal V| = 4$. The
# second call adds 1000 to one output bias: the log-probabilities must stay finite.

# %% nbgrader={"grade": true, "grade_id": "test_decoder_output_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(decoder_output)

# %% nbgrader={"grade": true, "grade_id": "test_decoder_output_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): decoder_output against torch (torch.log_softmax of Luong's
# attentional state) for every kind of score, B = 1, m = 1, vocab_size = 1, lengths in any order,
# garbage in the padding, logits near 1e4, float32 and non-contiguous arrays; inputs must come
# back unmodified; ValueError for W_c, b_c, W_o, b_o of the wrong shape.
### BEGIN HIDDEN TESTS
from autograder.hidden.a4_seq2seq_attention import check_decoder_output

check_decoder_output(decoder_output)
### END HIDDEN TESTS

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
