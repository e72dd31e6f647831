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
# # Assignment 6: the Transformer block, its masks and its size
#
# Lecture 6 assembled the Transformer from PyTorch modules and proved it equal to
# `torch.nn.Transformer`. Here you build its pieces again in NumPy, in forms the lecture does
# not write: RMSNorm (the norm of LLaMA and T5) with the statistic its backward pass keeps
# and that backward pass, a whole encoder layer run from a state dict, the decoder's mask for
# batches padded on the **left** and for a decoder that already holds a cache, and the
# parameter count of any configuration, from the paper's base model to a GPT-style stack.
#
# **Goals.** After this assignment you can
#
# 1. normalise over the trailing axes of an array with RMSNorm, for rows too large to
#    square, and derive and compute its backward pass from the statistic it keeps (Part A);
# 2. run an encoder layer, post-norm and pre-norm, from the weights of
#    `course.models.transformer.EncoderLayer` (Part B);
# 3. build the self-attention mask and the positions of a decoder for right- and left-padded
#    batches, with fewer queries than keys (Part C);
# 4. count the parameters of a Transformer with shared or tied embeddings, without biases,
#    and without an encoder (Part D);
# 5. say, from your backward pass and a computed example, what RMSNorm's gradient is
#    orthogonal to and what dropping the mean costs (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. Vectors are **rows**: a sequence of $n$ tokens is a
# matrix $X$ of shape (n, d_model), and a weight matrix $W$ acts as `X @ W.T`, as in
# `torch.nn.Linear`. Arrays may have **leading batch dimensions**, written "…". Layer
# normalisation (LayerNorm, which Part B uses) of a row $x$ with $D$ numbers:
#
# $$\mu = \frac{1}{D}\sum_k x_k, \qquad \sigma^2 = \frac{1}{D}\sum_k (x_k - \mu)^2, \qquad
# \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,$$
#
# with the biased variance (divide by $D$, as PyTorch does) and $\varepsilon = 10^{-5}$. The
# feed-forward network is $\operatorname{FFN}(x) = \max(0,\, x W_1^\top + b_1)\, W_2^\top + b_2$
# with $W_1$ of shape (d_ff, d_model) and $W_2$ of shape (d_model, d_ff).
#
# A **mask** is an array of booleans, **True where a query may attend to a key** (as in
# Assignment 5 and `course.models.attention`).
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off, where and by how much), and a **hidden test**
#   that runs at grading time on other shapes, seeds and edge cases (an all-zero row, one
#   feature, rows near $10^{200}$, normalised shapes of two axes, one token, one head and as
#   many heads as features, $d_\text{ff} \ne 4\,d_\text{model}$, sequences of one real
#   token, caches, configurations without biases or encoder...) and checks that bad input
#   raises `ValueError`. Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests the PyTorch modules being taught (`nn.LayerNorm`,
#   `nn.RMSNorm`, `F.layer_norm` and `F.rms_norm`, `nn.TransformerEncoderLayer`,
#   `nn.Transformer` and their kin, `nn.MultiheadAttention`,
#   `F.scaled_dot_product_attention`), every softmax of torch and SciPy, `nn.Linear` and
#   `nn.Embedding`, autograd (`backward`, `torch.autograd.grad`, `torch.autograd.functional`
#   and `torch.func`) and the helpers of the `course` package (among them
#   `course.models.transformer`, `course.models.attention` and `course.analysis.parameters`)
#   are replaced by traps: calling them from your functions fails the test. (`course.checks`
#   is allowed.) The visible tests run your functions under the same rule and say so when one
#   of them calls a forbidden routine; their data and expected values are in
#   `course/checks/a6_transformer.py`.
#
# Autograded: 14 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a6 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a6_transformer/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a6_transformer import check_part_a, check_part_b, check_part_c, check_part_d

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## Part A: RMSNorm, forward and backward (3 points)
#
# LLaMA, T5 and most recent decoders replace the layer norm by **RMSNorm**
# (Zhang and Sennrich, 2019): no mean is subtracted and there is no $\beta$; each row is
# divided by its root mean square,
#
# $$r = \frac{1}{\sqrt{\tfrac{1}{D}\sum_k x_k^2 + \varepsilon}}, \qquad
# \operatorname{RMSNorm}(x) = \gamma \odot x\, r .$$
#
# As `torch.nn.RMSNorm(normalized_shape)` does, normalise over the **last few axes** of the
# input, as many as $\gamma$ has: for a Transformer that is the feature axis (d_model,), but a
# row may also be a block of shape (2, 3). All the numbers of such a trailing block form one
# row of $D$ numbers with one $r$, and $\gamma$ has the block's shape.
#
# The forward pass keeps **one number per row** for the backward pass, the reciprocal root
# mean square $r$. Given the gradient $g^y = \partial L/\partial y$ of a loss $L$ with respect
# to the output, the backward pass returns $\partial L/\partial x$ (of the shape of $x$) and
# $\partial L/\partial \gamma$ (of the shape of $\gamma$, summed over all rows). Deriving it
# is part of the exercise: differentiate $r$ with respect to each $x_j$ first, and write the
# result with $\hat x = x\, r$ and $r$ only.
#
# Implement
#
# * `rms_norm(x, gamma, eps=1e-6)`: `gamma` of a shape $S$ with at least one axis, `x` of
#   shape (…, *S*). Return the tuple `(y, rrms)`: `y` of the shape of `x`, and `rrms`, the
#   $r$ of each row, of shape (…) (a 0-dimensional array when `x` is a single row).
# * `rms_norm_backward(grad_y, x, gamma, rrms)`: `grad_y` of the shape of `x`, `rrms` the
#   one that `rms_norm` returned (no $\varepsilon$ is needed: it is inside $r$). Return the
#   tuple `(grad_x, grad_gamma)`.
#
# **Large rows.** In `float64`, $x_k^2$ overflows to infinity for $|x_k|$ above about
# $1.3 \times 10^{154}$ (in `float16`, above 256: the reason mixed-precision training computes
# its norms in `float32`). `rms_norm` must give the right $y$ and $r$ for rows as large as
# $10^{200}$: divide a large row by a number of its size before squaring, and fold that
# number back into $r$ (without changing what $\varepsilon$ does). Write the backward pass so
# that it forms no such square or cube either: it gets the right gradients for those rows too.
#
# **Bad input** raises `ValueError`: a `gamma` with no axis, an `x` whose trailing shape is not
# that of `gamma`, $\varepsilon \le 0$ (an all-zero row would divide 0 by 0); in the backward
# pass, a `grad_y` not of the shape of `x`, an `rrms` not of shape (…), or an `rrms` that is
# not positive.


# %% nbgrader={"grade": false, "grade_id": "rms_norm", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rms_norm(x: np.ndarray, gamma: np.ndarray, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """RMSNorm over the trailing axes that gamma's shape names.

    Args:
        x: shape (..., *S).
        gamma: the scale, shape S (at least one axis).
        eps: added to the mean square, > 0.

    Returns:
        (y, rrms): y of shape (..., *S); r = 1 / sqrt(mean(x**2) + eps) of each row, shape (...).

    Raises:
        ValueError: for mismatched shapes or eps <= 0.
    """
    ### BEGIN SOLUTION
    values = np.asarray(x, dtype=np.float64)
    scale = np.asarray(gamma, dtype=np.float64)
    if scale.ndim == 0:
        raise ValueError("gamma needs at least one axis: the shape S to normalise over")
    span = scale.ndim  # how many trailing axes make one row
    if values.ndim < span or values.shape[values.ndim - span :] != scale.shape:
        raise ValueError(f"x of shape {values.shape} does not end with gamma's shape {scale.shape}")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    outer = values.shape[: values.ndim - span]  # (...)
    rows = values.reshape(*outer, -1)  # (..., D)
    # c >= 1 of each row's size: (x / c)**2 cannot overflow, and eps / c**2 only vanishes
    # when it is negligible anyway; for rows below 1, c = 1 and nothing changes.
    size = np.maximum(np.abs(rows).max(axis=-1), 1.0)  # (...)
    shrunk = rows / size[..., None]  # (..., D), entries in [-1, 1]
    mean_square = np.mean(shrunk * shrunk, axis=-1)  # mean(x**2) / c**2
    rrms = 1.0 / (size * np.sqrt(mean_square + eps / size / size))  # (...)
    return (rows * rrms[..., None]).reshape(values.shape) * scale, rrms
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "rms_norm_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rms_norm_backward(
    grad_y: np.ndarray, x: np.ndarray, gamma: np.ndarray, rrms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The gradients of RMSNorm with respect to its input and its scale.

    Args:
        grad_y: dL/dy, shape (..., *S).
        x: the input of the forward pass, shape (..., *S).
        gamma: the scale, shape S.
        rrms: the r of each row that rms_norm returned, shape (...), positive.

    Returns:
        (grad_x, grad_gamma): dL/dx of shape (..., *S) and dL/dgamma of shape S.

    Raises:
        ValueError: for mismatched shapes or an rrms that is not positive.
    """
    ### BEGIN SOLUTION
    values = np.asarray(x, dtype=np.float64)
    upstream = np.asarray(grad_y, dtype=np.float64)
    scale = np.asarray(gamma, dtype=np.float64)
    kept = np.asarray(rrms, dtype=np.float64)
    if scale.ndim == 0:
        raise ValueError("gamma needs at least one axis: the shape S that was normalised over")
    span = scale.ndim
    if values.ndim < span or values.shape[values.ndim - span :] != scale.shape:
        raise ValueError(f"x of shape {values.shape} does not end with gamma's shape {scale.shape}")
    if upstream.shape != values.shape:
        raise ValueError(f"grad_y has shape {upstream.shape}, x has shape {values.shape}")
    outer = values.shape[: values.ndim - span]
    if kept.shape != outer:
        raise ValueError(f"rrms should have shape {outer} (one per row), got {kept.shape}")
    if not np.all(kept > 0):
        raise ValueError("rrms must be positive: it is 1 / sqrt(mean square + eps)")
    x_hat = values * kept.reshape(*outer, *([1] * span))  # (..., *S): x r, of size 1
    g = upstream * scale  # (..., *S): dL/d(x_hat)
    lead = tuple(range(len(outer)))  # the row axes
    inside = tuple(range(len(outer), values.ndim))  # the axes of one row
    along = np.mean(g * x_hat, axis=inside, keepdims=True)  # (..., 1, ..., 1)
    # dr/dx_j = -r**3 x_j / D, so dL/dx_j = r (g_j - x_hat_j mean_k(g_k x_hat_k))
    grad_x = kept.reshape(along.shape) * (g - x_hat * along)
    return grad_x, np.sum(upstream * x_hat, axis=lead)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# The expected numbers come from `torch.nn.functional.rms_norm` and, for the gradients,
# from torch's autograd through it (float64).

# %% nbgrader={"grade": true, "grade_id": "test_rms_norm_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(rms_norm, rms_norm_backward)

# %% nbgrader={"grade": true, "grade_id": "test_rms_norm_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): rms_norm against torch.nn.functional.rms_norm, and
# rms_norm_backward against torch's autograd through it, for batches, a single row
# (0-dimensional statistics), one feature, an all-zero row, rows near 1e200 and near 1e-8,
# other eps, normalised shapes of two and three axes, non-contiguous arrays; inputs must come
# back unmodified; ValueError for the bad inputs above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a6_transformer import check_rms_norm

check_rms_norm(rms_norm, rms_norm_backward)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): large rows, and your gradient against finite differences
#
# First the rows $c\,(1, 2, 3, 4)$, whose $y$ does not depend on $c$ (for $c$ far above
# $\sqrt{\varepsilon}$): the mean of the squares taken as it stands, against your `rms_norm`.
# Then $\partial L/\partial x$ and $\partial L/\partial \gamma$ for $L = \sum g^y \odot y$,
# against central differences $\big(L(x + h e_j) - L(x - h e_j)\big)/2h$.

# %%
try:
    for size_x in (1.0, 1e100, 1e160, 1e200):
        row_x = size_x * np.array([1.0, 2.0, 3.0, 4.0])
        with np.errstate(over="ignore"):
            naive_x = row_x / np.sqrt(np.mean(row_x**2) + 1e-6)
        mine_x = rms_norm(row_x, np.ones(4))[0]
        print(f"c = {size_x:6.0e}: squared as it stands {naive_x}, yours {mine_x}")
    rng_x = np.random.default_rng(0)
    x_x, gamma_x, g_x = rng_x.normal(size=(3, 5)), rng_x.normal(size=5), rng_x.normal(size=(3, 5))
    grad_x_x, grad_gamma_x = rms_norm_backward(g_x, x_x, gamma_x, rms_norm(x_x, gamma_x)[1])
    step_x, numeric_x, numeric_gamma_x = 1e-6, np.zeros_like(x_x), np.zeros_like(gamma_x)
    for where_x in np.ndindex(x_x.shape):
        bump_x = np.zeros_like(x_x)
        bump_x[where_x] = step_x
        up_x, down_x = rms_norm(x_x + bump_x, gamma_x)[0], rms_norm(x_x - bump_x, gamma_x)[0]
        numeric_x[where_x] = np.sum(g_x * (up_x - down_x)) / (2 * step_x)
    for k_x in range(5):
        bump_x = np.zeros(5)
        bump_x[k_x] = step_x
        up_x, down_x = rms_norm(x_x, gamma_x + bump_x)[0], rms_norm(x_x, gamma_x - bump_x)[0]
        numeric_gamma_x[k_x] = np.sum(g_x * (up_x - down_x)) / (2 * step_x)
    print(f"dL/dx:     largest difference {np.abs(grad_x_x - numeric_x).max():.1e}")
    print(f"dL/dgamma: largest difference {np.abs(grad_gamma_x - numeric_gamma_x).max():.1e}")
except NotImplementedError:
    print("Implement Part A first, then run this cell again.")


# %% [markdown]
# ## Part B: an encoder layer from a state dict, post-norm and pre-norm (5 points)
#
# An encoder layer has two sublayers, multi-head self-attention and the FFN, each with a
# residual connection and a layer norm. Where the norm sits is the layer's **norm order**:
#
# $$\text{post-norm (the paper):}\quad h = \operatorname{LN}_1\big(x + \operatorname{MHA}(x)\big),
# \qquad y = \operatorname{LN}_2\big(h + \operatorname{FFN}(h)\big);$$
#
# $$\text{pre-norm:}\quad h = x + \operatorname{MHA}\big(\operatorname{LN}_1(x)\big),
# \qquad y = h + \operatorname{FFN}\big(\operatorname{LN}_2(h)\big).$$
#
# The weights come as the **state dict** of `course.models.transformer.EncoderLayer(d_model,
# num_heads, d_ff)` (Lecture 6's layer), converted to NumPy: `params` maps each of these names
# to an array,
#
# | names | shape | role |
# | --- | --- | --- |
# | `self_attn.W_q.weight`, `self_attn.W_k.weight`, `self_attn.W_v.weight` | (d_model, d_model) | $W^Q$, $W^K$, $W^V$ |
# | `self_attn.W_q.bias`, `self_attn.W_k.bias`, `self_attn.W_v.bias` | (d_model,) | $b^Q$, $b^K$, $b^V$ |
# | `self_attn.W_o.weight`, `self_attn.W_o.bias` | (d_model, d_model), (d_model,) | $W^O$, $b^O$ |
# | `ffn.linear1.weight`, `ffn.linear1.bias` | (d_ff, d_model), (d_ff,) | $W_1$, $b_1$ |
# | `ffn.linear2.weight`, `ffn.linear2.bias` | (d_model, d_ff), (d_model,) | $W_2$, $b_2$ |
# | `norm1.weight`, `norm1.bias`, `norm2.weight`, `norm2.bias` | (d_model,) | $\gamma_1$, $\beta_1$, $\gamma_2$, $\beta_2$ |
#
# (note that the three projections are separate matrices here, not `nn.MultiheadAttention`'s
# stacked `in_proj_weight`). Multi-head attention is Assignment 5's: $Q = X W^{Q\top} + b^Q$
# and likewise $K$, $V$; head $r$ takes the columns $r d_k, \dots, (r+1) d_k - 1$ with
# $d_k = d_\text{model}/h$; $\text{head}_r = \operatorname{softmax}(Q_r K_r^\top/\sqrt{d_k} +
# M)\,V_r$; $\operatorname{MHA}(X) = [\text{head}_0; \dots; \text{head}_{h-1}]\,W^{O\top} +
# b^O$. There is no dropout (the layer is evaluated).
#
# Implement `encoder_layer(x, params, num_heads, norm_first=False, mask=None, eps=1e-5)`:
# `x` of shape (…, n, d_model), `mask` `None` or booleans that broadcast to (…, n, n) and
# apply to every head (a padding mask of shape (B, 1, n) for a batch), `eps` that of both
# layer norms. Return $y$, of the shape of `x`. Use the given `layer_norm` (LayerNorm, not
# your RMSNorm: this is Lecture 6's layer) and `masked_softmax`; d_ff is the number of rows of `ffn.linear1.weight` (it need not be
# $4\,d_\text{model}$).
#
# Raise `ValueError` for `x` with fewer than 2 dimensions, `num_heads` below 1 or not a
# divisor of d_model (the message says "divisible"), a missing weight (the message names it)
# and a weight of the wrong shape.


# %% nbgrader={"grade": false, "grade_id": "given_masked_softmax", "locked": true, "schema_version": 3, "solution": false, "task": false}
def masked_softmax(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Softmax over the last axis, stable, over the allowed entries only (Assignment 5).

    scores (..., n, m); mask None or booleans that broadcast to scores' shape, True where a
    query may attend to a key. Blocked keys get weight exactly 0. Returns (..., n, m).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"the mask must hold booleans (True = may attend), not {mask.dtype}")
    try:
        shape = np.broadcast_shapes(scores.shape, mask.shape)
    except ValueError:
        raise ValueError(
            f"a mask of shape {mask.shape} does not fit scores {scores.shape}"
        ) from None
    mask = np.broadcast_to(mask, shape)
    if not mask.any(axis=-1).all():
        raise ValueError("a row of the mask allows no key: its softmax would be 0/0")
    scores = np.where(mask, np.broadcast_to(scores, shape), -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


# %% nbgrader={"grade": false, "grade_id": "given_layer_norm", "locked": true, "schema_version": 3, "solution": false, "task": false}
def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm over the last axis, as in the notation above (biased variance, two passes).

    x (..., d); gamma and beta (d,). Returns (..., d).
    """
    x = np.asarray(x, dtype=np.float64)
    deviations = x - np.mean(x, axis=-1, keepdims=True)
    spread = np.mean(deviations**2, axis=-1, keepdims=True)  # sigma^2, dividing by d
    return np.asarray(gamma) * deviations / np.sqrt(spread + eps) + np.asarray(beta)


# %% nbgrader={"grade": false, "grade_id": "encoder_layer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def encoder_layer(
    x: np.ndarray,
    params: dict[str, np.ndarray],
    num_heads: int,
    norm_first: bool = False,
    mask: np.ndarray | None = None,
    eps: float = 1e-5,
) -> np.ndarray:
    """One Transformer encoder layer with the weights of course's EncoderLayer.

    Args:
        x: the tokens, shape (..., n, d_model).
        params: the layer's state dict as NumPy arrays (see the table above).
        num_heads: h, a divisor of d_model.
        norm_first: False for post-norm (the paper), True for pre-norm.
        mask: None, or booleans broadcastable to (..., n, n); True = may attend.
        eps: the layer norms' epsilon.

    Returns:
        y, shape (..., n, d_model).

    Raises:
        ValueError: for a misshapen x, a bad num_heads, a missing or misshapen weight.
    """
    ### BEGIN SOLUTION
    stream = np.asarray(x, dtype=np.float64)
    if stream.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d_model), got shape {stream.shape}")
    *lead, n, width = stream.shape
    if isinstance(num_heads, (bool, np.bool_)) or not isinstance(num_heads, (int, np.integer)):
        raise ValueError(f"num_heads must be an integer, got {num_heads!r}")
    if num_heads < 1 or width % num_heads:
        raise ValueError(f"d_model = {width} must be divisible by num_heads = {num_heads} >= 1")
    if "ffn.linear1.weight" not in params:
        raise ValueError("params has no 'ffn.linear1.weight'")
    first_weight = np.shape(params["ffn.linear1.weight"])
    inner = first_weight[0] if len(first_weight) == 2 else -1  # d_ff, or a shape that fails below
    wanted = {f"self_attn.W_{p}.{kind}": (width, width) if kind == "weight" else (width,)
              for p in "qkvo" for kind in ("weight", "bias")}  # fmt: skip
    wanted |= {"ffn.linear1.weight": (inner, width), "ffn.linear1.bias": (inner,)}
    wanted |= {"ffn.linear2.weight": (width, inner), "ffn.linear2.bias": (width,)}
    wanted |= {f"norm{i}.{kind}": (width,) for i in (1, 2) for kind in ("weight", "bias")}
    w = {}
    for key, shape in wanted.items():
        if key not in params:
            raise ValueError(f"params has no {key!r}")
        w[key] = np.asarray(params[key], dtype=np.float64)
        if w[key].shape != shape:
            raise ValueError(f"params[{key!r}] has shape {w[key].shape}, expected {shape}")
    if mask is not None and np.ndim(mask) < 2:
        raise ValueError(f"mask must broadcast to (..., n, n), got shape {np.shape(mask)}")
    d_k = width // num_heads

    def heads_of(z: np.ndarray, p: str) -> np.ndarray:  # (..., n, d) -> (..., h, n, d_k)
        projected = z @ w[f"self_attn.W_{p}.weight"].T + w[f"self_attn.W_{p}.bias"]
        return np.swapaxes(projected.reshape(*lead, n, num_heads, d_k), -3, -2)

    def self_attention(z: np.ndarray) -> np.ndarray:  # (..., n, d) -> (..., n, d)
        q, k, v = heads_of(z, "q"), heads_of(z, "k"), heads_of(z, "v")
        per_head = None if mask is None else np.expand_dims(np.asarray(mask), -3)
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)  # (..., h, n, n)
        mixed = masked_softmax(scores, per_head) @ v  # (..., h, n, d_k)
        joined = np.swapaxes(mixed, -3, -2).reshape(*lead, n, width)
        return joined @ w["self_attn.W_o.weight"].T + w["self_attn.W_o.bias"]

    def feed_forward(z: np.ndarray) -> np.ndarray:  # (..., n, d) -> (..., n, d_ff) -> (..., n, d)
        hidden = np.maximum(z @ w["ffn.linear1.weight"].T + w["ffn.linear1.bias"], 0.0)
        return hidden @ w["ffn.linear2.weight"].T + w["ffn.linear2.bias"]

    def norm(z: np.ndarray, which: int) -> np.ndarray:
        return layer_norm(z, w[f"norm{which}.weight"], w[f"norm{which}.bias"], eps)

    if norm_first:
        middle = stream + self_attention(norm(stream, 1))
        return middle + feed_forward(norm(middle, 2))
    middle = norm(stream + self_attention(stream), 1)
    return norm(middle + feed_forward(middle), 2)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# $n = 3$ tokens, $d_\text{model} = 4$, $h = 2$ heads, $d_\text{ff} = 6$, with fixed weights;
# the expected numbers come from `torch.nn.TransformerEncoderLayer` (float64, no dropout,
# `norm_first=False` and `True`) with these weights copied in (its `in_proj_weight` is
# $[W^Q; W^K; W^V]$).


# %% nbgrader={"grade": true, "grade_id": "test_encoder_layer_visible", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
check_part_b(encoder_layer)

# %% nbgrader={"grade": true, "grade_id": "test_encoder_layer_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): encoder_layer against torch.nn.TransformerEncoderLayer (float64, no
# dropout, weights copied), post-norm and pre-norm, for one token, one head and as many heads
# as features, d_ff != 4 d_model, batches with causal and padding masks, leading dimensions,
# other eps, large inputs, non-contiguous arrays; inputs must come back unmodified;
# ValueError for a bad num_heads (saying "divisible"), a missing weight (naming it), weights of
# the wrong shape, an x of the wrong width and a 1-D x.
### BEGIN HIDDEN TESTS
from autograder.hidden.a6_transformer import check_encoder_layer

check_encoder_layer(encoder_layer)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your layer against Lecture 6's
#
# A `course.models.transformer.EncoderLayer` with random weights: its state dict, converted
# to NumPy, is exactly what `encoder_layer` takes. Then twelve such layers stacked: how large
# does the residual stream grow, post-norm against pre-norm?

# %%
import torch

from course.models.transformer import EncoderLayer

torch.manual_seed(0)
module_x = EncoderLayer(16, 4, 40, dropout=0.0, norm_first=True).double().eval()
params_x = {name: tensor.numpy() for name, tensor in module_x.state_dict().items()}
x_x = np.random.default_rng(0).normal(size=(2, 5, 16))
with torch.no_grad():
    y_module_x = module_x(torch.tensor(x_x)).numpy()
try:
    gap_x = np.abs(encoder_layer(x_x, params_x, 4, norm_first=True) - y_module_x).max()
    print(f"largest difference from EncoderLayer (pre-norm): {gap_x:.1e}")
    for first_x in (False, True):
        stream_x, sizes_x = x_x, []
        for _ in range(12):
            stream_x = encoder_layer(stream_x, params_x, 4, norm_first=first_x)
            sizes_x.append(np.linalg.norm(stream_x, axis=-1).mean())
        order_x = "pre-norm " if first_x else "post-norm"
        print(f"{order_x}: mean row norm after layers 1..12:", np.round(sizes_x, 1))
except NotImplementedError:
    print("Implement Part B first, then run this cell again.")

# %% [markdown]
# ## Part C: the decoder's mask and positions, for padding on either side (3 points)
#
# Lecture 6's decoder mask is causal **and** key-not-padding, for sequences padded on the
# right and as many queries as keys. Two situations change it.
#
# * **Left padding.** To generate from a batch of prompts of different lengths, one pads them
#   on the **left**, so that every prompt ends at the last position and the next tokens are
#   appended in one column. The real tokens of a sequence of length $L$ padded to $m$
#   positions are then at positions $m - L, \dots, m - 1$, and its first real token must get
#   the position encoding of position 0.
# * **A cache.** A decoder that generates keeps the keys and values of the positions it has
#   already seen and runs only the $n$ **newest** positions as queries: query $i$
#   ($i = 0, \dots, n - 1$) sits at position $p_i = m - n + i$ among the $m$ keys.
#
# Query $i$ of sequence $b$ may attend to key $j$ when $j \le p_i$ (causal) and key $j$ is a
# real token of sequence $b$. A query on a padding position of a left-padded sequence may
# then see no key at all; its output is never used, but its softmax must be defined: such a
# query sees **its own position only**.
#
# Implement `decoder_mask_and_positions(lengths, n, m=None, left_padded=False)`: `lengths`
# (B,) the real lengths, $n$ queries, $m$ keys (`None`: $m = n$). Return the tuple
# `(mask, positions)`:
#
# * `mask`: booleans of shape (B, 1, n, m) (the axis of length 1 broadcasts over heads);
# * `positions`: integers of shape (B, n), the position of each query's token **counted among
#   the real tokens of its sequence** (0 for the first real token), and 0 for a query on a
#   padding position.
#
# Raise `ValueError` for $n$ or $m$ that is not an integer $\ge 1$, $n > m$, and lengths that
# are not a non-empty 1-D array of integers in $1, \dots, m$.


# %% nbgrader={"grade": false, "grade_id": "decoder_mask", "locked": false, "schema_version": 3, "solution": true, "task": false}
def decoder_mask_and_positions(
    lengths: np.ndarray | list[int], n: int, m: int | None = None, left_padded: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The decoder's self-attention mask and the positions of its n newest queries.

    Args:
        lengths: (B,) the number of real tokens of each sequence, 1..m.
        n: the number of queries, the last n of the m positions.
        m: the number of keys (None: m = n).
        left_padded: True when the padding comes before the real tokens.

    Returns:
        (mask, positions): booleans (B, 1, n, m), True = may attend; integers (B, n).
    """
    ### BEGIN SOLUTION
    keys = n if m is None else m
    for label, size in (("n", n), ("m", keys)):
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
            raise ValueError(f"{label} must be an integer, got {size!r}")
        if size < 1:
            raise ValueError(f"{label} must be at least 1, got {size}")
    if n > keys:
        raise ValueError(f"n = {n} queries cannot outnumber the m = {keys} keys")
    real = np.asarray(lengths)
    if real.ndim != 1 or real.size == 0 or not np.issubdtype(real.dtype, np.integer):
        raise ValueError(f"lengths must be a non-empty 1-D array of integers, got {real!r}")
    if real.min() < 1 or real.max() > keys:
        raise ValueError(f"every length must lie in 1..{keys}, got {real.tolist()}")
    start = keys - real if left_padded else np.zeros_like(real)  # (B,): the first real slot
    slots = np.arange(keys)  # (m,)
    is_real = (slots >= start[:, None]) & (slots < (start + real)[:, None])  # (B, m)
    query_at = slots[keys - n :]  # (n,): p_i = m - n + i
    mask = (slots[None, :] <= query_at[:, None])[None] & is_real[:, None, :]  # (B, n, m)
    alone = ~mask.any(axis=-1)  # (B, n): left padding that would see nothing
    mask = mask | (alone[..., None] & (slots[None, :] == query_at[:, None]))
    counted = query_at[None, :] - start[:, None]  # (B, n)
    on_real = is_real[:, keys - n :]  # (B, n)
    return mask[:, None], np.where(on_real, counted, 0)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C

# %% nbgrader={"grade": true, "grade_id": "test_decoder_mask_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(decoder_mask_and_positions)

# %% nbgrader={"grade": true, "grade_id": "test_decoder_mask_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): decoder_mask_and_positions against masks and positions built one
# entry at a time, for right and left padding, a batch of one, sequences of one real token,
# a single position, caches of every size, lengths given as lists and as int32 arrays;
# inputs must come back unmodified; ValueError for the bad inputs above, n or m of 0, float
# lengths and a 2-D array of lengths.
### BEGIN HIDDEN TESTS
from autograder.hidden.a6_transformer import check_decoder_mask

check_decoder_mask(decoder_mask_and_positions)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): a left-padded batch, step by step
#
# Three prompts of lengths 4, 2 and 1, padded on the left to 4 positions, then two generated
# tokens with a cache: the rows of the mask (one per query) and the positions.

# %%
try:
    mask_x, positions_x = decoder_mask_and_positions([4, 2, 1], 4, left_padded=True)
    print("prompt, sequence 2 (1 real token):\n", mask_x[2, 0].astype(int))
    print("positions of the prompt:\n", positions_x)
    for step_x in (5, 6):  # one new query against all keys so far; the real lengths grow
        mask_x, positions_x = decoder_mask_and_positions(
            [step_x, step_x - 2, step_x - 3], 1, step_x, left_padded=True
        )
        print(f"step with {step_x} keys, positions of the new token: {positions_x[:, 0]}")
except NotImplementedError:
    print("Implement Part C first, then run this cell again.")

# %% [markdown]
# ## Part D: how many parameters? (3 points)
#
# With width $d = d_\text{model}$, feed-forward width $d_\text{ff}$ and biases, the pieces of a
# Transformer hold
#
# | piece | parameters |
# | --- | --- |
# | multi-head attention ($W^Q, W^K, W^V, W^O$ and biases) | $4 d^2 + 4 d$ |
# | feed-forward network ($W_1, b_1, W_2, b_2$) | $2 d\, d_\text{ff} + d_\text{ff} + d$ |
# | layer norm ($\gamma, \beta$) | $2 d$ |
# | encoder layer | attention + FFN + 2 layer norms |
# | decoder layer | 2 attentions (self and cross) + FFN + 3 layer norms |
# | embedding table of $\lvert\mathcal{V}\rvert$ tokens | $\lvert\mathcal{V}\rvert\, d$ |
#
# (the number of heads changes none of these). Real models differ in the details, and a
# configuration says which:
#
# | key | meaning | default |
# | --- | --- | --- |
# | `d_model`, `num_heads`, `d_ff` | sizes; `num_heads` must divide `d_model` | required |
# | `decoder_layers` | $N_\text{dec} \ge 1$ | required |
# | `tgt_vocab_size` | the target (output) vocabulary | required |
# | `encoder_layers` | $N_\text{enc} \ge 0$; **0 is a decoder-only model** (GPT): its decoder layers have no cross-attention, only self-attention, FFN and 2 layer norms | 0 |
# | `src_vocab_size` | the source vocabulary; needed when there is an encoder, ignored otherwise | - |
# | `shared_embeddings` | the source and target embeddings are one table (a shared vocabulary: the two sizes must be equal); ignored without an encoder | `False` |
# | `tie_output` | the output layer's matrix is the target embedding table (the output layer has no bias, tied or not) | `False` |
# | `bias` | the linear layers and layer norms have biases; without, attention has $4d^2$, the FFN $2 d\, d_\text{ff}$ and a layer norm $d$ ($\gamma$ only), as `nn.TransformerEncoderLayer(..., bias=False)` | `True` |
# | `final_norm` | one more layer norm after each stack (after the encoder's last layer, and after the decoder's), as `nn.Transformer` and pre-norm models have | `True` |
# | `max_len` | learned positions: one table of `max_len` $\times\, d$ per stack (encoder and decoder); 0 for sinusoidal positions, which have no parameters | 0 |
#
# Implement `count_parameters(config)`, returning a dict of five integers:
# `"embeddings"` (the token tables, and the position tables), `"encoder"` (its layers and its
# final norm; 0 without an encoder), `"decoder"` (the same), `"output"` (the output matrix, 0
# when tied) and `"total"`, their sum.
#
# Raise `ValueError` for a missing required key, a key not in the table (a typo must not go
# unnoticed), sizes that are not positive integers (layer counts and `max_len`: non-negative
# ones; `bool` is not an integer here), `num_heads` that does not divide `d_model`, a missing
# `src_vocab_size` when there is an encoder, shared embeddings with two vocabulary sizes, and
# options that are not `True` or `False`.


# %% nbgrader={"grade": false, "grade_id": "count_parameters", "locked": false, "schema_version": 3, "solution": true, "task": false}
def count_parameters(config: dict) -> dict[str, int]:
    """The number of parameters of a Transformer configuration, by part.

    Args:
        config: the keys of the table above.

    Returns:
        {"embeddings", "encoder", "decoder", "output", "total"}: integers.

    Raises:
        ValueError: for a missing, unknown or invalid key.
    """
    ### BEGIN SOLUTION
    needed = ("d_model", "num_heads", "d_ff", "decoder_layers", "tgt_vocab_size")
    optional = {"encoder_layers": 0, "src_vocab_size": None, "shared_embeddings": False,
                "tie_output": False, "bias": True, "final_norm": True, "max_len": 0}  # fmt: skip
    strangers = sorted(set(config) - set(needed) - set(optional))
    if strangers:
        raise ValueError(f"unknown configuration keys {strangers}")
    absent = [key for key in needed if key not in config]
    if absent:
        raise ValueError(f"the configuration lacks {absent}")
    c = optional | dict(config)
    lowest = {"encoder_layers": 0, "max_len": 0}
    for key in (*needed, "encoder_layers", "max_len"):
        value = c[key]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{key} must be an integer, got {value!r}")
        if value < lowest.get(key, 1):
            raise ValueError(f"{key} must be at least {lowest.get(key, 1)}, got {value}")
    for key in ("shared_embeddings", "tie_output", "bias", "final_norm"):
        if not isinstance(c[key], (bool, np.bool_)):
            raise ValueError(f"{key} must be True or False, got {c[key]!r}")
    d, d_ff = int(c["d_model"]), int(c["d_ff"])
    if d % c["num_heads"]:
        raise ValueError(f"num_heads = {c['num_heads']} does not divide d_model = {d}")
    has_encoder = c["encoder_layers"] > 0
    source = c["src_vocab_size"]
    if has_encoder:
        if isinstance(source, (bool, np.bool_)) or not isinstance(source, (int, np.integer)):
            raise ValueError(f"an encoder needs an integer src_vocab_size, got {source!r}")
        if source < 1:
            raise ValueError(f"src_vocab_size must be at least 1, got {source}")
        if c["shared_embeddings"] and source != c["tgt_vocab_size"]:
            sizes = f"{source} and {c['tgt_vocab_size']}"
            raise ValueError(f"shared embeddings need one vocabulary size, got {sizes}")
    with_bias = int(bool(c["bias"]))
    norm = d * (1 + with_bias)
    attention = 4 * d * d + with_bias * 4 * d
    ffn = 2 * d * d_ff + with_bias * (d_ff + d)
    closing = norm if c["final_norm"] else 0
    encoder = c["encoder_layers"] * (attention + ffn + 2 * norm) + closing if has_encoder else 0
    block = 2 * attention + ffn + 3 * norm if has_encoder else attention + ffn + 2 * norm
    decoder = c["decoder_layers"] * block + closing
    target = int(c["tgt_vocab_size"]) * d
    tables = target
    if has_encoder and not c["shared_embeddings"]:
        tables += int(source) * d
    tables += int(c["max_len"]) * d * (2 if has_encoder else 1)
    output = 0 if c["tie_output"] else target
    parts = {"embeddings": tables, "encoder": encoder, "decoder": decoder, "output": output}
    return {key: int(value) for key, value in parts.items()} | {"total": int(sum(parts.values()))}
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# The paper's base model (6 + 6 layers, $d = 512$, $d_\text{ff} = 2048$, one shared
# vocabulary of 37,000 tokens whose table is also the output layer), a small GPT-style model
# without biases and with learned positions, and a tiny encoder–decoder with two vocabularies;
# the expected counts were taken from PyTorch modules built with these options.


# %% nbgrader={"grade": true, "grade_id": "test_count_parameters_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(count_parameters)

# %% nbgrader={"grade": true, "grade_id": "test_count_parameters_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): count_parameters against PyTorch modules built with each
# configuration (torch.nn.TransformerEncoderLayer and DecoderLayer, nn.LayerNorm,
# nn.Embedding, nn.Linear, tied and shared weights counted once) for the big model, GPT-2
# small, untied and unshared tables, no biases with an encoder, one layer, d_ff != 4 d_model,
# no final norms, learned positions; the config must come back unmodified; ValueError for
# each bad configuration listed above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a6_transformer import check_count_parameters

check_count_parameters(count_parameters)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): where the parameters are
#
# The share of the embeddings in a few well-known configurations. The count of GPT-2 small
# is the 124,439,808 of its released weights (its paper says 117M).

# %%
base_x = {
    "d_model": 512,
    "num_heads": 8,
    "d_ff": 2048,
    "encoder_layers": 6,
    "decoder_layers": 6,
    "src_vocab_size": 37000,
    "tgt_vocab_size": 37000,
    "shared_embeddings": True,
    "tie_output": True,
}
known_x = {
    "Transformer base": base_x,
    "Transformer big": base_x | {"d_model": 1024, "num_heads": 16, "d_ff": 4096},
    "GPT-2 small": {
        "d_model": 768,
        "num_heads": 12,
        "d_ff": 3072,
        "decoder_layers": 12,
        "tgt_vocab_size": 50257,
        "tie_output": True,
        "max_len": 1024,
    },
}
try:
    for name_x, config_x in known_x.items():
        counts_x = count_parameters(config_x)
        share_x = counts_x["embeddings"] / counts_x["total"]
        print(f"{name_x:17s} {counts_x['total']:>12,} parameters, {share_x:.0%} in embeddings")
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# ## Part E: what RMSNorm keeps and what it drops (2 points, graded by hand)
#
# In 4 to 8 sentences, with the numbers of the cell below (run it once Part A works).
#
# 1. From your backward formula, work out the dot product $x \cdot \partial L/\partial x$ of
#    one row in terms of $\varepsilon$, $r$ and $x \cdot (\gamma \odot g^y)$. What does it say
#    about the direction of the gradient, and about what a small step
#    $x \leftarrow x - \eta\, \partial L/\partial x$ does to $\lVert x \rVert$? For which rows
#    does it stop holding (the cell's first table has two)? Which two identities of the same
#    kind hold for LayerNorm (its row in the table)?
# 2. Add the same number $c$ to every entry of a row $x$ with mean $\mu$ and standard
#    deviation $\sigma$. Predict the limit of $\operatorname{RMSNorm}(x + c\mathbf{1})$ (with
#    $\gamma = 1$) as $c \to \infty$, and the standard deviation over the row of the output as
#    a function of $c$, $\mu$ and $\sigma$; compare with the cell's second table, where
#    LayerNorm's output does not move at all. What must a model built on RMSNorm do about a
#    component that all the features of a row share, and what does it get for dropping the
#    mean?

# %%
try:
    rng_e = np.random.default_rng(6)
    width_e = 64
    gamma_e, g_e = 1.0 + 0.3 * rng_e.normal(size=width_e), rng_e.normal(size=width_e)
    print("the gradient against the row: x . dL/dx, and that dot product over |x| |dL/dx|")
    for size_e in (1.0, 1e-3):
        x_e = size_e * rng_e.normal(size=width_e)
        r_e = rms_norm(x_e, gamma_e)[1]
        grad_e = rms_norm_backward(g_e, x_e, gamma_e, r_e)[0]
        dot_e = x_e @ grad_e
        cosine_e = dot_e / (np.linalg.norm(x_e) * np.linalg.norm(grad_e))
        print(
            f"  RMSNorm, row of size {size_e:g}: {dot_e: .3e}, cosine {cosine_e: .1e}, "
            f"eps r^3 x.(gamma g) = {1e-6 * r_e**3 * (x_e @ (gamma_e * g_e)): .3e}"
        )
    x_e = rng_e.normal(size=width_e)
    x_t = torch.tensor(x_e, requires_grad=True)
    torch.nn.functional.layer_norm(x_t, (width_e,), torch.tensor(gamma_e), eps=1e-6).backward(
        torch.tensor(g_e)
    )
    ln_grad_e = x_t.grad.numpy()
    centred_e = x_e - x_e.mean()
    print(
        f"  LayerNorm (autograd): sum of dL/dx {ln_grad_e.sum(): .1e}, "
        f"(x - mu) . dL/dx {centred_e @ ln_grad_e: .1e}"
    )
    x_e = 0.5 + 2.0 * rng_e.normal(size=width_e)
    mu_e, sigma_e = x_e.mean(), x_e.std()
    print(f"a row with mu = {mu_e:.2f}, sigma = {sigma_e:.2f}, shifted by c (gamma = 1):")
    print("       c   mean of y   std of y   cos(y, y at c = 0)   std of LayerNorm's y")
    for c_e in (0.0, 1.0, 3.0, 10.0, 100.0, 1e4):
        y_e = rms_norm(x_e + c_e, np.ones(width_e))[0]
        y0_e = rms_norm(x_e, np.ones(width_e))[0]
        ln_e = layer_norm(x_e + c_e, np.ones(width_e), np.zeros(width_e), 1e-6)
        cos_e = y_e @ y0_e / (np.linalg.norm(y_e) * np.linalg.norm(y0_e))
        print(
            f"  {c_e:6g}   {y_e.mean():9.4f}   {y_e.std():8.4f}   {cos_e:18.4f}   {ln_e.std():8.4f}"
        )
except NotImplementedError:
    print("Implement Part A first, then run this cell again.")

# %% [markdown] nbgrader={"grade": true, "grade_id": "rms_norm_gradient_and_shift", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** 1. With $g = \gamma \odot g^y$ and $\hat x = x r$, the backward pass is
# $\partial L/\partial x = r\,\big(g - \hat x\, \tfrac{1}{D}\sum_k g_k \hat x_k\big)$, so
# $x \cdot \partial L/\partial x = r\,(x \cdot g)\,\big(1 - r^2\, \tfrac{1}{D}\lVert x
# \rVert^2\big) = \varepsilon\, r^3\, (x \cdot g)$, since $r^{-2} = \tfrac{1}{D}\lVert x
# \rVert^2 + \varepsilon$: the unprojected $r\,(x \cdot g)$ times
# $\varepsilon/(\overline{x^2} + \varepsilon)$, about $10^{-6}$ for a row of size 1 (the cell:
# a cosine of about $10^{-7}$ between $x$ and its gradient). The gradient is orthogonal to
# $x$, because RMSNorm's output does not change when the row is scaled ($a x$, $a > 0$), so
# the loss has no slope along $x$. A step then changes $\lVert x \rVert^2$ only at second
# order, $\lVert x - \eta G \rVert^2 = \lVert x \rVert^2 + \eta^2 \lVert G \rVert^2$: to first
# order it only turns the row, at second order it lengthens it; and since the gradient
# carries a factor $r$, larger rows get smaller gradients. This stops holding for rows whose
# mean square is near $\varepsilon$ (the row of size $10^{-3}$: a cosine of about 0.06,
# because $\varepsilon$ is then a real part of the denominator). LayerNorm is RMSNorm applied to $x - \mu$, so its
# gradient is the projection of that one onto the rows of zero sum: $\sum_j \partial
# L/\partial x_j = 0$ exactly (shift invariance) and $(x - \mu)\cdot \partial L/\partial x =
# \varepsilon r^3 ((x - \mu) \cdot g)$ (the cell: about $10^{-15}$, rounding, and a few
# $10^{-6}$).
# 2. $\overline{(x + c)^2} = \sigma^2 + (\mu + c)^2$, so $\operatorname{RMSNorm}(x + c) =
# (x + c)/\sqrt{\sigma^2 + (\mu + c)^2 + \varepsilon} \to \operatorname{sign}(c)\,\mathbf{1}$:
# every row tends to the same constant vector, and the part that depends on $x$, the standard
# deviation over the row, is $\sigma/\sqrt{\sigma^2 + (\mu + c)^2 + \varepsilon} \approx
# \sigma/|c|$ (the cell: 0.02 at $c = 100$ for $\sigma = 2$; the cosine with the unshifted
# output falls to 0.10, the mean of that output; LayerNorm's standard deviation stays 1). The
# output of RMSNorm has a fixed mean square, so a large component shared by all features
# takes that budget from everything else: a model built on RMSNorm must keep the mean of its
# residual stream small itself (or use it, since RMSNorm passes the mean on as a feature where
# LayerNorm discards it). In return it computes one statistic per row instead of two (one
# reduction over the row instead of two, no $\beta$, a shorter backward pass, one number kept
# per row), which Zhang and Sennrich (2019) found to train as well as LayerNorm.
#
# *Grading notes: 1 point for $x \cdot \partial L/\partial x = \varepsilon r^3 (x \cdot g)$
# (or an equivalent form), the conclusion that the gradient is orthogonal to $x$ except for
# rows near $\sqrt{\varepsilon}$ in size, and one LayerNorm identity; 1 point for the limit
# $\operatorname{sign}(c)\,\mathbf{1}$ with the shrinking $\sigma/\sqrt{\sigma^2 + (\mu + c)^2
# + \varepsilon}$, checked against the cell, and the cost (the model must control the mean)
# against the gain (one statistic, no shift).*
