# ---
# jupyter:
#   course:
#     budget_seconds: 60
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lecture 1: Recurrent networks and backpropagation through time
#
# A recurrent neural network (RNN) reads a sequence one element at a time and keeps a
# running summary of what it has read so far, its *hidden state*. The same weights are
# used at every step, so one small set of parameters handles sequences of any length.
#
# This lecture builds an RNN from its equations and trains it, in six steps:
#
# 1. the RNN cell and its loss, written by hand and checked against `torch.nn.RNN`;
# 2. backpropagation through time (BPTT), written by hand and checked against autograd;
# 3. truncated BPTT, and why it is not the same thing as an n-gram window;
# 4. vanishing and exploding gradients, measured, and gradient clipping;
# 5. a widget to explore how gradients fade or blow up;
# 6. a character-level RNN language model trained on Python's own source code.
#
# Everything runs on a CPU in well under a minute, with fixed seeds.

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.nn import functional as F

from course.analysis.gradients import gradient_norms_by_distance
from course.analysis.lm import bits_per_char, ngram_bits_per_char, sample
from course.data.chars import CharVocab
from course.data.code import load_python_source
from course.metrics import record
from course.models.recurrent import CharRNN, rescale_spectral_radius_, spectral_radius
from course.train import train_language_model
from course.viz.diagrams import rnn_unrolled_diagram
from course.viz.gradients import (
    interact_gradient_norms,
    plot_bptt_terms,
    plot_gradient_norms,
    plot_jacobian_norms,
    plot_truncation,
)
from course.viz.training import plot_bits_per_char, plot_training_histories

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread is as fast, and robust on a busy 2-core CPU
torch.set_printoptions(precision=4, sci_mode=False)
LECTURE_START = time.perf_counter()

# %% [markdown]
# ## 1. The RNN cell
#
# At step $t$ the network receives an input vector $x_t$ of size $D$ and the previous hidden
# state $h_{t-1}$ of size $H$. It mixes them into a new state, computes $K$ scores (the
# *logits* $o_t$) from that state, and turns them into probabilities $p_t$:
#
# $$h_t = \tanh\left(W h_{t-1} + U x_t + b\right), \qquad
#   o_t = V h_t + c, \qquad p_t = \operatorname{softmax}(o_t).$$ (eq-rnn-cell)
#
# $W \in \mathbb{R}^{H\times H}$ is the recurrent matrix, $U \in \mathbb{R}^{H\times D}$
# the input matrix and $V \in \mathbb{R}^{K\times H}$ the output (readout) matrix. They do
# not depend on $t$. Here the inputs are characters: $x_t$ is the one-hot code of a
# character, so $D = K = |\mathcal{V}|$, the size of the vocabulary $\mathcal{V}$. (The
# course's notation is collected on its notation page.) *Unrolling* the loop over $T$ steps gives an ordinary, if deep,
# feed-forward network in which every layer shares the same weights.

# %% mystnb={"image": {"alt": "Diagram of an RNN unrolled over four steps: inputs x_1 to x_4 at the bottom feed hidden states h_1 to h_4 through U, each state feeds the next through W starting from h_0, and each h_t feeds a prediction p_t through V, with a loss L_t above it. Red dashed arrows run the other way: down from each p_t to h_t, labelled V-transpose delta-o_t, and back from h_(t+1) to h_t, labelled W-transpose delta-a_(t+1)."}}
rnn_unrolled_diagram()
plt.show()

# %% [markdown]
# For language modelling the target $y_t$ is the next character, as a one-hot vector.
# The loss of the whole sequence is the cross-entropy summed over the steps:
#
# $$L = \sum_{t=1}^{T} \mathrm{CE}(y_t, p_t)
#     = -\sum_{t=1}^{T} \sum_{w=1}^{K} y_{t,w} \log p_{t,w}
#     = -\sum_{t=1}^{T} \log p_{t,\,\text{target}_t}.$$ (eq-rnn-loss)
#
# We write the cell in float64 on a toy text, so that later comparisons are exact to many
# digits. The loop in `rnn_forward` below walks the black arrows of the diagram from left to
# right, one column per step.

# %%
toy_text = "to be or not to be"
toy_vocab = sorted(set(toy_text))
K, H = len(toy_vocab), 4
toy_ids = torch.tensor([toy_vocab.index(ch) for ch in toy_text])
inputs, targets = toy_ids[:-1], toy_ids[1:]  # predict each next character
T = len(inputs)
xs = F.one_hot(inputs, K).double()  # (T, K)

g = torch.Generator().manual_seed(0)


def parameter(*shape: int) -> torch.Tensor:
    return (0.5 * torch.randn(*shape, generator=g, dtype=torch.float64)).requires_grad_()


params = {"W": parameter(H, H), "U": parameter(H, K), "b": parameter(H)}
params |= {"V": parameter(K, H), "c": parameter(K), "h0": parameter(H)}
print(f"K = {K} characters {toy_vocab}, H = {H}, T = {T}")


def rnn_forward(xs, targets, W, U, b, V, c, h0):
    """xs: (T, K) one-hot inputs, targets: (T,) ids. Returns hs (T+1, H), probs (T, K), loss."""
    hs, probs, loss = [h0], [], 0.0
    for t in range(1, len(xs) + 1):  # math time t = 1..T; xs[t-1] is x_t
        h = torch.tanh(W @ hs[t - 1] + U @ xs[t - 1] + b)  # (H,)
        p = torch.softmax(V @ h + c, dim=0)  # (K,)  p_t = softmax(o_t)
        loss = loss - torch.log(p[targets[t - 1]])  # CE with a one-hot target
        hs.append(h)
        probs.append(p)
    return torch.stack(hs), torch.stack(probs), loss  # hs[0] is h_0


hs, probs, loss = rnn_forward(xs, targets, **params)
print(f"hidden states {tuple(hs.shape)}, predictions {tuple(probs.shape)}, loss {loss.item():.4f}")
print(f"a uniform guess would give T log K = {T * math.log(K):.4f}")

# %% [markdown]
# PyTorch's `nn.RNN` implements the same recurrence. It splits the bias in two
# (`bias_ih + bias_hh`), so we copy $b$ into one and zero the other; $W$ is `weight_hh`
# and $U$ is `weight_ih`. The readout $V h_t + c$ is not part of `nn.RNN`.

# %%
rnn = torch.nn.RNN(K, H, nonlinearity="tanh", dtype=torch.float64)
with torch.no_grad():
    rnn.weight_hh_l0.copy_(params["W"])
    rnn.weight_ih_l0.copy_(params["U"])
    rnn.bias_ih_l0.copy_(params["b"])
    rnn.bias_hh_l0.zero_()
    torch_hs, torch_h_last = rnn(xs, params["h0"][None])  # (T, H), (1, H)
difference = (torch_hs - hs[1:]).abs().max().item()
print(f"max |h_t(ours) - h_t(nn.RNN)| over all t and units: {difference:.2e}")
assert difference < 1e-12

# %% [markdown]
# ## 2. Backpropagation through time, by hand
#
# Because the weights are shared, the gradient of $L$ with respect to $W$ is a sum over
# all the places where $W$ is used. Write $a_t = W h_{t-1} + U x_t + b$ for the
# pre-activation; $o_t = V h_t + c$ are the logits. Softmax and cross-entropy
# together have the simple gradient
#
# $$\delta^o_t := \frac{\partial L}{\partial o_t} = p_t - y_t .$$
#
# The hidden state $h_t$ influences the loss in two ways: directly through its own
# prediction $p_t$, and indirectly through $h_{t+1}$, which it helps to compute.
# The chain rule adds the two, which gives a recursion that runs *backwards* in time:
#
# $$\frac{\partial L}{\partial h_t}
#   = \underbrace{V^\top \delta^o_t}_{\text{local: loss at step } t}
#   + \underbrace{W^\top \delta^a_{t+1}}_{\text{carried back from } t+1},
#   \qquad
#   \delta^a_t := \frac{\partial L}{\partial a_t}
#   = \frac{\partial L}{\partial h_t} \odot \left(1 - h_t^{2}\right),$$ (eq-bptt-recursion)
#
# starting from $\delta^a_{T+1} = 0$ (nothing comes after the last step). The two terms are
# the red dashed arrows of the diagram in section 1: `local` below is the one that comes down
# from $p_t$, and `carried` the one that comes back from $h_{t+1}$. Each weight's gradient then
# sums one term per step:
#
# $$\frac{\partial L}{\partial V} = \sum_t \delta^o_t h_t^\top, \quad
#   \frac{\partial L}{\partial c} = \sum_t \delta^o_t, \quad
#   \frac{\partial L}{\partial W} = \sum_t \delta^a_t h_{t-1}^\top, \quad
#   \frac{\partial L}{\partial U} = \sum_t \delta^a_t x_t^\top, \quad
#   \frac{\partial L}{\partial b} = \sum_t \delta^a_t, \quad
#   \frac{\partial L}{\partial h_0} = W^\top \delta^a_1 .$$ (eq-bptt-weights)


# %%
@torch.no_grad()
def bptt_gradients(xs, targets, hs, probs, W, V):
    """The backward pass of rnn_forward, without autograd. Returns (grads, parts).

    grads: dL/dW, dL/dU, dL/db, dL/dV, dL/dc, dL/dh0. parts: for each t, the norms of the
    local and the carried terms of dL/dh_t.
    """
    T, K = xs.shape
    H = W.shape[0]
    zeros = lambda *shape: torch.zeros(*shape, dtype=torch.float64)
    grads = {"W": zeros(H, H), "U": zeros(H, K), "b": zeros(H), "V": zeros(K, H), "c": zeros(K)}
    carried = torch.zeros(H, dtype=torch.float64)  # W^T delta^a_{T+1} = 0
    parts = []
    for t in range(T, 0, -1):  # t = T, T-1, ..., 1
        h_t, h_prev, x_t = hs[t], hs[t - 1], xs[t - 1]
        d_o = probs[t - 1] - F.one_hot(targets[t - 1], K)  # (K,)  p_t - y_t
        grads["V"] += torch.outer(d_o, h_t)  # (K, H)
        grads["c"] += d_o
        local = V.T @ d_o  # (H,)
        d_h = local + carried  # (H,)  dL/dh_t
        d_a = d_h * (1 - h_t**2)  # (H,)  dL/da_t, through tanh
        grads["W"] += torch.outer(d_a, h_prev)  # (H, H)
        grads["U"] += torch.outer(d_a, x_t)  # (H, K)
        grads["b"] += d_a
        carried = W.T @ d_a  # (H,)  the part of dL/dh_{t-1} that comes from step t
        parts.append((t, local.norm().item(), (d_h - local).norm().item()))
    grads["h0"] = carried  # dL/dh_0 = W^T delta^a_1
    return grads, parts[::-1]


hand, parts = bptt_gradients(xs, targets, hs.detach(), probs.detach(), params["W"], params["V"])

for p in params.values():
    p.grad = None
loss.backward()  # autograd on the same graph
# The text above derives these gradients by hand: autograd must agree with every one.
print(f"{'gradient':>10}  {'shape':>8}  max |hand - autograd|")
for name, p in params.items():
    gap = (hand[name] - p.grad).abs().max().item()
    print(f"{'dL/d' + name:>10}  {str(tuple(p.shape)):>8}  {gap:.2e}")
    assert gap < 1e-6, f"dL/d{name} differs from autograd by {gap:.2e}"

# %% [markdown]
# The hand-written pass agrees with autograd to rounding error. The recursion also shows
# where the gradient of an early state comes from: mostly from the future, carried back
# one step at a time.

# %% mystnb={"image": {"alt": "Grouped bar chart of the two terms of the gradient of the loss with respect to the hidden state h_t, at each step t of a short sequence: the norm of the local term V-transpose times delta-o_t beside the norm of the term carried back from step t + 1, W-transpose times delta-a_(t+1)."}}
plot_bptt_terms(parts)
plt.show()

# %% [markdown]
# ## 3. Truncated BPTT
#
# Full BPTT on a long text (a book, or a whole source file) would keep every hidden
# state of the text in memory and make one update per pass. Instead we cut the stream
# into chunks of $k$ steps and update the weights after each chunk. The hidden state is
# *carried* from one chunk into the next, but *detached* from the graph:
#
# $$h_{\text{start of chunk}} \leftarrow \operatorname{stopgrad}\left(h_{\text{end of previous chunk}}\right).$$
#
# The forward computation is unchanged; only the backward recursion {eq}`eq-bptt-recursion`
# of Section 2 is stopped at the chunk border, so the "carried" term there is set to zero.

# %%
text = load_python_source(max_chars=400_000, split="train")
vocab = CharVocab.from_text(text)
ids = vocab.encode(text)  # (N,)


def truncated_bptt(model, ids, chunk, optimizer=None):
    """Read ids (N,) in chunks of `chunk` steps, carrying the hidden state across chunks.

    With an optimizer, update after every chunk (TBPTT training). Without one, accumulate
    the gradients of all chunks in .grad (to compare with full BPTT). Returns chunk losses.
    """
    model.zero_grad()
    losses, h = [], None
    for start in range(0, len(ids) - 1, chunk):
        y = ids[start + 1 : start + chunk + 1]  # (k,) next characters
        x = ids[start : start + len(y)]  # (k,)
        logits, h = model(x[None], h)  # (1, k, K), (1, 1, H)
        loss = F.cross_entropy(logits[0], y, reduction="sum")
        loss.backward()
        h = h.detach()  # keep the value, cut the graph: the truncation
        losses.append(loss.item() / len(y))
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad()
    return losses


torch.manual_seed(0)
small = CharRNN(len(vocab), 64)
chunk_losses = truncated_bptt(
    small, ids[:20_000], 32, torch.optim.Adam(small.parameters(), lr=3e-3)
)
print(
    f"{len(chunk_losses)} updates of 32 steps; loss {np.mean(chunk_losses[:20]):.2f} -> "
    f"{np.mean(chunk_losses[-20:]):.2f} nats/char (first vs last 20 chunks)"
)

# %% [markdown]
# How much of the true gradient survives the cut? We take one stretch of 256 characters and
# compute the full BPTT gradient $g$ of its summed loss with respect to $W$ (one chunk of 256
# steps), then the truncated one $g_k$ for chunk lengths $k = 1, 2, 4, \dots, 256$ (same
# weights, no update), and report the relative error $\lVert g_k - g\rVert / \lVert g\rVert$.


# %%
def truncation_errors(model, stretch, chunks):
    """||g_k - g|| / ||g|| for dL/dW of the stretch, one per chunk length k in `chunks`."""
    truncated_bptt(model, stretch, chunk=len(stretch) - 1)  # one chunk: full BPTT
    full = model.rnn.weight_hh_l0.grad.clone()
    errors = []
    for k in chunks:
        truncated_bptt(model, stretch, chunk=k)
        errors.append(((model.rnn.weight_hh_l0.grad - full).norm() / full.norm()).item())
    return errors


stretch = ids[50_000:50_257]  # 256 predictions
CHUNKS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
trained_rho = spectral_radius(small.rnn.weight_hh_l0)
errors = {f"trained W, ρ = {trained_rho:.2f}": truncation_errors(small, stretch, CHUNKS)}

# %% [markdown]
# We repeat this on copies of the model whose $W$ is rescaled to other spectral radii $\rho$
# (Section 4 explains why $\rho$ matters).

# %%
for rho in (0.5, 2.0):
    model = CharRNN(len(vocab), 64)
    model.load_state_dict(small.state_dict())
    rescale_spectral_radius_(model.rnn.weight_hh_l0, rho)
    errors[f"W rescaled to ρ = {rho:g}"] = truncation_errors(model, stretch, CHUNKS)

print(f"{'chunk length k':>24}" + "".join(f"{k:>7}" for k in CHUNKS))
for label, values in errors.items():
    print(f"{label:>24}" + "".join(f"{e:7.3f}" for e in values))

# %% [markdown]
# Truncation changes only the backward pass. To see what the forward pass does with the
# past, we replace the first character of the stretch by `~` and measure how much the logits
# $o_t$ change at every later step (in float64, so that tiny differences are not lost in
# float32 rounding).

# %%
other = stretch.clone()
other[0] = vocab.encode("~")[0]
small64 = CharRNN(len(vocab), 64).double()
small64.load_state_dict(small.state_dict())
with torch.no_grad():
    logits_a, _ = small64(stretch[None])  # (1, N, K)
    logits_b, _ = small64(other[None])  # (1, N, K)
influence = (logits_a - logits_b)[0].norm(dim=1)  # (N,)
print(f"character 1 changed from {vocab.decode(stretch[:1])!r} to '~'")

# %% mystnb={"image": {"alt": "Two panels on truncated backpropagation through time. Left: relative error of the truncated gradient of the loss with respect to W against the chunk length k, from 1 to 256 on a log scale, one line for the trained model's W and one each for W rescaled to spectral radius 0.5 and 2. Right: how much the logits change at each later step t when the first character of the stretch is replaced, on a log scale, with grey vertical lines at the 32-step chunk borders."}}
plot_truncation(errors, CHUNKS, influence, chunk=32)
plt.show()
trained_w, rho_half, rho_two = errors.values()  # relative errors, one per chunk length
small_from = min(k for i, k in enumerate(CHUNKS) if max(rho_half[i:]) < 0.1)
print(f"with ρ = 0.5 the error stays below 0.1 from k = {small_from} on")
# The observations below rely on these: keep them true.
assert max(trained_w[-1], rho_half[-1], rho_two[-1]) < 1e-6, "k = 256 should be full BPTT"
assert all(a < b for a, b in zip(rho_half[:-1], trained_w[:-1], strict=True)), (
    "the text says the error at rho = 0.5 is below the trained W's at every k < 256"
)
assert rho_half[0] > 0.3 and rho_half[1] > 0.2, "the text says chunks of 1 or 2 steps miss much"
assert min(rho_two[:-1]) > 0.9, "the text says the rho = 2 gradient points somewhere else"

# %% [markdown]
# Three observations:
#
# * At $k = 256$ the truncated gradient is the full one (error 0). Short chunks lose the
#   long-range terms. With $\rho = 0.5$ those terms are smaller, and the error is below the
#   trained model's at every $k$ below 256; but chunks of one or two steps still miss a
#   large part of the gradient (the first two columns of the table), and the error stays
#   below 0.1 only from the $k$ printed under the figure on. With $\rho = 2$ the full
#   gradient is dominated by terms that travel far back, and the truncated gradient points
#   somewhere else entirely (an error near 1 at every $k$ below 256): truncation hides an
#   explosion rather than fixing it.
# * Truncation is **not** an n-gram model with a window of $k$ characters. An n-gram
#   model forgets everything before its window. The RNN's hidden state is carried across
#   chunk borders, so its predictions keep depending on character 1 long after the first
#   border (right panel: the forward pass is the same with or without truncation, and the
#   change made at $t = 1$ crosses every border). What truncation removes is the
#   *learning signal* about dependencies longer than $k$: the weights are never told how a
#   character at the start of one chunk should have been stored to help a prediction in
#   the next chunk.
# * The influence does fade: in this small trained model it decays roughly exponentially
#   with distance, which brings us to vanishing gradients.

# %% [markdown]
# ## 4. Vanishing and exploding gradients, measured
#
# Unroll the recursion {eq}`eq-bptt-recursion` for a loss $L_T$ at the last step only. Since
# $\partial h_j / \partial h_{j-1} = \operatorname{diag}(1 - h_j^2)\, W$,
#
# $$\frac{\partial L_T}{\partial h_t}
#   = \frac{\partial L_T}{\partial h_T}\, \frac{\partial h_T}{\partial h_t},
#   \qquad
#   \frac{\partial h_T}{\partial h_t} = \prod_{j=t+1}^{T} \operatorname{diag}(1 - h_j^{2})\, W .$$ (eq-jacobian-product)
#
# The gradient that reaches $k = T - t$ steps back has been multiplied by $k$ Jacobians
# in {eq}`eq-jacobian-product`.
# For a linear RNN (no $\tanh$) this is $W^k$, which behaves like $\rho^k$, where $\rho$ is
# the spectral radius of $W$ (its largest eigenvalue in modulus): it shrinks
# exponentially when $\rho < 1$ and grows exponentially when $\rho > 1$
# {cite:p}`hochreiter1997lstm,pascanu2013difficulty`. The $\tanh$ derivative
# $1 - h_j^2$ lies between 0 and 1, so no factor $\operatorname{diag}(1 - h_j^2)\, W$
# stretches a vector more than $W$ can: a product of $k$ of them is at most
# $\lVert W\rVert_2^k$ in norm, where $\lVert W\rVert_2$ is the largest singular value of
# $W$. That is a bound by $\lVert W\rVert_2^k$, not by $\rho^k$; the two agree only when
# $\lVert W\rVert_2 = \rho$, as in the first figure below.
#
# `course.analysis.gradients.gradient_norms_by_distance` measures $\lVert\partial L_T/\partial h_t\rVert$
# with autograd on a random RNN whose $W = \rho\, Q$ for a random orthogonal $Q$, so that
# $\lVert W\rVert_2 = \rho$. For the identity nonlinearity the curves are exactly $\rho^k$;
# with $\tanh$ they stay at or below $\rho^k$, saturation pulls them down, and over the 60
# steps they grow only when $\rho$ is well above 1 (the cell checks all three).

# %% mystnb={"image": {"alt": "Two panels of the norm of the gradient reaching h_t, on a log scale, against the distance k = T - t in steps back from the loss, for an RNN of 32 units over 60 steps: left a linear (identity) RNN, right a tanh RNN. Each panel has thin lines for spectral radius rho = 0.5, 0.9, 1.1, 1.5 and 2, a thick red line for rho = 1 and a dashed red reference line 1^k."}}
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
plot_gradient_norms(1.0, seq_len=60, nonlinearity="identity", ax=axes[0])
plot_gradient_norms(1.0, seq_len=60, nonlinearity="tanh", ax=axes[1])
fig.tight_layout()
plt.show()
# The text above describes these curves: keep it true.
distance = np.arange(60)
for rho in (0.5, 0.9, 1.0, 1.1, 1.5, 2.0):
    linear = gradient_norms_by_distance(rho, 60, "identity")
    saturating = gradient_norms_by_distance(rho, 60, "tanh")
    assert np.allclose(linear, rho**distance, rtol=1e-9), f"identity at rho = {rho}: not rho^k"
    assert np.all(saturating <= rho**distance * (1 + 1e-9)), f"tanh at rho = {rho}: above rho^k"
    grows = saturating[-1] > 1
    assert grows == (rho >= 1.5), f"tanh at rho = {rho}: the text says it grows iff rho >= 1.5"

# %% [markdown]
# A generic $W$ is not $\rho$ times an orthogonal matrix: its largest *singular value*
# $\lVert W\rVert_2$ is bigger than $\rho$, so a product of a few factors can grow even when
# $\rho < 1$. Over many factors, though, the growth rate per factor tends to $\rho$
# ($\lVert W^k\rVert^{1/k} \to \rho$). Below, $W$ is Gaussian, rescaled to $\rho$, and we
# plot the largest singular value of the product of $k$ Jacobians of a $\tanh$ RNN (run
# on random inputs) next to $\lVert W^k\rVert_2$ and $\rho^k$.


# %% mystnb={"image": {"alt": "Two panels, for a random Gaussian W of 32 units rescaled to spectral radius rho = 0.9 (left) and rho = 1.5 (right): against the number of factors k from 1 to 60, on a log scale, the largest singular value of W^k (linear RNN), that of the product of diag(1 - h_j^2) W (tanh RNN), and the dashed reference line rho^k."}}
def jacobian_product_norms(rho, n_factors=60, hidden=32, seed=0):
    """Largest singular values of W^k and of prod_j diag(1 - h_j^2) W, for k = 1..n_factors."""
    gen = torch.Generator().manual_seed(seed)
    W = torch.randn(hidden, hidden, generator=gen, dtype=torch.float64) / hidden**0.5
    rescale_spectral_radius_(W, rho)
    U = 0.3 * torch.randn(hidden, 4, generator=gen, dtype=torch.float64) / 4**0.5
    h = torch.zeros(hidden, dtype=torch.float64)
    linear = torch.eye(hidden, dtype=torch.float64)
    product = torch.eye(hidden, dtype=torch.float64)
    linear_norms, product_norms = [], []
    for _ in range(n_factors):
        h = torch.tanh(W @ h + U @ torch.randn(4, generator=gen, dtype=torch.float64))  # (H,)
        linear = W @ linear  # W^k
        product = torch.diag(1 - h**2) @ W @ product  # dh_k/dh_0
        linear_norms.append(torch.linalg.matrix_norm(linear, ord=2).item())
        product_norms.append(torch.linalg.matrix_norm(product, ord=2).item())
    return np.array(linear_norms), np.array(product_norms)


fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
above_rho_k = {}
for ax, rho in zip(axes, (0.9, 1.5), strict=True):
    linear_norms, product_norms = jacobian_product_norms(rho)
    plot_jacobian_norms(rho, linear_norms, product_norms, ax=ax)
    k = np.arange(1, len(product_norms) + 1)
    above_rho_k[rho] = int(np.cumprod(product_norms > rho**k).sum())  # leading run of k
    print(
        f"ρ = {rho:g}: ||W||_2 = {linear_norms[0]:.2f}; the tanh product lies above ρ^k for "
        f"k = 1 to {above_rho_k[rho]}, and below ||W^k||_2 at "
        f"{np.sum(product_norms < linear_norms)} of {len(k)} values of k"
    )
    # The text below relies on these: keep them true.
    assert np.all(product_norms <= linear_norms[0] ** k * (1 + 1e-9)), "above ||W||_2^k"
    assert np.all(product_norms < linear_norms), f"ρ = {rho}: tanh product above ||W^k||_2"
    assert linear_norms.max() > 1, f"ρ = {rho}: the text says a few factors can grow"
    assert product_norms[-1] < 0.1 * min(rho ** len(k), linear_norms[-1]), "no saturation"
fig.tight_layout()
plt.show()
assert min(above_rho_k.values()) >= 3, "the text says the tanh product starts above ρ^k"

# %% [markdown]
# Here $\lVert W\rVert_2 > \rho$ (printed above), and both curves start above $\rho^k$: the
# tanh product stays above it for the first few factors (how many is printed above), even
# though every $\tanh$ derivative is at most 1. Only the bound $\lVert W\rVert_2^k$ follows
# from that, and it holds at every $k$ (the cell checks it). Here the tanh product also
# stays below $\lVert W^k\rVert_2$ at every $k$, but that is a finding about these weights
# and inputs, not a rule: the diagonal factors between the copies of $W$ change the
# directions the product acts on, so in general it need not be smaller than $W^k$. Over many
# factors, saturation wins and the tanh product falls far below both.

# %% [markdown]
# **Exploding gradients in training, and clipping.** When the gradient norm explodes, one
# SGD step can throw the weights far from where they were. The standard remedy
# {cite:p}`pascanu2013difficulty` is to rescale the whole gradient (all parameters together)
# whenever its norm exceeds a threshold $\tau$:
#
# $$g \leftarrow g \cdot \min\left(1, \frac{\tau}{\lVert g\rVert}\right).$$ (eq-clip)
#
# The direction is kept; only the step length is capped. We train the same small model
# twice from the same start, with $W$ initialised at $\rho = 2$ and plain SGD with a large
# learning rate, once without and once with clipping {eq}`eq-clip` at $\tau = 1$
# (`train_language_model(..., clip_norm=...)` does exactly this: it runs the course's one
# training loop, `course.train.fit`, which measures $\lVert g\rVert$ over all parameters
# together, records it, and rescales the gradient before each update).

# %% mystnb={"image": {"alt": "Two panels of two training runs of a character RNN of 64 units whose recurrent weights start at spectral radius 2, 300 steps of plain SGD each, one without gradient clipping and one clipping the gradient norm at tau = 1: left the training loss in nats per character against step, right the gradient norm before clipping, on a log scale, against step."}}
short_ids = ids[:200_000]
runs = {}
for label, clip in (("no clipping", None), ("clip at τ = 1", 1.0)):
    torch.manual_seed(0)
    model = CharRNN(len(vocab), 64)
    rescale_spectral_radius_(model.rnn.weight_hh_l0, 2.0)
    runs[label] = train_language_model(
        model,
        short_ids,
        steps=300,
        batch_size=16,
        seq_len=64,
        lr=1.0,
        clip_norm=clip,
        optimizer="sgd",
        seed=0,
        progress=False,
    )
    norms = np.array(runs[label].grad_norms)
    print(
        f"{label:>14}: gradient norm {norms[0]:.3g} at step 1, largest {norms.max():.3g} at "
        f"step {norms.argmax() + 1}, median {np.median(norms):.3g}; mean loss over the last "
        f"50 steps {np.mean(runs[label].losses[-50:]):.2f} nats/char"
    )
uniform = math.log(len(vocab))
print(f"a uniform guess costs ln K = {uniform:.2f} nats/char")
plot_training_histories(runs)
plt.show()
# The text below relies on these: keep them true.
free, clipped = runs["no clipping"], runs["clip at τ = 1"]
assert math.isclose(free.grad_norms[0], clipped.grad_norms[0], rel_tol=1e-6), (
    "both runs should meet the same gradient at step 1"
)
assert clipped.grad_norms[0] > 100 * np.median(clipped.grad_norms), (
    "the text says the first gradient is hundreds of times the clipped run's median"
)
assert max(free.losses[:20]) > 2 * uniform, "without clipping the loss should jump far above ln K"
assert np.mean(clipped.losses[-50:]) < uniform - 1, "with clipping the loss should end below ln K"
assert np.mean(free.losses[-50:]) > np.mean(clipped.losses[-50:]) + 1, (
    "the text says the run without clipping ends far above the clipped one"
)
_ = record(
    "01_rnn_bptt",
    "mean training loss over the last 50 steps, clipped at τ = 1",
    np.mean(clipped.losses[-50:]),
    unit="nats/char",
    baseline=np.mean(free.losses[-50:]),
    baseline_name="the same run without clipping",
    margin=1.6,  # the lead moves by 1.58 between processors (python -m tools.spread)
)

# %% [markdown]
# Both runs start from the same weights and read the same first batch, so both meet the same
# huge gradient at step 1: its norm, printed above for each run, is hundreds of times the
# clipped run's median norm. Without clipping, the step taken along that gradient wrecks the
# weights: within the first 20 steps the loss climbs to more than twice that of a uniform
# guess ($\ln K$, printed above), and over the last 50 steps it is still more than a nat
# above the clipped run's. With clipping, the same gradient moves the weights by a bounded
# amount, and training proceeds, to more than a nat below a uniform guess.
#
# The first gradient need not stay a run's largest: the step of each run's largest norm is
# printed above, and where such spikes fall changes from one processor to another (on some,
# the clipped run meets its largest late in training), because 300 steps of SGD at this
# learning rate carry rounding differences along. Clipping does not prevent them; it bounds
# the step that each one causes. Clipping does nothing against *vanishing* gradients: for
# those we need a different architecture (gated cells such as the LSTM
# {cite:p}`hochreiter1997lstm`, next lecture).

# %% [markdown]
# ## 5. Explore it yourself
#
# `plot_gradient_norms` is a plain function with defaults; here it is called once (the
# static version of this page shows this figure).

# %% mystnb={"image": {"alt": "Norm of the gradient reaching h_t, on a log scale, against the distance k = T - t in steps back from the loss, for a tanh RNN of 32 units over 50 steps, at the widget's default settings: a thick red line for spectral radius rho = 1, thin lines for rho = 0.5, 0.9, 1.1, 1.5 and 2, and a dashed red reference line 1^k."}}
plot_gradient_norms()
plt.show()

# %% [markdown]
# Run the next cell in JupyterLab to get sliders for the spectral radius $\rho$ and the
# length $T$ and a menu for the nonlinearity (tanh, relu, sigmoid, identity). Try: the
# identity at $\rho = 1$; tanh at $\rho = 1.5$ and $3$; sigmoid, whose derivative never
# exceeds $1/4$; relu, which switches off about half the units.

# %% tags=["remove-output"]
controls = interact_gradient_norms()

# %% [markdown]
# ## 6. A character-level RNN language model
#
# Finally, a real task: predict the next character of Python source code, as in
# {cite:t}`karpathy2015visualizing`, who trained character-level RNNs on Linux's C source
# among other texts. The corpus is
# the standard library that ships with Python (no download). Training text and held-out
# text come from *different* files.
#
# The quality measure is the held-out cross-entropy in **bits per character** (bpc):
# $-\frac{1}{N}\sum_i \log_2 p(c_{i+1} \mid c_1 \dots c_i)$. Two count-based baselines,
# fitted on the training text with add-one smoothing, set the bar: the **unigram** model
# (character frequencies, no context) and the **bigram** model (one character of context).

# %%
train_text = load_python_source(max_chars=1_000_000, split="train")
val_text = load_python_source(max_chars=100_000, split="val")
vocab = CharVocab.from_text(train_text)
train_ids, val_ids = vocab.encode(train_text), vocab.encode(val_text)
print(f"train {len(train_ids):,} chars, held-out {len(val_ids):,} chars, vocabulary {len(vocab)}")

unigram_bpc = ngram_bits_per_char(train_ids, val_ids, n=1, vocab_size=len(vocab))
bigram_bpc = ngram_bits_per_char(train_ids, val_ids, n=2, vocab_size=len(vocab))
print(f"unigram {unigram_bpc:.3f} bpc, bigram {bigram_bpc:.3f} bpc")

# %% [markdown]
# The model is `course.models.recurrent.CharRNN`: one-hot input, an `nn.RNN` with $H = 128$ tanh
# units, and a linear readout. Training uses random windows of `seq_len` characters, Adam and
# clipping at $\tau = 1$, for a fixed number of steps (the loop prints how long they took), so
# that the figure below does not depend on how fast the machine is; a wall-clock guard stops
# the loop early on a much slower one, and then says so. It still moves a little between
# processors: their arithmetic kernels round differently, and training carries the
# differences along.
# Evaluation reads the held-out text in order, carrying the hidden state along.

# %%
torch.manual_seed(0)
char_rnn = CharRNN(len(vocab), hidden_size=128)
print(f"{sum(p.numel() for p in char_rnn.parameters()):,} parameters")
history = train_language_model(
    char_rnn,
    train_ids,
    steps=1500,
    batch_size=32,
    seq_len=32,
    lr=5e-3,
    clip_norm=1.0,
    budget_seconds=60,  # a guard for slow machines, not the stopping rule
    seed=0,
)

# %% [markdown]
# The held-out score reads the 100,000 held-out characters once, in order. The measured
# figures are recorded for the course's benchmark table.

# %%
rnn_bpc = bits_per_char(char_rnn, val_ids)
record(
    "01_rnn_bptt",
    "char-RNN (H=128), held-out",
    rnn_bpc,
    unit="bits/char",
    baseline=unigram_bpc,
    baseline_name="unigram",
    margin=0.1,  # the spread of this figure between processors (python -m tools.spread)
)
record(
    "01_rnn_bptt",
    "bigram, held-out",
    bigram_bpc,
    unit="bits/char",
    baseline=unigram_bpc,
    baseline_name="unigram",
)
assert rnn_bpc < unigram_bpc, f"the RNN ({rnn_bpc:.2f} bpc) should beat unigram ({unigram_bpc:.2f})"

# %% mystnb={"image": {"alt": "Learning curve of the character-level RNN language model: bits per character on its training batches, a running mean over 25 batches, against training step, with a dash-dotted line at its held-out bits per character and grey lines at the held-out bits per character of the unigram and bigram baselines."}}
plot_bits_per_char(
    {"char-RNN": history}, {"char-RNN": rnn_bpc}, {"unigram": unigram_bpc, "bigram": bigram_bpc}
)
plt.show()

# %% [markdown]
# Samples, one character at a time. Dividing the logits by a temperature below 1
# sharpens the distribution: the text gets more conservative, and a small model may get
# stuck repeating a frequent pattern. The model has learnt indentation, keywords, `self.`,
# brackets and quotes well before it has learnt to spell identifiers; larger character
# models even devote single hidden units to tracking quotes and indentation
# {cite:p}`karpathy2015visualizing`.

# %%
for temperature in (0.5, 0.8):
    print(f"--- temperature {temperature} ---")
    print(sample(char_rnn, vocab, "def ", 300, temperature=temperature, seed=1))
print(f"(lecture ran in {time.perf_counter() - LECTURE_START:.0f} s)")
# The summary below restates results of this page; these lines keep it true to them.
assert char_rnn.rnn.hidden_size == 128, "the summary names a 128-unit RNN"
assert rnn_bpc < bigram_bpc < unigram_bpc, (
    f"the summary says the RNN ({rnn_bpc:.2f} bpc) beats the bigram ({bigram_bpc:.2f}) and "
    f"the unigram ({unigram_bpc:.2f}) baselines"
)

# %% [markdown]
# ## Summary
#
# * An RNN applies the same cell $h_t = \tanh(W h_{t-1} + U x_t + b)$ {eq}`eq-rnn-cell` at
#   every step; its loss {eq}`eq-rnn-loss` is a sum of per-step cross-entropies.
# * BPTT is the chain rule on the unrolled network. $\partial L/\partial h_t$ is the
#   local term plus the term carried back from $t+1$ {eq}`eq-bptt-recursion`, and every
#   weight gradient is a sum over steps {eq}`eq-bptt-weights`. Our hand-written version
#   matches autograd to about $10^{-15}$.
# * Truncated BPTT carries the hidden state forward but cuts the gradient every $k$
#   steps. The model still *uses* the whole past; it only stops *learning* from
#   dependencies longer than $k$.
# * The gradient that travels $k$ steps back is multiplied by $k$ Jacobians
#   {eq}`eq-jacobian-product`. In a linear RNN that product is $W^k$, which behaves like
#   $\rho^k$: it vanishes for $\rho < 1$ and explodes for $\rho > 1$. With $\tanh$ the product
#   is at most $\lVert W\rVert_2^k$ in norm (Section 4 measures how far below). Clipping the
#   global norm {eq}`eq-clip` tames explosions {cite:p}`pascanu2013difficulty`; vanishing
#   needs new architectures.
# * A 128-unit character RNN, trained for under a minute on a CPU (the time is printed above),
#   beats the unigram and bigram baselines on held-out Python code.
#
# **Next:** Assignment 1 (`a1_rnn_bptt`) has you build these pieces again in NumPy: the
# forward pass and its loss, BPTT checked against autograd, global-norm clipping, and a
# written question on which dependencies truncated BPTT can teach, with the state carried
# across chunks or reset. Lecture 2 replaces the tanh cell by gated
# cells, the LSTM {cite:p}`hochreiter1997lstm` and the GRU {cite:p}`cho2014learning`, that let
# gradients travel further, and compares them {cite:p}`chung2014empirical`.
