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
# # Assignment 7: BERT's inputs, its tokeniser and its features
#
# Lecture 7 pretrained a tiny BERT with the helpers of `course.data.bert_inputs` and
# `course.data.wordpiece`. Here you write what those helpers do yourself, in NumPy and plain
# Python, in forms the lecture does not use: masking for the masked language model with any
# selection rate and any split between [MASK], random and kept tokens, and with special ids
# that are not the first few numbers; WordPiece tokenisation with any continuation prefix and
# a limit on word length; next-sentence pairs with a boolean label; and the six ways of
# reading features out of BERT's layers that the BERT paper compares.
#
# **Goals.** After this assignment you can
#
# 1. corrupt a batch of token ids for masked language modelling, and check a random procedure
#    by its statistics (Part A);
# 2. tokenise a word with WordPiece's greedy longest-match-first rule (Part B);
# 3. build next-sentence-prediction pairs from documents (Part C);
# 4. combine BERT's layers into token features as in the feature-based experiments of the
#    BERT paper (Part D);
# 5. say why BERT does not always replace a selected token by [MASK], and what became of
#    next-sentence prediction (Part E, written).
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off, where and by how much), and a **hidden test**
#   that runs at grading time on other inputs (other selection rates and splits, BERT's own
#   special ids, tiny vocabularies, other prefixes and limits, documents of very different
#   lengths, one layer and twelve, batches...) and checks that bad input raises `ValueError`.
#   Random procedures are judged by their **statistics** over many draws, with tolerances of
#   about five standard deviations, never by one exact sequence of random numbers: draw them
#   in any order you like. Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy and plain Python. During the hidden tests the helpers of the `course` package (among
#   them `course.data.bert_inputs`, `course.data.wordpiece` and `course.models.bert`),
#   `transformers`' `DataCollatorForLanguageModeling`, its BERT tokenisers and its pipelines, the
#   `tokenizers` library and `torch.bernoulli` are replaced by traps: calling them from your
#   functions fails the test. (`course.checks` is allowed.) The visible tests run your functions
#   under the same rule and say so when one of them calls a forbidden routine; their data and
#   expected values are in `course/checks/a7_bert.py`.
#
# Autograded: 13 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a7 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a7_bert/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a7_bert import check_part_a, check_part_b, check_part_c, check_part_d

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## Part A: masking for the masked language model (4 points)
#
# BERT learns by filling in blanks. Of the positions of a batch that hold an **ordinary**
# token (not padding, not [CLS], [SEP] or any other special token), each is **selected**
# independently with probability $p$ ($p = 0.15$ in BERT). The model must predict the
# original token at each selected position, whatever the input shows there, which is
#
# | with probability | the input shows |
# | --- | --- |
# | $m$ (0.8 in BERT) | the [MASK] token |
# | $r$ (0.1 in BERT) | a random ordinary token, drawn uniformly (it may happen to be the original) |
# | $1 - m - r$ (0.1 in BERT) | the original token, unchanged |
#
# Implement `mlm_mask(ids, special_ids, vocab_size, mask_id, seed, p=0.15, mask_share=0.8,
# random_share=0.1)`:
#
# * `ids`: integers in $0, \dots, |\mathcal{V}| - 1$ of any shape (a list, a sequence (T,), a
#   batch (B, T)...); `special_ids`: a list of the ids that are never selected (padding
#   among them). They need not be the first few numbers: in the released BERT, [PAD] is 0 and
#   [UNK], [CLS], [SEP], [MASK] are 100 to 103. The **ordinary** ids are all the others in
#   $0, \dots, |\mathcal{V}| - 1$; random tokens are drawn uniformly from them.
# * `seed`: an integer; draw everything from `np.random.default_rng(seed)`, so that the same
#   seed gives the same result. How many numbers you draw, and in what order, is up to you.
# * Return the tuple `(corrupted, labels)`, two new `int64` arrays of the shape of `ids`:
#   `corrupted` is the input with the selected positions replaced as in the table, and
#   `labels` holds the original id at each selected position and $-100$ everywhere else
#   (the index that `torch.nn.functional.cross_entropy` ignores).
#
# **Bad input** raises `ValueError`: ids that are not integers (booleans included) or lie
# outside $0, \dots, |\mathcal{V}| - 1$, a special id or a `mask_id` outside that range, $p$
# outside $(0, 1]$, shares that are negative or add up to more than 1, and a vocabulary with
# no ordinary id.


# %% nbgrader={"grade": false, "grade_id": "mlm_mask", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mlm_mask(
    ids: np.ndarray | list,
    special_ids: list[int],
    vocab_size: int,
    mask_id: int,
    seed: int,
    p: float = 0.15,
    mask_share: float = 0.8,
    random_share: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """Select ordinary positions with probability p and corrupt them for the MLM objective.

    Args:
        ids: token ids, any shape S, in 0..vocab_size - 1.
        special_ids: ids that are never selected (padding, [CLS], [SEP], [MASK]...).
        vocab_size: |V|.
        mask_id: the id of [MASK].
        seed: the seed of np.random.default_rng.
        p: the probability that an ordinary position is selected, in (0, 1].
        mask_share, random_share: the probabilities that a selected position shows [MASK],
            or a random ordinary token (the rest keep their token).

    Returns:
        (corrupted, labels): int64 arrays of shape S; labels is -100 where not selected.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    source = np.asarray(ids)
    if source.dtype == np.bool_ or not np.issubdtype(source.dtype, np.integer):
        raise ValueError(f"ids must be integers, got dtype {source.dtype}")
    if isinstance(vocab_size, (bool, np.bool_)) or not isinstance(vocab_size, (int, np.integer)):
        raise ValueError(f"vocab_size must be an integer, got {vocab_size!r}")
    if source.size and (source.min() < 0 or source.max() >= vocab_size):
        raise ValueError(f"ids must lie in 0..{vocab_size - 1}, got {source.min()}..{source.max()}")
    reserved = np.unique(np.asarray(list(special_ids), dtype=np.int64))
    if reserved.size and (reserved[0] < 0 or reserved[-1] >= vocab_size):
        raise ValueError(f"special ids must lie in 0..{vocab_size - 1}, got {reserved.tolist()}")
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id = {mask_id} lies outside 0..{vocab_size - 1}")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must be a probability in (0, 1], got {p!r}")
    shares = f"{mask_share!r} and {random_share!r}"
    if min(mask_share, random_share) < 0 or mask_share + random_share > 1 + 1e-12:
        raise ValueError(f"the shares must be >= 0 with a sum <= 1, got {shares}")
    pool = np.setdiff1d(np.arange(vocab_size), reserved)  # the ordinary ids, sorted
    if pool.size == 0:
        raise ValueError(f"every id of a vocabulary of {vocab_size} is special: nothing to draw")
    generator = np.random.default_rng(seed)
    picked = ~np.isin(source, reserved) & (generator.random(source.shape) < p)  # (S)
    fate = generator.random(source.shape)  # one uniform number per position decides its fate
    stand_ins = pool[generator.integers(0, pool.size, size=source.shape)]  # (S)
    corrupted = np.array(source, dtype=np.int64)
    hidden = picked & (fate < mask_share)
    swapped = picked & (fate >= mask_share) & (fate < mask_share + random_share)
    corrupted[hidden] = mask_id
    corrupted[swapped] = stand_ins[swapped]
    labels = np.full(source.shape, -100, dtype=np.int64)
    labels[picked] = source[picked]
    return corrupted, labels
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# A batch of 300 sequences of 64 positions in the course's numbering ([PAD] 0, [UNK] 1,
# [CLS] 2, [SEP] 3, [MASK] 4, ordinary tokens 5 to 999), each [CLS] text [SEP] and padding.
# The test counts: the share of ordinary positions that are selected, and the shares of the
# selected ones that show [MASK], another token or their own, each within five binomial
# standard deviations of its probability. (A random token equals the original with
# probability $1/N$, $N$ the number of ordinary ids, so "unchanged" happens with probability
# $1 - m - r + r/N$.)


# %% nbgrader={"grade": true, "grade_id": "mlm_mask_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(mlm_mask)

# %% nbgrader={"grade": true, "grade_id": "mlm_mask_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): mlm_mask on unseen batches, judged by statistics within about five
# standard deviations: BERT's special ids (0 and 100 to 103), ids that are not consecutive,
# p = 0.05, 0.5 and 1, shares such as (1, 0), (0, 1) and (0, 0), a vocabulary with a single
# ordinary id, sequences of special tokens only, int32 ids and lists; random tokens uniform
# over the ordinary ids; each position selected independently (the number selected per
# sequence varies as a binomial count); same seed, same result; inputs unchanged;
# ValueError for each bad input listed above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a7_bert import check_mlm_mask

check_mlm_mask(mlm_mask)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): how much of a sentence does the model see?
#
# Ten thousand sequences of 20 ordinary tokens, masked as in BERT: how often is a sequence
# left untouched, and how many positions show [MASK]? With the per-position rule the count
# selected per sequence is binomial, so a short sequence sometimes has nothing to predict.

# %%
try:
    batch_x = np.full((10_000, 20), 10)
    _, labels_x = mlm_mask(batch_x, [0, 1, 2, 3, 4], 100, 4, seed=0)
    per_row_x = (labels_x != -100).sum(axis=1)
    print("positions selected per sequence of 20:", np.bincount(per_row_x)[:8], "...")
    print(f"sequences with nothing to predict: {np.mean(per_row_x == 0):.3f} "
          f"(binomial: {0.85 ** 20:.3f})")  # fmt: skip
except NotImplementedError:
    print("Implement Part A first, then run this cell again.")

# %% [markdown]
# ## Part B: WordPiece, greedy longest match first (3 points)
#
# BERT splits each word into pieces of its vocabulary. The first piece of a word is written
# as it is; every later piece carries a **continuation prefix** ("##" in BERT, "@@" or none
# in other models) so that "playing" may become ["play", "##ing"]. The rule is greedy:
#
# 1. if the word has more than `max_input_chars` characters, it is the unknown token;
# 2. otherwise, from the start of the word, take the **longest** prefix of the rest that is
#    in the vocabulary (with the continuation prefix in front, except for the first piece);
# 3. repeat on what is left; if at some point no prefix of the rest is in the vocabulary,
#    the **whole word** becomes the unknown token (not the pieces found so far, and the rule
#    does not go back to try a shorter piece).
#
# Implement `wordpiece(word, vocab, max_input_chars=100, unk_token="[UNK]", prefix="##")`:
# `word` a string, `vocab` a list of tokens (strings). Return the list of pieces (strings).
# Characters are Python's (a string's `len`).
#
# **Bad input** raises `ValueError`: a `word` that is not a string, is empty or contains
# whitespace (it is two words), a vocabulary without `unk_token`, and `max_input_chars` that
# is not an integer $\ge 1$.


# %% nbgrader={"grade": false, "grade_id": "wordpiece", "locked": false, "schema_version": 3, "solution": true, "task": false}
def wordpiece(
    word: str,
    vocab: list[str],
    max_input_chars: int = 100,
    unk_token: str = "[UNK]",
    prefix: str = "##",
) -> list[str]:
    """Split one word into vocabulary pieces, greedily, longest match first.

    Args:
        word: a non-empty string without whitespace.
        vocab: the tokens, a list of strings containing unk_token.
        max_input_chars: longer words are [unk_token].
        unk_token: the unknown token.
        prefix: the continuation prefix of every piece but the first.

    Returns:
        The pieces, e.g. ["play", "##ing"], or [unk_token].

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    if not isinstance(word, str) or not word or any(ch.isspace() for ch in word):
        raise ValueError(f"word must be a non-empty string without whitespace, got {word!r}")
    known = frozenset(vocab)
    if unk_token not in known:
        raise ValueError(f"the vocabulary has no unknown token {unk_token!r}")
    whole = isinstance(max_input_chars, (int, np.integer))
    if isinstance(max_input_chars, (bool, np.bool_)) or not whole:
        raise ValueError(f"max_input_chars must be an integer, got {max_input_chars!r}")
    if max_input_chars < 1:
        raise ValueError(f"max_input_chars must be at least 1, got {max_input_chars}")
    if len(word) > max_input_chars:
        return [unk_token]
    found: list[str] = []
    rest = word
    while rest:
        lead = prefix if found else ""
        size = len(rest)
        while size and lead + rest[:size] not in known:
            size -= 1  # shrink the candidate from the right
        if size == 0:
            return [unk_token]  # this part of the word is not covered: the whole word is lost
        found.append(lead + rest[:size])
        rest = rest[size:]
    return list(found)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# The expected pieces come from the `tokenizers` library's WordPiece model
# (`tokenizers.models.WordPiece(vocab, unk_token, max_input_chars_per_word,
# continuing_subword_prefix)`) on the same vocabulary.

# %% nbgrader={"grade": true, "grade_id": "wordpiece_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(wordpiece)

# %% nbgrader={"grade": true, "grade_id": "wordpiece_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): wordpiece against the tokenizers library's WordPiece model on
# unseen vocabularies and words: random vocabularies over small alphabets with dozens of
# words, vocabularies where greedy matching fails although another split exists, the
# prefixes "##", "@@" and none, other unknown tokens, words of exactly and just over
# max_input_chars characters, words that are one token, accented and non-Latin characters,
# vocabularies given as tuples; inputs unchanged; ValueError for each bad input listed above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a7_bert import check_wordpiece

check_wordpiece(wordpiece)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your tokeniser against Lecture 7's
#
# `course.data.wordpiece` learns a vocabulary from counted words with the likelihood
# criterion and tokenises with a `WordPiece` object. Learn a small vocabulary from a few
# words, then compare your `wordpiece` with its `tokenize_word` on those words and others.

# %%
from course.data.wordpiece import WordPiece, count_words, learn_wordpiece

texts_x = ["the player played and the players play", "unplayable plays are replayed"]
learned_x = learn_wordpiece(count_words(texts_x), 60)
lecture_x = WordPiece(learned_x.vocab, max_chars=12)
try:
    for word_x in ("played", "replaying", "plays", "unplayed", "displayed", "xylophone"):
        mine_x = wordpiece(word_x, learned_x.vocab, 12)
        theirs_x = lecture_x.tokenize_word(word_x)
        print(f"{word_x:10s} {' '.join(mine_x):32s} {'same' if mine_x == theirs_x else theirs_x}")
except NotImplementedError:
    print("Implement Part B first, then run this cell again.")

# %% [markdown]
# ## Part C: next-sentence-prediction pairs (3 points)
#
# BERT's second objective: given two segments A and B, is B the sentence that follows A? The
# pairs come from documents, each a list of sentences. For every sentence that has a
# successor in its document (document by document, sentence by sentence, in order), make one
# pair (a, b, is_next) with `a` that sentence and
#
# * with probability `p_next`: `b` the **next sentence** of the same document, `is_next =
#   True`;
# * otherwise: `b` a **random sentence of another document**, `is_next = False`. Choose the
#   document uniformly among the other non-empty documents, then a sentence of it uniformly.
#
# Implement `nsp_pairs(documents, seed, p_next=0.5)`, drawing from
# `np.random.default_rng(seed)` (the same seed gives the same pairs; the order of your draws
# is up to you), and return the list of tuples `(a, b, is_next)` with `is_next` a `bool`.
# A document of one sentence makes no pair but may be drawn from; an empty one does neither.
#
# **Bad input** raises `ValueError`: `documents` given as a string, a document that is a
# string instead of a list of sentences, a sentence that is not a string, fewer than two
# non-empty documents, and `p_next` outside $[0, 1]$.


# %% nbgrader={"grade": false, "grade_id": "nsp_pairs", "locked": false, "schema_version": 3, "solution": true, "task": false}
def nsp_pairs(
    documents: list[list[str]], seed: int, p_next: float = 0.5
) -> list[tuple[str, str, bool]]:
    """Next-sentence-prediction pairs from documents.

    Args:
        documents: each document a list of sentences (strings).
        seed: the seed of np.random.default_rng.
        p_next: the probability of keeping the true next sentence, in [0, 1].

    Returns:
        One (a, b, is_next) per sentence with a successor, in document order.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    if isinstance(documents, str):
        raise ValueError("documents must be a list of documents, not one string")
    books = list(documents)
    for index, book in enumerate(books):
        if isinstance(book, str):
            raise ValueError(f"document {index} is a string; it must be a list of sentences")
        if not all(isinstance(line, str) for line in book):
            raise ValueError(f"document {index} holds something that is not a sentence (str)")
    filled = [index for index, book in enumerate(books) if len(book) > 0]
    if len(filled) < 2:
        raise ValueError(f"NotNext pairs need two non-empty documents, got {len(filled)}")
    if not (0.0 <= p_next and p_next <= 1.0):
        raise ValueError(f"p_next must be a probability in [0, 1], got {p_next!r}")
    draw = np.random.default_rng(seed)
    made: list[tuple[str, str, bool]] = []
    for home, book in enumerate(books):
        for position in range(len(book) - 1):
            if draw.random() < p_next:  # IsNext: the true successor
                made.append((book[position], book[position + 1], True))
            else:  # NotNext: another non-empty document, then one of its sentences
                elsewhere = [index for index in filled if index != home]
                away = books[elsewhere[draw.integers(len(elsewhere))]]
                made.append((book[position], away[draw.integers(len(away))], False))
    return made
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C
#
# Forty documents of five sentences each, the sentence names saying where they come from.

# %% nbgrader={"grade": true, "grade_id": "nsp_pairs_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(nsp_pairs)

# %% nbgrader={"grade": true, "grade_id": "nsp_pairs_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): nsp_pairs on unseen documents of very different lengths (one
# sentence, empty documents, a long one): pairs in order, is_next pairs truly consecutive,
# random sentences never from a's document, the share of is_next within five standard
# deviations of p_next = 0.5, 0.2, 0 and 1, the other document chosen uniformly and the
# sentence within it uniformly (chi-squared tests), the same pairs for the same seed; inputs
# unchanged; ValueError for each bad input listed above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a7_bert import check_nsp_pairs

check_nsp_pairs(nsp_pairs)
### END HIDDEN TESTS

# %% [markdown]
# ## Part D: features from BERT's layers (3 points)
#
# BERT can serve as a **feature extractor**: run it once, keep the vectors of some of its
# layers, and train a small model on them. A BERT with $L$ layers gives $L + 1$ arrays of
# states: $h^{(0)}$, the output of its embedding layer, then $h^{(1)}, \dots, h^{(L)}$, one
# per Transformer layer (this is what `transformers` returns with `output_hidden_states=True`,
# and `course.models.bert`'s `hidden_states`). The BERT paper compares six ways of reading
# them, for named-entity recognition with BERT-base ($L = 12$):
#
# | `strategy` | features of a token | needs |
# | --- | --- | --- |
# | `"first"` | $h^{(0)}$ (the embeddings) | $L \ge 1$ |
# | `"last"` | $h^{(L)}$ | $L \ge 1$ |
# | `"sum_all"` | $h^{(1)} + \dots + h^{(L)}$ (the $L$ layers, not the embeddings: "12 + ... + 1") | $L \ge 1$ |
# | `"second_to_last"` | $h^{(L-1)}$ | $L \ge 2$ |
# | `"sum_last_four"` | $h^{(L-3)} + h^{(L-2)} + h^{(L-1)} + h^{(L)}$ | $L \ge 4$ |
# | `"concat_last_four"` | $[h^{(L-3)}; h^{(L-2)}; h^{(L-1)}; h^{(L)}]$, along the feature axis, in that order | $L \ge 4$ |
#
# Implement `layer_features(hidden_states, strategy)`: `hidden_states` an array of shape
# (L + 1, …, H), layers first and features last, e.g. (L + 1, T, H) for one sentence or
# (L + 1, B, T, H) for a batch, **or** a list of $L + 1$ arrays of one shape (…, H). Return a
# new `float64` array (not a view of the input) of shape (…, H), or (…, 4H) for
# `"concat_last_four"`.
#
# **Bad input** raises `ValueError`: an unknown strategy (the message lists the six names), a
# strategy that needs more layers than there are (the message says how many it needs), fewer
# than two arrays of states (no Transformer layer), arrays of different shapes, and states
# with no feature axis.


# %% nbgrader={"grade": false, "grade_id": "layer_features", "locked": false, "schema_version": 3, "solution": true, "task": false}
def layer_features(hidden_states: np.ndarray | list[np.ndarray], strategy: str) -> np.ndarray:
    """Combine h^(0), ..., h^(L) into token features as in the BERT paper's table.

    Args:
        hidden_states: (L + 1, ..., H), or a list of L + 1 arrays (..., H); h^(0) first.
        strategy: one of the six names of the table above.

    Returns:
        A new float64 array of shape (..., H), or (..., 4H) for "concat_last_four".

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    depth_needed = {"first": 1, "last": 1, "sum_all": 1, "second_to_last": 2,
                    "sum_last_four": 4, "concat_last_four": 4}  # fmt: skip
    if strategy not in depth_needed:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {sorted(depth_needed)}")
    given = hidden_states if isinstance(hidden_states, np.ndarray) else list(hidden_states)
    layers = [np.asarray(state) for state in given]  # h^(0), ..., h^(L)
    if len(layers) < 2:
        raise ValueError(f"expected h^(0) and at least one layer, got {len(layers)} arrays")
    shapes = {np.shape(state) for state in layers}
    if len(shapes) > 1:
        raise ValueError(f"the layers' states have different shapes: {sorted(shapes)}")
    if np.ndim(layers[0]) < 1:
        raise ValueError("each layer's states need a feature axis, shape (..., H)")
    depth = len(layers) - 1  # L
    needed = depth_needed[strategy]
    if depth < needed:
        raise ValueError(f"{strategy!r} needs at least {needed} layers, got L = {depth}")
    stack = np.stack([np.asarray(state, dtype=np.float64) for state in layers])  # (L+1, ..., H)
    if strategy == "first":
        return stack[0].copy()
    if strategy == "last":
        return stack[depth].copy()
    if strategy == "second_to_last":
        return stack[depth - 1].copy()
    if strategy == "sum_all":
        return stack[1:].sum(axis=0)
    if strategy == "sum_last_four":
        return stack[depth - 3 :].sum(axis=0)
    return np.concatenate(list(stack[depth - 3 :]), axis=-1)  # (..., 4H)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# $L = 5$ layers of states for $T = 2$ tokens with $H = 3$ features, whose numbers say where
# they are: $h^{(l)}_{t,k} = 100\,l + 10\,t + k$.

# %% nbgrader={"grade": true, "grade_id": "layer_features_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(layer_features)

# %% nbgrader={"grade": true, "grade_id": "layer_features_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): layer_features against sums and concatenations written out layer
# by layer, for L = 1, 2, 4 and 12 (BERT-base), one token and one feature, batches, lists
# and tuples of arrays, float32 and integer states, non-contiguous arrays; results must be
# new arrays; inputs unchanged; ValueError for unknown names (listing the six), strategies
# that need more layers (saying how many), a single array of states and layers of different
# shapes.
### BEGIN HIDDEN TESTS
from autograder.hidden.a7_bert import check_layer_features

check_layer_features(layer_features)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): features of Lecture 7's tiny BERT
#
# A `course.models.bert.BertModel` with random weights (two layers would allow only three
# strategies; this one has four): its `hidden_states`, as NumPy arrays, are what
# `layer_features` takes. How similar are the features of two tokens under each strategy?

# %%
import torch

from course.models.bert import BertConfig, BertModel

torch.manual_seed(0)
bert_x = BertModel(BertConfig(vocab_size=50, d_model=16, num_layers=4, d_ff=32)).eval()
with torch.no_grad():
    out_x = bert_x(torch.tensor([[2, 10, 11, 12, 3]]), torch.zeros(1, 5, dtype=torch.long))
states_x = [h[0].numpy() for h in out_x.hidden_states]  # L + 1 = 5 arrays (T, H)
try:
    for strategy_x in ("first", "last", "sum_all", "second_to_last", "sum_last_four",
                       "concat_last_four"):  # fmt: skip
        f_x = layer_features(states_x, strategy_x)
        cosine_x = f_x[1] @ f_x[2] / np.linalg.norm(f_x[1]) / np.linalg.norm(f_x[2])
        print(f"{strategy_x:17s} shape {f_x.shape}, cosine of tokens 1 and 2: {cosine_x:+.3f}")
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# ## Part E: why not always [MASK]? And what became of NSP? (2 points, graded by hand)
#
# In 4 to 8 sentences. BERT replaces a selected token by [MASK] only 80% of the time. What
# would go wrong if it always did, given that [MASK] never appears when the model is
# fine-tuned or used as a feature extractor? What do the 10% of random tokens and the 10% of
# unchanged tokens each add (what must the model do at **every** position, since it cannot
# tell which ones were changed)? Then: RoBERTa (Liu et al., 2019) trained without the
# next-sentence objective and did as well or better. Give one reason why NSP was a weak
# signal, as its NotNext pairs are built in Part C.

# %% [markdown] nbgrader={"grade": true, "grade_id": "mask_and_nsp", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** If every selected token became [MASK], the model would only ever have to
# predict at [MASK] positions, and the representations of the ordinary tokens it sees would
# not be trained to carry a prediction of themselves: pretraining inputs would contain
# [MASK] tokens, fine-tuning inputs none, a mismatch between the two. Keeping 10% of the
# selected tokens unchanged makes the model predict at positions that look ordinary, and
# pulls every token's output representation towards its observed word; replacing 10% by a
# random token means an ordinary-looking token may be wrong, so the model cannot simply copy
# its input and must check every token against its context. Since the model cannot tell which
# visible tokens were selected, it has to keep a good contextual representation of every
# position, which is what fine-tuning and feature extraction use. (The cost is small: only
# 1.5% of all tokens are random, too few to harm the language model.) Next-sentence
# prediction was weak because a NotNext segment comes from another document: it usually
# differs in topic, so the task can be solved by topic matching rather than by coherence
# across sentences, and it forced short pairs of segments. RoBERTa found that packing long
# contiguous text without NSP matched or improved downstream results; ALBERT replaced NSP by
# sentence-order prediction (two consecutive segments, swapped or not), which needs
# coherence.
#
# *Grading notes: 1 point for the mismatch between pretraining (with [MASK]) and fine-tuning
# (without) and what random/unchanged tokens force (a good representation at every position,
# no blind copying); 1 point for NSP being solvable by topic (the random B comes from another
# document), with RoBERTa's finding or ALBERT's sentence-order prediction.*
