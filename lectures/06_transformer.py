# ---
# jupyter:
#   course:
#     budget_seconds: 120
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
# # Lecture 6: The Transformer
#
# Lecture 5 built multi-head self-attention and the ways to give it positions. The
# **Transformer** {cite:p}`vaswani2017attention` stacks those parts into an encoder and a
# decoder, with no recurrence anywhere: every position of a layer is computed at once.
#
# This lecture:
#
# 1. builds the **encoder block**: multi-head self-attention and a position-wise feed-forward
#    network, each wrapped in a residual connection and a **LayerNorm**
#    {cite:p}`ba2016layernorm`, written by hand and checked against PyTorch;
# 2. measures **why residuals help**, and what the place of the LayerNorm (after the residual
#    sum, as in the paper, or before the sublayer) does to training, with and without the
#    paper's learning-rate warm-up;
# 3. builds the **decoder block**: masked self-attention, cross-attention to the encoder, and
#    the padding and causal masks combined into one;
# 4. assembles the **encoder–decoder**, proves it equal to `torch.nn.Transformer`, trains it
#    on Lecture 4's dates and compares it with Lecture 4's recurrent model with attention,
#    decoding with Lecture 4's greedy and beam search, then sets beside it what the paper's
#    models reached on real translation and what they cost to train;
# 5. answers "which part has the most parameters?" with formulas, for our model and for the
#    paper's base model;
# 6. looks inside the trained model's heads.
#
# Everything trains live, on a CPU, with fixed seeds, in about a minute.

# %%
import math
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

from course.analysis.parameters import (
    attention_parameters,
    count_transformer,
    feed_forward_parameters,
)
from course.analysis.seq2seq import accuracy_by, exact_match, translate
from course.analysis.sorting import SORT_RECIPE, SORTERS, train_sorter
from course.analysis.transformer import attention_maps, gradient_norms_by_depth
from course.data.dates import MONTHS, DateTask, day_in_words, year_in_words
from course.data.sorting import SortTask
from course.metrics import record
from course.models.attention import causal_mask, padding_mask
from course.models.seq2seq import Seq2Seq
from course.models.transformer import (
    EncoderLayer,
    Seq2SeqTransformer,
    Transformer,
    copy_to_torch,
)
from course.train import fit, linear_warmup_decay, transformer_schedule
from course.viz.attention_views import head_view, model_view
from course.viz.diagrams import transformer_diagram
from course.viz.training import plot_training_histories
from course.viz.transformer import (
    HeadMaps,
    interact_depth_gradients,
    interact_heads,
    plot_decoder_masks,
    plot_depth_gradients,
    plot_head,
)

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread is as fast, and robust on a busy 2-core CPU
torch.set_printoptions(precision=4, sci_mode=False)
LECTURE_START = time.perf_counter()

# %% [markdown]
# ## 1. The encoder block
#
# Lecture 5's self-attention turns the vectors $x_1, \dots, x_n$ of a sentence into vectors
# $z_1, \dots, z_n$ that each mix in the others. The encoder block adds three things around
# it: a **feed-forward network** applied to each position separately, a **residual
# connection** around each of the two sublayers, and a **LayerNorm** after each sum. In the
# paper's order (**post-norm**):
#
# $$h = \operatorname{LN}_1\big(x + \operatorname{MultiHead}(x)\big), \qquad
#   y = \operatorname{LN}_2\big(h + \operatorname{FFN}(h)\big).$$ (eq-post-norm)
#
# The whole model is drawn below: this section builds the left column, section 3 the right one.

# %% mystnb={"image": {"alt": "Diagram of the Transformer, post-norm. Left, the encoder: source tokens, an embedding plus positions p_i, then a block repeated N times of multi-head self-attention, add and norm, a feed-forward network FFN, add and norm, each sublayer with a residual path around it, ending in the memory M. Right, the decoder: target tokens shifted right, an embedding plus positions, then a block repeated N times of masked self-attention, cross-attention that takes its keys and values from M, and a feed-forward network, each followed by add and norm with a residual path, then a linear layer and a softmax giving next-token probabilities."}}
transformer_diagram()
plt.show()

# %% [markdown]
# ### LayerNorm
#
# LayerNorm standardises each vector over its own $d$ features, then rescales each feature
# with learned $\gamma$ and $\beta$:
#
# $$\mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \qquad
#   \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2, \qquad
#   \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta.$$ (eq-layernorm)
#
# Many presentations of LayerNorm divide by $\sigma$ itself; libraries add a small
# $\varepsilon$ ($10^{-5}$ in PyTorch) so that a constant vector, with $\sigma = 0$, does not
# divide by zero. The variance is the biased one (divide by $d$, not $d - 1$). Unlike batch
# normalisation, nothing is averaged over the batch: each token is normalised on its own, so a
# padded batch and each sentence alone give the same numbers, and training and inference
# compute the same thing.


# %%
def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last axis of x (..., d), by the equation above."""
    mu = x.mean(-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased, as in the equation
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
print("x =", x.tolist())
mu, var = x.mean(-1), x.var(-1, unbiased=False)
print(f"mu = {mu.tolist()}, sigma^2 = {var.tolist()}")
normed = layer_norm(x, torch.ones(4), torch.zeros(4))
print("LN(x) with gamma = 1, beta = 0:", normed)
out_mean, out_var = normed[0].mean(), normed[0].var(unbiased=False)
print(f"first row after LN: mean {out_mean:.1e}, variance {out_var:.7f}")
# The text below reads these lines this way: keep it true.
assert mu[0] == 2.5 and var[0] == 1.25, f"the first row's mean and variance: {mu[0]}, {var[0]}"
assert torch.allclose(normed[0], torch.tensor([-1.34, -0.45, 0.45, 1.34]), atol=5e-3), (
    f"the first row should come out as about (-1.34, -0.45, 0.45, 1.34), not {normed[0].tolist()}"
)
assert abs(out_mean) < 1e-6 and out_var < 1, (
    f"the first row should come out with mean 0 and variance just under 1: {out_mean}, {out_var}"
)
assert torch.isclose(out_var, var[0] / (var[0] + 1e-5)), "its variance should be σ²/(σ² + ε)"
assert torch.equal(normed[1], torch.zeros(4)), f"the constant row should give zeros: {normed[1]}"

library = nn.LayerNorm(8)
with torch.no_grad():  # random gamma and beta, so that they are checked too
    library.weight.normal_()
    library.bias.normal_()
batch = torch.randn(3, 5, 8) * 4 + 2
difference = (layer_norm(batch, library.weight, library.bias) - library(batch)).abs().max()
print(f"by hand against nn.LayerNorm, on a (3, 5, 8) batch: max |difference| = {difference:.1e}")

# %% [markdown]
# The first row has mean 2.5 and variance 1.25, and comes out as about $(-1.34, -0.45, 0.45,
# 1.34)$: mean 0, variance 1 (just under, because of $\varepsilon$). The constant second row
# comes out as zeros, where dividing by $\sigma = 0$ would have given NaN.
#
# ### The position-wise feed-forward network
#
# It is often written $y = W_2\,\sigma(W_1 x)$, for some nonlinearity $\sigma$; the paper
# uses a ReLU and biases, and a hidden layer four times wider than the model ($d_{ff} = 2048$
# for $d_{\text{model}} = 512$):
#
# $$\operatorname{FFN}(x) = W_2 \max(0,\, W_1 x + b_1) + b_2.$$ (eq-ffn)
#
# It sees one position at a time: attention is the only place where positions exchange
# information. Below, the block of `course.models.transformer` is run on a batch and compared
# with {eq}`eq-post-norm` written out from its own parts; then one position is run alone
# through the feed-forward network.

# %%
torch.manual_seed(0)
block = EncoderLayer(d_model=16, num_heads=4, d_ff=64, dropout=0.0)
x = torch.randn(2, 6, 16)  # (B, n, d_model)
h = block.norm1(x + block.self_attn(x)[0])
by_equation = block.norm2(h + block.ffn(h))
print(
    f"encoder block against its equation: max |difference| = {(block(x) - by_equation).abs().max():.1e}"
)
alone = block.ffn(h[:, 2:3])  # position 2 alone
print(
    f"FFN at position 2, alone against in the batch: {(alone[:, 0] - block.ffn(h)[:, 2]).abs().max():.1e}"
)

# %% [markdown]
# **Pre-norm.** Later models (GPT-2 among them) move the LayerNorm inside the residual branch,
# before each sublayer, and add one LayerNorm after the last layer:
#
# $$h = x + \operatorname{MultiHead}\big(\operatorname{LN}_1(x)\big), \qquad
#   y = h + \operatorname{FFN}\big(\operatorname{LN}_2(h)\big).$$ (eq-pre-norm)
#
# The residual path from the input to the output then passes through no LayerNorm at all.
# `EncoderLayer(..., norm_first=True)` is this variant. Section 2 measures what the
# difference does.

# %%
block.norm_first = True
h = x + block.self_attn(block.norm1(x))[0]
by_equation = h + block.ffn(block.norm2(h))
print(
    f"pre-norm block against its equation: max |difference| = {(block(x) - by_equation).abs().max():.1e}"
)

# %% [markdown]
# ## 2. Why residuals help
#
# A residual connection computes $y = x + F(x)$ instead of $y = F(x)$. In the paper's words,
# the output of each sublayer is $\operatorname{LayerNorm}(x + \operatorname{Sublayer}(x))$:
# the sublayer's result is **added** to its own input, entry by entry, so both have the width
# $d_{\text{model}}$ and so does the sum.
#
# **A correction to a seed slide.** One of the slide decks this unit was rebuilt from (the
# third lecture of the course "Understanding Large Language Models"; not part of this course)
# says that the encoder "concat[s] w/ a residual connection". That is wrong: a Transformer's
# residual connection adds, it does not concatenate. Concatenating, $[x; F(x)]$, would widen
# the vector at every sublayer, from $d$ to $2d$ to $4d$ up a stack, and its Jacobian would be
# $I$ stacked on top of $\partial F / \partial x$ instead of their sum
# $I + \partial F / \partial x$, the form the rest of this section relies on. The Transformer
# does concatenate in one place: multi-head attention sets its heads' outputs side by side
# before $W^O$ (Lecture 5).
#
# Take the simplest case, a linear sublayer: for $y = A x(\theta) + x(\theta)$ the chain rule
# gives
#
# $$\frac{\partial y}{\partial \theta} = (A + I)\,\frac{\partial x}{\partial \theta},$$ (eq-residual-jacobian)
#
# and in general the Jacobian of a residual layer is $I + \partial F / \partial x$. A gradient
# passing down through $L$ layers is multiplied by $L$ such Jacobians. When each $A$ is small,
# a product of $A$'s shrinks towards zero, while a product of $(A + I)$'s does not: the
# identity term passes the gradient through unchanged. Adding $I$ also improves the **conditioning** (the ratio of the largest to the
# smallest singular value) of a matrix whose singular values are small or spread out. Both,
# for a random $64 \times 64$ matrix with entries of standard deviation $0.3/\sqrt{64}$:

# %%
generator = torch.Generator().manual_seed(0)
A = torch.randn(64, 64, generator=generator) * 0.3 / math.sqrt(64)
identity = torch.eye(64)
condition, product_norm = {}, {}
for name, M in (("A", A), ("A + I", A + identity)):
    s = torch.linalg.svdvals(M)
    condition[name] = float(s.max() / s.min())
    product_norm[name] = float(torch.linalg.matrix_norm(torch.linalg.matrix_power(M, 24), 2))
    print(
        f"{name:6s} singular values from {s.min():.3f} to {s.max():.3f}, condition number "
        f"{condition[name]:8.1f}; the product of 24 copies has norm {product_norm[name]:.2e}"
    )
# The text around this cell reads these lines this way: keep it true.
assert condition["A + I"] < condition["A"], "adding I should improve the conditioning"
assert product_norm["A"] < torch.finfo(A.dtype).eps, (
    f"the product of 24 A's should all but vanish (below float32's resolution at 1), "
    f"but its norm is {product_norm['A']:.1e}"
)
assert product_norm["A + I"] >= 1e3, (
    f"the product of 24 (A + I)'s should have grown by three orders of magnitude, "
    f"but its norm is {product_norm['A + I']:.1e}"
)

# %% [markdown]
# The product of 24 $A$'s has all but vanished; the product of 24 $(A + I)$'s has not, and
# here it has even grown by three orders of magnitude, because $A$ adds a little to every
# direction. Residuals remove the vanishing; keeping the growth in check is left to the
# LayerNorms and to how small each sublayer starts.
#
# The same in a real stack: `gradient_norms_by_depth` builds 24 feed-forward sublayers at
# PyTorch's default initialisation and measures $\lVert \partial L / \partial x_l \rVert$ at
# the input of every layer $l$, for each combination of residual (on or off) and LayerNorm
# (post, pre or none).

# %%
DEPTH = 24
print(f"{'stack':32s} {'at the top':>11s} {'halfway':>9s} {'at the bottom':>14s}")
for residual in (True, False):
    for norm in ("post", "pre", "none"):
        norms = gradient_norms_by_depth(DEPTH, residual=residual, norm=norm)
        name = (
            f"{'residual' if residual else 'no residual'}, {norm}-norm"
            if norm != "none"
            else (f"{'residual' if residual else 'no residual'}, no LayerNorm")
        )
        print(f"{name:32s} {norms[-1]:11.3g} {norms[DEPTH // 2]:9.3g} {norms[0]:14.3g}")

# %% mystnb={"image": {"alt": "Norm of the gradient of the loss with respect to the layer's input x_l, on a log scale, at every layer l of a freshly initialised stack of 24 feed-forward layers of width 64 without LayerNorm, from layer 0 at the bottom (furthest from the loss) to the top: a solid line with residual connections and a dashed line without them."}}
plot_depth_gradients(DEPTH, residual=True, norm="none")
plt.show()

# %% [markdown]
# Without residuals and without normalisation, the gradient reaching the bottom layer is less
# than $10^{-15}$ times the one at the top: the bottom layers would not learn at all. With
# residuals it stays within a factor of two of the top's, whatever the LayerNorm does.
# LayerNorm alone also keeps the size of the gradient in check at initialisation, but it does
# not give the direct path that residuals give. The explorer redraws the figure for other
# depths and placements.

# %%
controls = interact_depth_gradients()

# %% [markdown]
# ### Post-norm against pre-norm, with and without warm-up
#
# The paper trains with Adam and a learning rate that rises linearly for `warmup` steps and
# then decays like $1/\sqrt{\text{step}}$:
#
# $$\text{lr}(s) = d_{\text{model}}^{-1/2} \cdot \min\big(s^{-1/2},\; s \cdot \text{warmup}^{-3/2}\big).$$ (eq-warmup)
#
# Post-norm Transformers are known to need this warm-up: without it, the large early updates
# of the top layers can stall or wreck training, while pre-norm ones train without it
# {cite:p}`xiong2020layer`. We test that on a deeper model than the rest of the lecture
# uses, 6 encoder and 6 decoder layers of width 32, trained on the date task for the same
# number of steps four ways: post-norm or pre-norm, with the schedule {eq}`eq-warmup`, or with
# the same schedule starting at its peak (no warm-up). Everything else is equal: seed, batches,
# gradient clipping at norm 1.

# %%
task = DateTask()
test_pairs = task.sample(1000, "test", seed=0)
form_pairs = task.sample(500, "forms", seed=0)
source_size, target_size = len(task.source_vocab), len(task.target_vocab)

DEEP_LAYERS, DEEP_WIDTH, DEEP_STEPS, DEEP_WARMUP, DEEP_BATCH = 6, 32, 150, 50, 32
deep_histories, deep_models = {}, {}
for norm_first in (False, True):
    for warm_up in (False, True):
        name = f"{'pre' if norm_first else 'post'}-norm, {'warm-up' if warm_up else 'no warm-up'}"
        torch.manual_seed(0)
        deep_models[name] = Seq2SeqTransformer(
            source_size, target_size, d_model=DEEP_WIDTH, num_heads=4, num_layers=DEEP_LAYERS,
            d_ff=2 * DEEP_WIDTH, norm_first=norm_first,
        )  # fmt: skip
        deep_histories[name] = fit(
            deep_models[name],
            lambda m, batch: m.loss(batch),
            task.batches(DEEP_BATCH, seed=0),
            steps=DEEP_STEPS,
            lr=1.0,  # the schedule gives the whole learning rate
            lr_schedule=transformer_schedule(DEEP_WIDTH, DEEP_WARMUP, warm_up=warm_up),
            desc=name,
        )

# %% mystnb={"image": {"alt": "Two panels for four transformers of 6 encoder and 6 decoder layers trained on dates for 150 steps, post-norm or pre-norm, each with and without learning-rate warm-up, running mean over 5 steps against step: left the training loss in nats per output character, right the gradient norm before clipping, on a log scale."}}
deep_test = test_pairs[:200]
print(f"{'model':26s} {'final loss':>10s} {'largest gradient norm':>22s} {'exact match':>12s}")
deep_correct = {}
for name, model in deep_models.items():
    history = deep_histories[name]
    deep_correct[name] = np.mean(exact_match(task, deep_test, translate(model, task, deep_test)))
    print(
        f"{name:26s} {np.mean(history.losses[-10:]):10.3f} {max(history.grad_norms):22.1f} "
        f"{deep_correct[name]:12.3f}"
    )
fig = plot_training_histories(deep_histories, smooth=5, loss_unit="nats per output character")
fig.suptitle(
    f"{DEEP_LAYERS}+{DEEP_LAYERS} layers: training loss and gradient norm", fontsize=10, y=1.03
)
plt.show()
# The text below reads the table this way: keep it true.
deep_loss = {name: np.mean(history.losses[-10:]) for name, history in deep_histories.items()}
stalled = deep_histories["post-norm, no warm-up"].grad_norms
assert deep_loss["post-norm, no warm-up"] > 2.1, "the text says post-norm without warm-up stalls"
assert np.mean(stalled[-10:]) < np.mean(stalled[:10]) / 2, "the text says its gradient shrinks"
assert max(deep_loss[n] for n in deep_loss if n != "post-norm, no warm-up") < 1.8, (
    "the text says the other three learn: their loss ends well below the stall"
)
assert deep_correct["pre-norm, warm-up"] > 0.5, "pre-norm with warm-up should translate most dates"
assert max(deep_correct[n] for n in deep_correct if n != "pre-norm, warm-up") < 0.05, (
    "the text says the other three translate almost no date exactly"
)
# The comparisons the text draws, recorded with margins above the spread of their leads between
# processors, 0.045 for the losses and 0.085 for the exact match (python -m tools.spread)
DEEP_SPREAD = {"loss": 0.1, "exact match": 0.15}
for name in ("post-norm, warm-up", "pre-norm, no warm-up"):
    _ = record(
        "06_transformer",
        f"dates, 6+6 layers, 150 steps, {name}, final loss",
        deep_loss[name],
        unit="nats/char",
        baseline=deep_loss["post-norm, no warm-up"],
        baseline_name="post-norm without warm-up (the stall)",
        margin=DEEP_SPREAD["loss"],
    )
runner_up = max((n for n in deep_correct if n != "pre-norm, warm-up"), key=deep_correct.get)
_ = record(
    "06_transformer",
    "dates, 6+6 layers, 150 steps, pre-norm with warm-up, exact match",
    deep_correct["pre-norm, warm-up"],
    baseline=deep_correct[runner_up],
    baseline_name=f"the best of the other three ({runner_up})",
    higher_is_better=True,
    margin=DEEP_SPREAD["exact match"],
)

# %% [markdown]
# The final loss is the mean of the last 10 steps' batches, and exact match is measured on
# 200 held-out dates. A loss near 2.3 means the model predicts little more than how common
# each character is, ignoring the source: that is a stall. In this run:
#
# * **post-norm without warm-up stalls**: its loss stays at that level for all 150 steps,
#   while its gradient norm shrinks (it has settled, not diverged);
# * **post-norm with warm-up** learns, slowly: its loss ends well below the stall, but it
#   translates almost no date exactly;
# * **pre-norm learns in both cases**: without warm-up its loss also ends well below the
#   stall, yet it too translates almost no date exactly; with warm-up it learns fastest, the
#   only one of the four that translates most dates exactly after 150 steps.
#
# (The cell above checks each of these readings, with room for the spread between
# processors.) So, on this task and at this depth, warm-up is what lets post-norm train at
# all. Pre-norm does not stall without it, in line with what {cite:t}`xiong2020layer` report
# at scale, but it does not do without it either: within this budget, warm-up is the
# difference between translating almost no date exactly and translating most of them. (The
# numbers belong to this budget: with hundreds more steps all four would improve, and a
# stall can end late.) The rest of the lecture uses pre-norm.

# %% [markdown]
# ## 3. The decoder block
#
# The decoder writes the output one token at a time, like Lecture 4's. Its block, the right
# column of the diagram in section 1, has three sublayers, each with a residual and a LayerNorm:
#
# 1. **masked self-attention** over the output so far: queries, keys and values all come
#    from the previous decoder layer, and position $i$ may look only at positions $j \le i$,
#    so that training on a whole target at once cannot peek at the tokens it must predict;
# 2. **cross-attention**: queries from the decoder, keys and values from the encoder's final
#    output $M$ (the "memory"), so every output position can read every source position,
#
#    $$\operatorname{CrossAttention}(Y, M) = \operatorname{softmax}\!\Big(\frac{(Y W^Q)(M W^K)^\top}{\sqrt{d_k}} + M_{\text{src}}\Big)\, M W^V;$$ (eq-cross)
#
# 3. the same position-wise feed-forward network as the encoder.
#
# In a padded batch, the self-attention mask combines two conditions: key $j$ comes no later
# than query $i$ (**causal**), and key $j$ is a real token, not padding (**padding**). Both are
# boolean masks, True where attention is allowed, so the combined mask is their AND, of shape
# $(B, 1, T, T)$, broadcast over the heads. Cross-attention needs only the source's padding
# mask. Below, two targets of lengths 5 and 3, padded to 5:

# %% mystnb={"image": {"alt": "Grid of six black-and-white attention masks for a padded batch of two targets of lengths 5 and 3, one row per target: the causal mask, the padding mask and the two combined with AND, each with query position i in rows and key position j in columns, white where attention is allowed."}}
plot_decoder_masks((5, 3))
plt.show()
lengths = torch.tensor([5, 3])
combined = causal_mask(5) & padding_mask(lengths, 5)  # (B, 1, T, T)
print("combined mask of target 2 (1 = may attend):")
print(combined[1, 0].int())
# The text around this cell reads the masks this way: keep it true.
assert combined.any(-1).all() and combined[..., 0].all(), (
    "every query must keep at least one key, and key 1 must be open to every query"
)
assert combined[1, 0, 3:, :3].all() and not combined[1, 0, 3:, 3:].any(), (
    "the padded queries of target 2 (rows 4 and 5) should see its three real keys, and only those"
)

# %% [markdown]
# Each row must keep at least one allowed key, or its softmax would divide by zero: the
# causal mask always leaves position $i$ itself, and position 1 is always real. Rows of
# padded queries (rows 4 and 5 of target 2) still see the real keys; their outputs are
# computed and then ignored by the loss.
#
# Two checks that the masks do their job, on a small random `Transformer`: changing a later
# target token must not change any earlier output, and changing a padded source token must not
# change any output.

# %%
torch.manual_seed(0)
small = Transformer(16, 4, 2, 2, 32, dropout=0.0).eval().requires_grad_(False)
src, tgt = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
src_mask = padding_mask(torch.tensor([7, 4]), 7)
tgt_mask = causal_mask(5) & padding_mask(torch.tensor([5, 3]), 5)
out = small(src, tgt, src_mask, tgt_mask)
later = tgt.clone()
later[:, 3] += 1.0  # change target position 3 (0-based)
changed = (small(src, later, src_mask, tgt_mask) - out).abs().amax(-1)
print("largest change per output position after changing position 3:", changed[0])
padded = src.clone()
padded[1, 4:] = 100.0  # the padding of source 2
print(
    f"change after rewriting source 2's padding: {(small(padded, tgt, src_mask, tgt_mask) - out).abs().max():.1e}"
)

# %% [markdown]
# ## 4. The encoder–decoder
#
# `course.models.transformer.Transformer` stacks $N$ encoder blocks and $N$ decoder blocks;
# every decoder block's cross-attention reads the top encoder block's output. Like
# `torch.nn.Transformer`, each stack ends with one more LayerNorm.
#
# ### Equal to `torch.nn.Transformer`
#
# `copy_to_torch` writes every one of our weights into an `nn.Transformer` with the same sizes.
# Three details matter: PyTorch keeps $W^Q, W^K, W^V$ stacked in one `in_proj_weight`;
# `nn.Transformer` is post-norm unless `norm_first=True`, with the extra final LayerNorms; and
# its tensors are (length, batch, features) unless `batch_first=True`. Its masks mean the
# opposite of ours (True = *not* allowed). We compare in train mode with dropout 0 (in eval
# mode PyTorch may take a fused fast path), in float64, with padding on both sides and the
# causal mask, for both norm placements.

# %%
torch.manual_seed(0)
src, tgt = torch.randn(3, 9, 32, dtype=torch.float64), torch.randn(3, 7, 32, dtype=torch.float64)
src_keys, tgt_keys = (
    padding_mask(torch.tensor([9, 4, 6]), 9),
    padding_mask(torch.tensor([7, 3, 5]), 7),
)
for norm_first in (False, True):
    ours = Transformer(32, 4, 3, 3, 64, dropout=0.0, norm_first=norm_first).double().train()
    with warnings.catch_warnings():  # a note that pre-norm skips a fast path we do not use
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        theirs = (
            nn.Transformer(32, 4, 3, 3, 64, dropout=0.0, batch_first=True, norm_first=norm_first)
            .double()
            .train()
        )
    copy_to_torch(ours, theirs)
    mine = ours(src, tgt, src_keys, causal_mask(7) & tgt_keys)
    library = theirs(
        src, tgt, tgt_mask=~causal_mask(7), src_key_padding_mask=~src_keys[:, 0, 0],
        memory_key_padding_mask=~src_keys[:, 0, 0], tgt_key_padding_mask=~tgt_keys[:, 0, 0],
    )  # fmt: skip
    print(
        f"{'pre' if norm_first else 'post'}-norm, 3+3 layers: max |ours - nn.Transformer| = "
        f"{(mine - library).abs().max():.1e}"
    )

# %% [markdown]
# ### Embeddings and the output layer
#
# To translate, `Seq2SeqTransformer` adds what Lecture 5 put around attention: a token
# embedding table for each side, multiplied by $\sqrt{d_{\text{model}}}$ as in the paper,
# plus the sinusoidal positions, and a linear output layer with a softmax over the target
# characters. The $\sqrt{d_{\text{model}}}$ only makes sense with the paper's initialisation:
# embedding entries of size about $1/\sqrt{d_{\text{model}}}$ (the paper shares them with the
# output layer). Then a scaled embedding has length about $\sqrt{d_{\text{model}}}$, like a
# position's. With PyTorch's default $\mathcal{N}(0, 1)$ entries, the scaled embedding would
# be $\sqrt{d_{\text{model}}}$ times longer than the positions, which the model then
# struggles to read; `Seq2SeqTransformer` initialises its tables the paper's way.

# %%
probe = Seq2SeqTransformer(source_size, target_size)
words = probe.src_embed.weight[1:] * math.sqrt(probe.d_model)
print(f"scaled word vectors: mean length {words.norm(dim=-1).mean():.2f}")
print(f"position vectors:    mean length {probe.positions[:10].norm(dim=-1).mean():.2f}")
print(f"(sqrt(d_model) = {math.sqrt(probe.d_model):.2f})")

# %% [markdown]
# ### Trained on the dates, against Lecture 4's recurrent model
#
# Lecture 4's recurrent model with additive attention, a GRU encoder–decoder, was trained on
# this task for 100 steps at learning rate $10^{-2}$. We train it again here with the same
# recipe, and a Transformer with 2 encoder and 2 decoder layers of width 64, 4 heads and
# $d_{ff} = 128$, pre-norm, for 300 steps of Adam with a short linear warm-up and a linear
# decay of the learning rate (peak $3 \cdot 10^{-3}$). Both see batches of 64 dates and are
# scored by exact match of greedy decoding on the same held-out dates, in seen and unseen
# forms.

# %%
RNN_STEPS, RNN_LR = 100, 1e-2
TF_STEPS, TF_WARMUP, TF_LR = 300, 50, 3e-3
torch.manual_seed(0)
rnn = Seq2Seq(source_size, target_size, hidden=64, attention="additive")
rnn_history = fit(
    rnn, lambda m, b: m.loss(b), task.batches(64, seed=0), steps=RNN_STEPS, lr=RNN_LR,
    desc="GRU with additive attention",
)  # fmt: skip
torch.manual_seed(0)
transformer = Seq2SeqTransformer(
    source_size, target_size, d_model=64, num_heads=4, num_layers=2, d_ff=128, norm_first=True
)
tf_history = fit(
    transformer, lambda m, b: m.loss(b), task.batches(64, seed=0), steps=TF_STEPS, lr=TF_LR,
    lr_schedule=linear_warmup_decay(TF_WARMUP, TF_STEPS), desc="Transformer",
)  # fmt: skip

# %%
mean_source = np.mean([len(words) for words, _ in test_pairs])
target_len = len(test_pairs[0][1]) + 1  # the ten ISO characters and </s>
results = {}
for name, model, history in (
    ("GRU + additive attention", rnn, rnn_history),
    ("Transformer (2+2 layers)", transformer, tf_history),
):
    start = time.perf_counter()
    outputs = translate(model, task, test_pairs)
    decode_seconds = time.perf_counter() - start
    for _ in range(2 if decode_seconds < 1 else 0):  # a short run, the one most disturbed by
        start = time.perf_counter()  # other work on the computer: the least of three
        translate(model, task, test_pairs)
        decode_seconds = min(decode_seconds, time.perf_counter() - start)
    results[name] = {
        "test": np.mean(exact_match(task, test_pairs, outputs)),
        "forms": np.mean(exact_match(task, form_pairs, translate(model, task, form_pairs))),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds": history.seconds,
        "steps/s": history.steps / history.seconds,
        "decode": decode_seconds,
    }
print(
    f"{'model':26s} {'parameters':>10s} {'held-out':>9s} {'unseen forms':>13s} {'steps':>6s} "
    f"{'train time':>11s} {'steps/s':>8s} {'decode 1000':>12s}"
)
for (name, r), history in zip(results.items(), (rnn_history, tf_history), strict=True):
    print(
        f"{name:26s} {r['parameters']:10,d} {r['test']:9.3f} {r['forms']:13.3f} "
        f"{history.steps:6d} {r['seconds']:10.1f}s {r['steps/s']:8.1f} {r['decode']:11.2f}s"
    )
print(
    f"\nsequential operations per layer, training on a source of {mean_source:.1f} words "
    f"(mean) and a target of {target_len} characters:\n"
    f"  GRU: {mean_source:.1f} encoder steps + {target_len} decoder steps, one after another\n"
    f"  Transformer: 1 (every position of a layer at once); generating still takes "
    f"{target_len} decoder steps"
)
n, width = round(mean_source), 64
print(
    f"operations per layer (Lecture 5's complexity table) at n = {n}, d = {width}: "
    f"self-attention n^2 d = {n * n * width:,}, recurrent n d^2 = {n * width * width:,}"
)

# %% [markdown]
# How far apart must two figures be before one model "beats" the other? Training is chaotic:
# the same seeds and steps give slightly different weights on processors whose kernels round
# differently (AVX-512, AVX2, SSE), and an exact match near 1 moves by a few thousandths with
# them. `python -m tools.spread 06_transformer` runs this lecture with each processor's
# kernels; `TIE` below is the largest gap it measured between the two models (plus room), so
# a gap inside it is a tie, not a win.

# %%
TIE = {"test": 0.01, "forms": 0.02}  # measured with python -m tools.spread 06_transformer
ours, theirs = results["Transformer (2+2 layers)"], results["GRU + additive attention"]
for split, label in (("test", "held-out dates"), ("forms", "unseen forms")):
    gap = ours[split] - theirs[split]
    verdict = (
        "a tie" if abs(gap) <= TIE[split] else "the Transformer wins" if gap > 0 else "the GRU wins"
    )
    print(f"{label}: Transformer {ours[split]:.3f}, GRU {theirs[split]:.3f}, gap {gap:+.3f}: "
          f"{verdict} (a tie is within {TIE[split]})")  # fmt: skip
    assert verdict == "a tie", "the text below says both are ties: rewrite it"
for split, label in (("test", "held-out dates"), ("forms", "unseen forms")):
    _ = record(
        "06_transformer",
        f"dates, Transformer 2+2 layers, {label}, exact match",
        ours[split],
        baseline=theirs[split],
        baseline_name="Lecture 4's GRU with additive attention",
        higher_is_better=True,
        margin=TIE[split],
        claim="matches",
    )

# %% mystnb={"image": {"alt": "Two panels for two models trained on dates, a GRU with additive attention (100 steps) and a transformer of 2 encoder and 2 decoder layers (300 steps), running mean over 10 steps against step: left the training loss in nats per output character, right the gradient norm before clipping, on a log scale."}}
fig = plot_training_histories(
    {"GRU + additive attention": rnn_history, "Transformer": tf_history},
    smooth=10,
    loss_unit="nats per output character",
)
fig.suptitle("dates: training loss and gradient norm", fontsize=10, y=1.03)
plt.show()
gru_final = np.mean(rnn_history.losses[-10:])
running = np.convolve(tf_history.losses, np.ones(10) / 10, mode="valid")  # 10-step means
reached = np.flatnonzero(running <= gru_final)
assert reached.size and reached[0] + 10 > RNN_STEPS, (
    "the text below says the Transformer needs more steps than the GRU to reach its loss"
)
match_step = int(reached[0]) + 10  # the last step of the first window that gets there
print(
    f"the GRU's loss over its last 10 steps: {gru_final:.4f}; the Transformer's 10-step mean "
    f"first gets there at step {match_step} ({match_step / RNN_STEPS:.1f} times the GRU's "
    f"{RNN_STEPS} steps)"
)
decode_ratio = ours["decode"] / theirs["decode"]
print(
    f"decoding the 1,000 held-out dates: the Transformer takes {decode_ratio:.1f} times the GRU's time"
)
assert decode_ratio > 1.5, "the text below says the Transformer decodes more slowly"

# %% [markdown]
# The recurrent model needs fewer steps here: attention over a GRU's states is a strong prior
# for a task whose output follows the input piece by piece. The Transformer's training loss
# first reaches the GRU's final one only after more steps than the GRU took in all (the step
# is printed above; the Transformer's learning-rate schedule, set for 300 steps, has a part in
# that). At this size neither model wins on accuracy: both verdicts above are ties (the cell
# checks it), so the comparison says nothing about which architecture is better at
# translating dates, only that both learn them. What each step costs on the machine that ran
# the cell is in the steps-per-second column; it depends on the machine and on what else it
# is doing, so the text draws nothing from it. What differs for certain is how that cost is
# spent: the GRU's step is a loop over about 19 positions, one after another, while the
# Transformer's layers each take one pass over all positions. On hardware that runs many positions in
# parallel, the Transformer's time per step barely grows with the length, and the GRU's grows
# linearly; Lecture 5 measured how each cost grows on this CPU. In operations, Lecture 5's
# complexity table (from the Transformer paper) puts self-attention at $O(n^2 d)$ per layer
# and a recurrent layer at $O(n d^2)$: at these sizes ($n \approx 8 < d = 64$) attention is the
# cheaper of the two, and the two are equal at $n = d$. Decoding is another matter: generating
# is sequential for both, and our Transformer re-reads the whole prefix at every step, hence
# its slower decoding (the ratio is printed above).
#
# ### A task that tells them apart: sorting
#
# Dates are a task whose output follows its input piece by piece: the words of the year make
# the digits of the year, so the decoder's attention only has to move along the source.
# Sorting is not like that. Read digit words, "three one four one five nine two six", and
# write the digits in order, "11234569": the first character already depends on every word
# (is there a zero anywhere?), and how often each digit appears is counted over the whole
# source. `course.data.sorting.SortTask` draws sources of 5 to 30 words.
#
# Both models train with one recipe, `course.analysis.sorting.SORT_RECIPE`: the warm-up and
# linear decay above, 300 steps of 64 sources, peak learning rate $10^{-2}$, which a sweep of
# each model's rate picked for both (the module's docstring gives the sweep). Both are scored
# by exact match on the same held-out sources, overall and by source length.

# %%
sort_task = SortTask()
sort_pairs = sort_task.sample(SORT_RECIPE["test_sources"], "test", seed=0)
print(f"{len(sort_pairs):,} held-out sources, e.g. {' '.join(sort_pairs[0][0])!r} -> "
      f"{sort_pairs[0][1]!r}")  # fmt: skip
BANDS = ("5-9", "10-14", "15-19", "20-24", "25-30")  # source lengths, in words


def band(pair):
    return BANDS[min((len(pair[0]) - 5) // 5, len(BANDS) - 1)]


sort_em, sort_bands, sort_seconds = {}, {}, {}
for name in SORTERS:
    model, history = train_sorter(name, sort_task, seed=0)
    correct = exact_match(sort_task, sort_pairs, translate(model, sort_task, sort_pairs))
    sort_em[name] = float(np.mean(correct))
    sort_bands[name] = accuracy_by(sort_pairs, correct, key=band)
    sort_seconds[name] = history.seconds
print(f"{'model':26s} {'exact match':>11s}  " + "".join(f"{b:>7s}" for b in BANDS) + "  train time")
for name in SORTERS:
    print(
        f"{name:26s} {sort_em[name]:11.3f}  "
        + "".join(f"{sort_bands[name][b][0]:7.2f}" for b in BANDS)
        + f"  {sort_seconds[name]:8.1f} s"
    )

# %% [markdown]
# One run of each could be luck, so `sorting_seeds()` in the same module trained both from
# three seeds (0, the run above, and 1 and 2) and scored them the same way. The lead counts
# only if it is larger than how far each model's figure moves between seeds; the cell checks
# it on those figures and records the lead with that margin.

# %%
# Exact match of each model from seeds 0, 1 and 2, measured on one CPU thread with
# python -c "from course.analysis.sorting import sorting_seeds; sorting_seeds()"
SORT_SEEDS = {
    "GRU + additive attention": (0.718, 0.824, 0.783),
    "Transformer (2+2 layers)": (0.988, 0.986, 0.989),
}
gru_name, tf_name = SORTERS
sort_spread = {name: max(v) - min(v) for name, v in SORT_SEEDS.items()}
sort_margin = max(sort_spread.values())
worst_gap = min(SORT_SEEDS[tf_name]) - max(SORT_SEEDS[gru_name])
print(
    f"between seeds the GRU moves by {sort_spread[gru_name]:.3f} and the Transformer by "
    f"{sort_spread[tf_name]:.3f}; the Transformer's worst seed leads the GRU's best by "
    f"{worst_gap:.3f}; here the lead is {sort_em[tf_name] - sort_em[gru_name]:.3f}"
)
assert worst_gap > 0, "the text below says the Transformer wins on every seed"
_ = record(
    "06_transformer",
    "sorting 5-30 digit words, Transformer 2+2 layers, held-out exact match",
    sort_em[tf_name],
    baseline=sort_em[gru_name],
    baseline_name="Lecture 4's GRU with additive attention, the same recipe",
    higher_is_better=True,
    margin=round(sort_margin, 3),  # the larger of the two models' spreads between seeds
)
long_band = BANDS[-1]
assert sort_bands[gru_name][long_band][0] < sort_bands[gru_name][BANDS[0]][0], (
    "the text below says the GRU does worse on the longest sources than on the shortest"
)
assert sort_bands[tf_name][long_band][0] > sort_bands[gru_name][long_band][0] + sort_margin

# %% [markdown]
# Here the Transformer wins, on every seed, by more than either model moves between seeds, and
# the table by length shows where: the GRU does worse on the longest sources than on the
# shortest, and on those the Transformer leads it by more than the spread. Self-attention
# lets every source position compare itself with every other in one layer (how many digits
# are smaller than mine?), which is what sorting needs. The GRU's encoder meets the words one
# at a time and its decoder's attention looks up source positions, so a count has to be
# carried through the loop. The same budget, and on this task the architecture decides. The
# dates say the other half: where the output follows the input, the recurrent prior is as
# good.
#
# ### Greedy and beam search, reused
#
# `Seq2SeqTransformer` has the same `start` and `decode_step` as Lecture 4's model, so
# Lecture 4's `greedy_search` and `beam_search` decode it unchanged. Its `decode_step` runs the
# decoder on the whole prefix again at every step (Lecture 8 adds a cache that avoids this).
# We compare them with $\alpha = 0$, so that beam search looks for the most probable output,
# and print each output's log-probability under the model.
#
# Writing this lecture found a flaw in an earlier version of `beam_search`. It stopped as soon
# as `beam_size` hypotheses had finished, a common rule. This model is nearly sure of each
# date, so the other beams hold unlikely prefixes, and those often end at once: they filled
# the quota before the right date finished, and beam search did worse than greedy search. It
# now stops only when no live hypothesis can still beat the best finished one.

# %%
subset = test_pairs[:300]
greedy = translate(transformer, task, subset, alpha=0.0)
beam = translate(transformer, task, subset, beam_size=4, alpha=0.0)
for name, outputs in (("greedy", greedy), ("beam of 4", beam)):
    print(
        f"{name:10s} exact match {np.mean(exact_match(task, subset, outputs)):.3f}, "
        f"mean log p(output) {np.mean([h.log_prob for h in outputs]):.4f}"
    )
for (words, iso), g, b in list(zip(subset, greedy, beam, strict=True))[:3]:
    print(
        f"{' '.join(words):55s} greedy {task.decode_target(g.tokens)}, "
        f"beam {task.decode_target(b.tokens)} (reference {iso})"
    )

# %% [markdown]
# ### At the paper's scale
#
# The paper trained on real translation, not dates: the WMT 2014 English–German data, about
# 4.5 million sentence pairs, and the English–French data, 36 million sentences. It scored
# each model by BLEU on the newstest2014 test set (the overlap of a translation's $n$-grams
# with a human reference, in points; higher is better) and set both of its Transformers
# against the best earlier systems, with what each cost to train in floating-point operations
# (FLOPs). Its Table 2 {cite:p}`vaswani2017attention`, which the "Understanding Large Language
# Models" slides also show:
#
# | model | BLEU DE | BLEU FR | FLOPs DE | FLOPs FR |
# | --- | --- | --- | --- | --- |
# | ByteNet | 23.75 | | | |
# | Deep-Att + PosUnk | | 39.2 | | $1.0 \cdot 10^{20}$ |
# | GNMT + RL | 24.6 | 39.92 | $2.3 \cdot 10^{19}$ | $1.4 \cdot 10^{20}$ |
# | ConvS2S | 25.16 | 40.46 | $9.6 \cdot 10^{18}$ | $1.5 \cdot 10^{20}$ |
# | MoE | 26.03 | 40.56 | $2.0 \cdot 10^{19}$ | $1.2 \cdot 10^{20}$ |
# | Deep-Att + PosUnk ens. | | 40.4 | | $8.0 \cdot 10^{20}$ |
# | GNMT + RL ens. | 26.30 | 41.16 | $1.8 \cdot 10^{20}$ | $1.1 \cdot 10^{21}$ |
# | ConvS2S ens. | 26.36 | 41.29 | $7.7 \cdot 10^{19}$ | $1.2 \cdot 10^{21}$ |
# | Transformer base | 27.3 | 38.1 | $3.3 \cdot 10^{18}$ | (same) |
# | Transformer big | 28.4 | 41.8 | $2.3 \cdot 10^{19}$ | (same) |
#
# DE is English→German and FR English→French; "ens." marks an ensemble of several models; an
# empty cell is a figure the paper does not give, and "(same)" marks the one cost the paper
# gives each Transformer for both language pairs. The figures are those of the revised arXiv
# version of the paper, which the slides copy; the version in the NIPS 2017 proceedings prints
# 41.0, not 41.8, for the big model's English→French BLEU. On English→German both
# Transformers beat every earlier system, ensembles included, the base model at the lowest
# cost in the table. On English→French the big model beats every earlier single model (and,
# at 41.8, the ensembles too), at a fraction of their cost; the base model falls short of them
# all.
#
# **Training time.** The slides put it at "~4 days on (8) GPUs". The paper trained on one
# machine with 8 NVIDIA P100 GPUs: the base model for 100,000 steps, 12 hours, and the big
# model for 300,000 steps, 3.5 days. The slides' figure is the big model's time rounded up
# from 3.5 days to 4; the base model, which already beat every earlier English→German system,
# took 12 hours. The paper estimates each cost in the table as training time × number of GPUs
# × a sustained rate per GPU, 9.5 TFLOPS for a P100. The cell below redoes that product for
# the paper's two times and for the slides' 4 days.

# %%
P100_FLOPS, GPUS, HOUR, DAY = 9.5e12, 8, 3600, 86400  # the paper's rate per P100, its 8 GPUs
training_seconds = {  # the paper's section 5.2, and the slides' figure
    "base, 12 hours (paper)": 12 * HOUR,
    "big, 3.5 days (paper)": 3.5 * DAY,
    "big, 4 days (slides)": 4 * DAY,
}
cost = {name: seconds * GPUS * P100_FLOPS for name, seconds in training_seconds.items()}
for name, flops in cost.items():
    print(f"{name:24s} {training_seconds[name] / HOUR:5.0f} h x {GPUS} GPUs: {flops:.1e} FLOPs")
# The text around this cell reads these products this way: keep it true.
TABLE_2 = {"base, 12 hours (paper)": "3.3e+18", "big, 3.5 days (paper)": "2.3e+19"}
for name, published in TABLE_2.items():
    assert f"{cost[name]:.1e}" == published, f"{name}: Table 2 gives {published}"
slides_cost = f"{cost['big, 4 days (slides)']:.1e}"
assert slides_cost != TABLE_2["big, 3.5 days (paper)"], "the slides' 4 days give another cost"
assert float(slides_cost) > float(TABLE_2["big, 3.5 days (paper)"]), "a larger one, says the text"

# %% [markdown]
# The paper's times give its table's costs, to the two digits it prints; the slides' 4 days
# would give a larger figure than the table's. The point of the comparison stands either way:
# the big Transformer cost less to train than any earlier English→French system in the table,
# and the base model less than any earlier English→German one.
#
# **Zero-shot translation.** Right after this table, the same slides add a remark: train a
# model to translate from language A to B, then from B to C, and it will translate from A to C
# without training on that pair. That is not a result of the Transformer paper, which trains a
# separate model for each language pair. It comes from Google's multilingual translation
# system {cite:p}`johnson2017multilingual`, a recurrent (LSTM) encoder–decoder with attention.
# There, one model learns several language pairs at once, their examples mixed together, and
# an artificial token at the start of each source sentence names the language to translate
# into. Trained on Portuguese→English and English→Spanish, the model translated
# Portuguese→Spanish, a direction it had seen no example of: that is **zero-shot
# translation**. The pairs are learned together, not one after the other as the slides word
# it, and in that paper the zero-shot translations were usable but worse than translating
# through English in two steps.

# %% [markdown]
# ## 5. Which part has the most parameters?
#
# With width $d$ ($= d_{\text{model}}$), feed-forward width $d_{ff}$ and a vocabulary of
# $|\mathcal{V}|$ tokens, counting weights and biases:
#
# $$\underbrace{4d^2 + 4d}_{\text{attention}}, \qquad
#   \underbrace{2\,d\,d_{ff} + d_{ff} + d}_{\text{feed-forward}}, \qquad
#   \underbrace{2d}_{\text{LayerNorm}}, \qquad
#   \underbrace{|\mathcal{V}|\, d}_{\text{an embedding table}}.$$ (eq-parameter-counts)
#
# An encoder layer has one attention, one feed-forward network and two LayerNorms; a decoder
# layer has two attentions (self and cross), one feed-forward network and three LayerNorms.
# `course.analysis.parameters` adds them up; first, checked against our trained model:

# %%
d, d_ff, layers = 64, 128, 2
body = count_transformer(d, d_ff, layers, layers)
print(
    f"formula, Transformer body: {body.total:,}; the model's tensors: {sum(p.numel() for p in transformer.transformer.parameters()):,}"
)
embeddings = (source_size + target_size) * d
output = target_size * d + target_size
print(f"formula with the two embedding tables and the output layer: {body.total + embeddings + output:,}; "
      f"the model: {sum(p.numel() for p in transformer.parameters()):,}")  # fmt: skip
print(
    f"one attention at d = {d}: {attention_parameters(d):,}; one FFN: {feed_forward_parameters(d, d_ff):,}"
)

# %% [markdown]
# The paper's **base** model has 6 + 6 layers, $d_{\text{model}} = 512$, 8 heads,
# $d_{ff} = 2048$, and one shared table of about 37,000 byte-pair tokens for the source, the
# target and the output layer. Its count, part by part, against the paper's "65M", and the
# body checked against an `nn.Transformer` of the same sizes built on PyTorch's `meta` device
# (shapes only, no memory for the weights):

# %%
base = count_transformer(512, 2048, 6, 6, vocab_size=37_000, embedding_tables=1)
parts = {
    "embeddings (one shared table)": base.embeddings,
    "encoder self-attention": base.encoder_attention,
    "decoder self- and cross-attention": base.decoder_attention,
    "feed-forward networks": base.feed_forward,
    "LayerNorms": base.layer_norms,
}
for name, count in parts.items():
    print(f"{name:36s} {count:12,d}  {count / base.total:6.1%}")
print(f"{'total':36s} {base.total:12,d}  (the paper: 65M)")
largest = max(parts, key=parts.get)
print(f"the largest part: {largest}, {parts[largest] / base.total:.1%} of the total")
# The text below and the summary rely on these: keep them true.
assert largest == "feed-forward networks" and parts[largest] < base.total / 2, (
    "the text says the feed-forward networks are the largest part, but less than half"
)
assert f"{base.total / 1e6:.1f}M" == "63.1M" and abs(base.total / 65e6 - 1) < 0.03
assert sorted(parts, key=parts.get)[-2] == "embeddings (one shared table)"
assert round(3 * 37_000 * 512 / 1e6) == 57  # three unshared tables
with torch.device("meta"):
    meta = nn.Transformer(512, 8, 6, 6, 2048, batch_first=True)
print(f"nn.Transformer(512, 8, 6, 6, 2048) on the meta device: {sum(p.numel() for p in meta.parameters()):,}; "
      f"the formula's body: {base.without_embeddings:,}")  # fmt: skip

# %% [markdown]
# The feed-forward networks are the largest of the five parts, though less than half of the
# model (their share is printed above): each has $2 d\,d_{ff} = 8d^2$ weights against
# attention's $4d^2$. With one shared table, the embeddings are next;
# without sharing, three tables of $37{,}000 \times 512$ would hold 57M by themselves. Our
# 63.1M is within 3% of the paper's rounded 65M: the paper states neither its exact
# vocabulary size nor whether it counts the final LayerNorms, so a difference of that size is
# expected.
#
# **A published configuration table.** One of the lecture decks this unit was rebuilt from (a
# SkillFactory lecture on the Transformer and BERT; not part of the course) compares the
# Transformer with BERT-base and BERT-large in three rows: "Encoders" 6 / 12 / 24, "Units in
# FFN" 512 / 768 / 1024, and "Attention Heads" 8 / 12 / 16. Checked against the two papers
# {cite:p}`vaswani2017attention,devlin2019bert`, the middle row is the model width
# $d_{\text{model}}$ (BERT's "hidden size" $H$), not the feed-forward width, which is four
# times larger in all three. The table, with that row named for what it is and the rows it
# leaves out, computed from the configurations:

# %%
configs = {
    "Transformer base": (6, 512, 8),
    "BERT-base": (12, 768, 12),
    "BERT-large": (24, 1024, 16),
}
print(
    f"{'':18s} {'encoder layers':>15s} {'d_model':>8s} {'FFN width':>10s} {'heads':>6s} {'d_k':>5s}"
)
for name, (n_layers, width, heads) in configs.items():
    print(f"{name:18s} {n_layers:15d} {width:8d} {4 * width:10d} {heads:6d} {width // heads:5d}")

# %% [markdown]
# Every configuration keeps $d_k = d_{\text{model}} / h = 64$ and $d_{ff} = 4 d_{\text{model}}$.
# The Transformer's 6 encoder layers come with 6 decoder layers; BERT has no decoder (Lecture 7).
#
# ## 6. Looking inside
#
# `attention_maps` reads every attention weight of the trained Transformer for a batch, with
# forward hooks. The explorer shows one head at a time: the encoder's self-attention over the
# source words, the decoder's masked self-attention over the output characters, and the
# cross-attention from output characters to source words, where a date's reordering shows.
# Each row is a decoder position, labelled by the character it reads (`<s>` first); it
# predicts the next character. The figure shows the first head of the second layer's
# cross-attention on the first held-out date, and the cell lists, for each row, the source
# word it weighs most.

# %% mystnb={"image": {"alt": "Heat map of the weights of one attention head of the trained transformer, cross attention in layer 2, head 1, on the first held-out date: the target characters from <s> on as query rows, the source words as key columns, colour from 0 to 1."}}
examples = []
for words, iso in test_pairs[:4]:
    src, src_len, tgt = task.batch([(words, iso)])
    maps = attention_maps(transformer, src, src_len, tgt[:, :-1])
    target_tokens = ["<s>", *iso]
    examples.append(
        HeadMaps(words, target_tokens, {part: [m[0].numpy() for m in maps[part]] for part in maps})
    )
plot_head(examples[0], "cross", layer=1, head=0)
plt.show()

first_words, first_iso = test_pairs[0]
year, month, day = (int(field) for field in first_iso.split("-"))
words_of = {  # the source words that spell each part of the date
    "year": {word for style in range(3) for word in year_in_words(year, style)},
    "month": {MONTHS[month - 1]},
    "day": set(day_in_words(day)),
}
part_written = ["year"] * 4 + ["-"] + ["month"] * 2 + ["-"] + ["day"] * 2 + ["-"]  # + </s>
weights = examples[0].maps["cross"][1][0]  # layer 2, head 1: (target rows, source words)
print(f"{'row reads':>9s} {'writes':>6s} {'part':>5s}  {'weighs most':12s} weight")
on_own_part = []
for row, written in enumerate([*first_iso, "</s>"]):
    key = int(weights[row].argmax())
    print(
        f"{examples[0].target[row]:>9s} {written:>6s} {part_written[row]:>5s}  "
        f"{first_words[key]:12s} {weights[row, key]:.2f}"
    )
    if part_written[row] != "-":
        on_own_part.append(first_words[key] in words_of[part_written[row]])
print(
    f"{sum(on_own_part)} of the {len(on_own_part)} rows that write a digit weigh a word of "
    f"that digit's part of the date most"
)
# The text below relies on these: keep them true.
assert sum(on_own_part) > len(on_own_part) / 2, "the text says most digit rows do"
position = {
    part: [i for i, w in enumerate(first_words) if w in words] for part, words in words_of.items()
}
assert max(position["month"] + position["day"]) < min(position["year"]), (
    "the text says the month and the day come before the year in this source"
)

# %% [markdown]
# Most of the rows that write a digit weigh a word of that digit's own part of the date most
# (the count is printed above). On the whole, then, the year's digits are read from the
# year's words near the end of the source, and the month's and the day's from the words near
# the start. Not every row follows the pattern: the list shows which rows weigh another word
# most, and how heavily. One head is only one route from the source to a prediction; the
# other heads, the first layer and the decoder's own self-attention carry the rest.

# %%
controls = interact_heads(examples)

# %% [markdown]
# **bertviz** {cite:p}`vig2019multiscale` draws the same weights interactively: the head view
# shows the lines from each token to the tokens it attends to, one colour per head (hover over
# a token, click a head's colour to show or hide it), and the model view shows every head of
# every layer at once as thumbnails. `course.viz.attention_views` runs bertviz with its
# JavaScript libraries inside the page, so the views work offline; in JupyterLab they draw
# when their cell runs. Below, the first example's encoder self-attention, decoder
# self-attention and cross-attention.

# %%
first = examples[0]
views = {
    "encoder_attention": [w[None] for w in first.maps["encoder"]],  # (1, heads, m, m) per layer
    "decoder_attention": [w[None] for w in first.maps["decoder"]],
    "cross_attention": [w[None] for w in first.maps["cross"]],
    "encoder_tokens": list(first.source),
    "decoder_tokens": list(first.target),
}
head_view(**views)

# %%
model_view(**views)

# %%
print(f"lecture ran in {time.perf_counter() - LECTURE_START:.0f} s")
# The summary below quotes these findings: keep it true.
assert max(parts, key=parts.get) == "feed-forward networks", "the summary: FFNs are largest"
assert parts["feed-forward networks"] < base.total / 2, "the summary says less than half"
assert f"{base.total / 1e6:.1f}M" == "63.1M", "the summary quotes the base model's count"

# %% [markdown]
# ## Summary
#
# * An encoder block is self-attention and a position-wise feed-forward network, each with a
#   residual connection and a LayerNorm; ours matches its equations, and LayerNorm by hand
#   matches `nn.LayerNorm`.
# * A residual connection adds the sublayer's output to its input, $x + F(x)$; it does not
#   concatenate them, whatever a seed slide says.
# * A residual layer's Jacobian is $I + \partial F/\partial x$: through 24 layers the gradient
#   keeps its size with residuals and vanishes without them (and without normalisation).
# * Post-norm and pre-norm differ in where the LayerNorm sits; the deep-stack experiment shows
#   how each trains with and without warm-up.
# * The decoder adds masked self-attention and cross-attention; padding and causal masks
#   combine with AND.
# * Our encoder–decoder equals `nn.Transformer` to float64 rounding, matches Lecture 4's GRU
#   with attention on the dates (a tie within the spread between machines), beats it on
#   sorting digits with the same recipe (on every seed, by more than the spread between
#   seeds), and decodes with Lecture 4's greedy and beam search. At the paper's scale both
#   Transformers beat every
#   earlier English→German system in its Table 2, the base model at the lowest training cost
#   in the table.
# * The feed-forward networks are the largest part of the parameter count, though less than
#   half of it; the base model counts 63.1M.
#
# **Next:** Assignment 6 (`a6_transformer`) has you write, in NumPy, RMSNorm (the norm of
# LLaMA and T5) with its backward pass, an encoder block in both norm orders, the decoder's
# mask for left-padded batches and caches, and the parameter count of any configuration.
