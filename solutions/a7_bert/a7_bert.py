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
# that are not the first few numbers; WordPiece over a batch of texts, with BERT's split into
# words and the character span of every token; next-sentence pairs with a boolean label; and
# the gradient of a learned mix of BERT's layers, pooled over the real tokens of a padded
# batch.
#
# **Goals.** After this assignment you can
#
# 1. corrupt a batch of token ids for masked language modelling, and check a random procedure
#    by its statistics (Part A);
# 2. tokenise a batch of texts with WordPiece and map every token back onto the characters it
#    came from, as fast tokenisers do (Part B);
# 3. build next-sentence-prediction pairs from documents (Part C);
# 4. backpropagate by hand through a learned mix of BERT's layers and a mean over the real
#    tokens of a padded batch (Part D);
# 5. predict, measure and explain how a learned mix's gradient behaves, and say what became
#    of next-sentence prediction (Part E, written).
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off, where and by how much), and a **hidden test**
#   that runs at grading time on other inputs (other selection rates and splits, BERT's own
#   special ids, tiny vocabularies, other prefixes and limits, Unicode punctuation, documents
#   of very different lengths, one layer and twelve, padding holding `nan`...) and checks that
#   bad input raises `ValueError`.
#   Random procedures are judged by their **statistics** over many draws, with tolerances of
#   about five standard deviations, never by one exact sequence of random numbers: draw them
#   in any order you like. Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy and plain Python. During the hidden tests the helpers of the `course` package (among
#   them `course.data.bert_inputs`, `course.data.wordpiece` and `course.models.bert`),
#   `transformers`' `DataCollatorForLanguageModeling` and its BERT tokenisers, the `tokenizers`
#   library (its `Tokenizer`, `WordPiece` model and pre-tokenisers), `torch.bernoulli`, the
#   softmaxes of torch and scipy, and autograd (`torch.autograd`, `Tensor.backward`,
#   `torch.func`) are replaced by traps: calling them from your functions fails the test. (`course.checks` is allowed.) The visible tests run your functions
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
# ## Part B: WordPiece over a batch of texts, with character offsets (3 points)
#
# Lecture 7 tokenises one word at a time. A tokeniser in use reads whole texts, and "fast"
# tokenisers (`return_offsets_mapping=True` in `transformers`) also say, for every token,
# which characters of the text it came from: a span $(s, e)$ with `text[s:e]` the token's
# characters. Named-entity recognition and question answering need these spans to map the
# model's answer back onto the text. Here you write BERT's pre-tokenisation, WordPiece and
# the offsets, for a batch of texts.
#
# 1. **Words.** Cut each text at whitespace (a character `ch` with `ch.isspace()`), which is
#    dropped, and make every **punctuation** character a word of its own: a character in
#    `string.punctuation` (ASCII, `$`, `+`, `<` and `^` included) or whose Unicode category
#    (`unicodedata.category(ch)`) starts with `"P"` (`¿`, `«`, `—`...). Everything else stays
#    in its word: "don't!" is `don`, `'`, `t`, `!`; "€5" is one word. Nothing is lowercased.
# 2. **Pieces.** Each word is split greedily, longest match first, as in Lecture 7: if it has
#    more than `max_input_chars` characters it is the unknown token; otherwise take the
#    longest prefix of the rest of the word that is in the vocabulary, every piece but the
#    first with the continuation **prefix** in front ("##" in BERT, "@@" or none elsewhere);
#    if no prefix of the rest is in the vocabulary, the **whole word** is the unknown token.
# 3. **Offsets.** A piece spans the characters it covers in the text (the prefix is not in
#    the text: `##ing` in "playing" at the start of a text spans $(4, 7)$); the unknown token
#    spans its whole word. Offsets count Python characters, from 0, into the original text.
#
# Implement `wordpiece_offsets(texts, vocab, max_input_chars=100, unk_token="[UNK]",
# prefix="##")`: `texts` a list of strings, `vocab` a list of tokens (strings). Return one
# list per text, of tuples `(token, start, end)` with `start` and `end` Python `int`s, in the
# order of the text. An empty text, or one of whitespace only, gives an empty list.
#
# **Bad input** raises `ValueError`: `texts` given as one string instead of a list, a text
# that is not a string, a vocabulary without `unk_token`, and `max_input_chars` that is not
# an integer $\ge 1$.


# %% nbgrader={"grade": false, "grade_id": "wordpiece_offsets", "locked": false, "schema_version": 3, "solution": true, "task": false}
import string
import unicodedata


def wordpiece_offsets(
    texts: list[str],
    vocab: list[str],
    max_input_chars: int = 100,
    unk_token: str = "[UNK]",
    prefix: str = "##",
) -> list[list[tuple[str, int, int]]]:
    """BERT's pre-tokenisation and greedy WordPiece, with each token's character span.

    Args:
        texts: a batch of strings.
        vocab: the tokens, a list of strings containing unk_token.
        max_input_chars: longer words are [unk_token].
        unk_token: the unknown token.
        prefix: the continuation prefix of every piece of a word but the first.

    Returns:
        For each text, its tokens as (token, start, end), text[start:end] the token's
        characters (its whole word for unk_token).

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    if type(texts) is str:
        raise ValueError("texts must be a list of texts, not one string")
    batch = list(texts)
    strays = [index for index, text in enumerate(batch) if not isinstance(text, str)]
    if strays:
        raise ValueError(f"text {strays[0]} is a {type(batch[strays[0]]).__name__}, not a string")
    known = frozenset(vocab)
    if unk_token not in known:
        raise ValueError(f"the vocabulary has no unknown token {unk_token!r}")
    if isinstance(max_input_chars, (bool, np.bool_)) or not isinstance(
        max_input_chars, (int, np.integer)
    ):
        raise ValueError(f"max_input_chars must be an integer, got {max_input_chars!r}")
    if max_input_chars < 1:
        raise ValueError(f"max_input_chars must be at least 1, got {max_input_chars}")
    longest = max((len(token) for token in known), default=0)  # no piece is longer

    def is_mark(ch: str) -> bool:
        return ch in string.punctuation or unicodedata.category(ch)[0] == "P"

    def spans_of(text: str) -> list[tuple[int, int]]:
        """The (start, end) of each word: runs between whitespace, marks on their own."""
        cuts, begin = [], None
        for at, ch in enumerate(text + " "):  # a space at the end closes the last word
            if ch.isspace() or is_mark(ch):
                if begin is not None:
                    cuts.append((begin, at))
                begin = None
                if not ch.isspace():
                    cuts.append((at, at + 1))
            elif begin is None:
                begin = at
        return cuts

    def split(text: str, first: int, last: int) -> list[tuple[str, int, int]]:
        if last - first > max_input_chars:
            return [(unk_token, first, last)]
        found, here = [], first
        while here < last:
            lead = prefix if here > first else ""
            stop = min(last, here + longest)
            while stop > here and lead + text[here:stop] not in known:
                stop -= 1
            if stop == here:  # nothing in the vocabulary starts here: the word is unknown
                return [(unk_token, first, last)]
            found.append((lead + text[here:stop], here, stop))
            here = stop
        return list(found)

    return [
        [token for first, last in spans_of(text) for token in split(text, first, last)]
        for text in batch
    ]
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Four texts (one of them empty) with `max_input_chars` 100 and 6, then two texts with the
# prefix "@@" and the unknown token "<unk>"; the expected tokens and spans are those of the
# `tokenizers` library (a `Tokenizer` with the `WordPiece` model and the `BertPreTokenizer`,
# whose `Encoding.offsets` are the spans).

# %% nbgrader={"grade": true, "grade_id": "wordpiece_offsets_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(wordpiece_offsets)

# %% nbgrader={"grade": true, "grade_id": "wordpiece_offsets_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): wordpiece_offsets against the tokenizers library (WordPiece model,
# BertPreTokenizer, Encoding.offsets) on unseen batches: random texts over small alphabets
# with spaces, tabs, newlines and punctuation, vocabularies where greedy matching fails
# although another split exists, the prefixes "##", "@@" and none, other unknown tokens,
# words of exactly and just over max_input_chars characters, accented, Japanese and Unicode
# punctuation characters, symbols that are not punctuation (€), empty texts and texts of
# whitespace only, vocabularies given as tuples; inputs unchanged; ValueError for each bad
# input listed above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a7_bert import check_wordpiece_offsets

check_wordpiece_offsets(wordpiece_offsets)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your tokeniser against Lecture 7's
#
# `course.data.wordpiece` learns a vocabulary from counted words with the likelihood
# criterion, and its `WordPiece.tokenize` lowercases a text and splits it into words its own
# way (runs of letters and digits). Learn a small vocabulary, then print your tokens with the
# characters each span covers, next to the lecture's tokens of the lowercased text.

# %%
from course.data.wordpiece import WordPiece, count_words, learn_wordpiece

texts_x = ["the player played and the players play", "unplayable plays are replayed"]
learned_x = learn_wordpiece(count_words(texts_x), 60)
lecture_x = WordPiece(learned_x.vocab, max_chars=12)
sentence_x = "The players re-played (unplayable?) plays."
try:
    mine_x = wordpiece_offsets([sentence_x, sentence_x.lower()], learned_x.vocab, 12)
    print(" ".join(f"{token}[{sentence_x[start:end]}]" for token, start, end in mine_x[0]))
    print("lowercased, yours:  ", [token for token, _, _ in mine_x[1]])
    print("lowercased, lecture:", lecture_x.tokenize(sentence_x))
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
# ## Part D: a learned mix of BERT's layers, pooled over a padded batch, and its gradient (3 points)
#
# Lecture 7 reads BERT's layers in the six fixed ways of the BERT paper. The alternative is to
# **learn** the mix with the task, as ELMo does and as Tenney et al. (2019) did to ask which
# layers of BERT each task uses: with the $L + 1$ arrays of states $h^{(0)}, \dots, h^{(L)}$
# (the embeddings, then one per Transformer layer), weights $w \in \mathbb{R}^{L+1}$ and a
# scale $\gamma$,
#
# $$s = \operatorname{softmax}(w), \qquad x_{b,t} = \gamma \sum_{j=0}^{L} s_j\, h^{(j)}_{b,t}.$$
#
# A sentence gets one vector, the **mean of its tokens' vectors over its real tokens**:
# with the attention mask $m_{b,t} = 1$ for a real token and $0$ for padding,
#
# $$u_b = \frac{\sum_t m_{b,t}\, x_{b,t}}{\sum_t m_{b,t}} \qquad (B, H).$$
#
# A classifier on $u$ gives a loss $\ell$, and training needs $\partial \ell / \partial w$ and
# $\partial \ell / \partial \gamma$. Backpropagation brings $G = \partial \ell / \partial u$
# (B, H) down to the pooling; you take it the rest of the way, **by hand**: derive the
# gradient through the mean, the sum over layers and the softmax.
#
# Implement `layer_mix_backward(hidden_states, w, gamma, attention_mask, grad_pooled)`:
#
# * `hidden_states`: an array of shape (L + 1, B, T, H), or a list of $L + 1$ arrays
#   (B, T, H); `w`: shape (L + 1,); `gamma`: a number; `attention_mask`: (B, T) of 0 and 1
#   (or booleans); `grad_pooled`: $G$, shape (B, H).
# * Return the tuple `(pooled, grad_w, grad_gamma)`: $u$ as a new `float64` array (B, H),
#   $\partial \ell / \partial w$ as a `float64` array (L + 1,), and $\partial \ell /
#   \partial \gamma$ as a Python `float`.
# * The states at padding positions may hold anything, `nan` included: they must not change
#   any result. The weights may be large ($w_j$ of $\pm 1000$): compute the softmax so that it
#   does not overflow.
#
# **Bad input** raises `ValueError`: states that are not (L + 1, B, T, H) (a list of arrays of
# different shapes included), a `w` of another length than $L + 1$, a `gamma` that is not a
# single real number (a boolean included), a mask of another shape than (B, T) or with values
# other than 0 and 1, a sequence with no real token (its mean does not exist), and a `G` of
# another shape than (B, H).


# %% nbgrader={"grade": false, "grade_id": "layer_mix_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numbers


def layer_mix_backward(
    hidden_states: np.ndarray | list[np.ndarray],
    w: np.ndarray,
    gamma: float,
    attention_mask: np.ndarray,
    grad_pooled: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The masked mean of gamma * sum_j softmax(w)_j h^(j), and the gradients of w and gamma.

    Args:
        hidden_states: (L + 1, B, T, H), or a list of L + 1 arrays (B, T, H); h^(0) first.
        w: the mixing weights before the softmax, (L + 1,).
        gamma: the scale.
        attention_mask: (B, T), 1 for a real token and 0 for padding.
        grad_pooled: the gradient of the loss with respect to the pooled vectors, (B, H).

    Returns:
        (pooled (B, H), grad_w (L + 1,), grad_gamma): float64 arrays and a float.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    given = hidden_states if isinstance(hidden_states, np.ndarray) else list(hidden_states)
    if not isinstance(given, np.ndarray) and len({np.shape(h) for h in given}) > 1:
        raise ValueError("the layers' states have different shapes")
    states = np.asarray(given, dtype=np.float64)  # (L+1, B, T, H)
    if states.ndim != 4 or 0 in states.shape:
        raise ValueError(f"hidden_states must be (L + 1, B, T, H), got shape {states.shape}")
    depth, rows, width, size = states.shape
    weights = np.asarray(w, dtype=np.float64)
    if weights.shape != (depth,):
        raise ValueError(f"w must have shape ({depth},), one weight per layer, got {weights.shape}")
    if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, numbers.Real):
        raise ValueError(f"gamma must be a single real number, got {gamma!r}")
    mask = np.asarray(attention_mask)
    if mask.shape != (rows, width):
        raise ValueError(f"attention_mask must have shape {(rows, width)}, got {mask.shape}")
    if not np.isin(mask, (0, 1)).all():
        raise ValueError("attention_mask must hold 0 and 1 only")
    real = mask.astype(bool)  # (B, T)
    counts = real.sum(axis=1)  # (B,)
    if (counts == 0).any():
        raise ValueError(f"sequence {int(np.argmin(counts))} has no real token: no mean")
    upstream = np.asarray(grad_pooled, dtype=np.float64)
    if upstream.shape != (rows, size):
        raise ValueError(f"grad_pooled must have shape {(rows, size)}, got {upstream.shape}")
    lifted = np.exp(weights - weights.max())
    share = lifted / lifted.sum()  # softmax(w), (L+1,)
    kept = np.where(real[None, :, :, None], states, 0.0)  # padding read as 0, nan or not
    means = kept.sum(axis=2) / counts[None, :, None]  # the masked mean of each layer, (L+1, B, H)
    blend = np.tensordot(share, means, axes=1)  # sum_j s_j mean_j, (B, H)
    scale = float(gamma)
    reach = np.einsum("jbh,bh->j", means, upstream)  # G . mean_j, summed over the batch
    grad_share = scale * reach  # d loss / d s_j
    grad_w = share * (grad_share - share @ grad_share)  # through the softmax's Jacobian
    return scale * blend, grad_w, float(np.sum(blend * upstream))
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# $L + 1 = 3$ arrays of states for $B = 2$ sentences of $T = 3$ positions with $H = 2$
# features, $h^{(j)}_{b,t,k} = 10\,j^2 + t + k$ at real positions and `nan` at padding; the
# first sentence has two real tokens, the second one. $w = (0, \ln 2, 0)$, so that
# $s = (1/4, 1/2, 1/4)$; $\gamma = 2$; $G = \begin{pmatrix} 1 & 0 \\ 0 & 2 \end{pmatrix}$.
# The expected values were computed by `torch.autograd`; the test also checks that the
# entries of `grad_w` add up to 0 (why is Part E's question) and that weights of $\pm 1000$
# give finite numbers.

# %% nbgrader={"grade": true, "grade_id": "layer_mix_backward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(layer_mix_backward)

# %% nbgrader={"grade": true, "grade_id": "layer_mix_backward_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): layer_mix_backward against torch.autograd (float64, run before your
# function) for L = 1, 4 and 12 (BERT-base), one sentence and batches, sentences of one real
# token, masks of booleans and of integers, left and right padding, nan and huge numbers at
# padding positions, weights of ±1000, gamma = 0 and negative, a single layer, lists and
# tuples of arrays, float32 and integer states, non-contiguous arrays; results must be new
# arrays; inputs unchanged; ValueError for each bad input listed above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a7_bert import check_layer_mix_backward

check_layer_mix_backward(layer_mix_backward)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): check your gradient yourself, on Lecture 7's tiny BERT
#
# A `course.models.bert.BertModel` with random weights reads a padded batch of two
# sentences; its `hidden_states`, as NumPy arrays, are what `layer_mix_backward` takes. With
# the loss $\ell = \sum_b G_b \cdot u_b$ (so that $\partial \ell / \partial u = G$), central
# differences of $\ell$ computed from your `pooled` should match your `grad_w` and
# `grad_gamma` to about $10^{-9}$.

# %%
import torch

from course.models.bert import BertConfig, BertModel

torch.manual_seed(0)
bert_x = BertModel(BertConfig(vocab_size=50, d_model=16, num_layers=4, d_ff=32)).eval()
ids_x = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]])  # the second row padded
mask_x = (ids_x != 0).long()
with torch.no_grad():
    out_x = bert_x(ids_x, torch.zeros_like(ids_x), mask_x)
states_x = [h.numpy().astype(np.float64) for h in out_x.hidden_states]  # 5 arrays (B, T, H)
rng_x = np.random.default_rng(0)
w_x, gamma_x, g_x = rng_x.normal(size=5), 1.5, rng_x.normal(size=(2, 16))
try:
    pooled_x, grad_w_x, grad_gamma_x = layer_mix_backward(states_x, w_x, gamma_x, mask_x.numpy(),
                                                          g_x)  # fmt: skip

    def loss_x(w: np.ndarray, gamma: float) -> float:
        return float(np.sum(layer_mix_backward(states_x, w, gamma, mask_x.numpy(), g_x)[0] * g_x))

    step_x = 1e-6
    numeric_x = [(loss_x(w_x + step_x * e, gamma_x) - loss_x(w_x - step_x * e, gamma_x))
                 / (2 * step_x) for e in np.eye(5)]  # fmt: skip
    numeric_gamma_x = (loss_x(w_x, gamma_x + step_x) - loss_x(w_x, gamma_x - step_x)) / (2 * step_x)
    print("grad_w, yours:             ", np.round(grad_w_x, 6))
    print("grad_w, central differences:", np.round(numeric_x, 6))
    print(f"grad_gamma: yours {grad_gamma_x:.6f}, central differences {numeric_gamma_x:.6f}")
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# ## Part E: a saturated mix, and what became of NSP? (2 points, graded by hand)
#
# **Predict first.** Before you run the cell below, write down what you expect for (a) the
# sum of the entries of `grad_w`, for any $w$, $\gamma$ and $G$; and (b) by about what factor
# the size of `grad_w` changes when $w$ goes from $0$ (each of the five arrays of states a
# fifth of the mix) to $(8, 0, 0, 0, 0)$ (the embeddings almost all of it), on the same
# states and the same $G$. The cell uses your `layer_mix_backward` on the tiny BERT of the
# exploration cell above.

# %%
try:
    print("the numbers for Part E")
    sizes_x = []
    for name_x, w_try_x in (("w = 0", np.zeros(5)), ("w = (8, 0, 0, 0, 0)", np.eye(5)[0] * 8)):
        share_x = np.exp(w_try_x - w_try_x.max()) / np.exp(w_try_x - w_try_x.max()).sum()
        _, grad_try_x, _ = layer_mix_backward(states_x, w_try_x, gamma_x, mask_x.numpy(), g_x)
        sizes_x.append(np.linalg.norm(grad_try_x))
        print(f"{name_x}: s = {np.array2string(share_x, precision=4)}")
        print("  grad_w =", " ".join(f"{v:+.2e}" for v in grad_try_x))
        print(f"  sum of grad_w {grad_try_x.sum():+.1e}, size |grad_w| {sizes_x[-1]:.2e}")
    print(f"the size shrinks by a factor of {sizes_x[0] / sizes_x[1]:.0f}")
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# In 4 to 8 sentences. **The mix:** compare the printed numbers with your predictions, and
# explain (a) from the softmax (what does adding the same constant to every $w_j$ do to the
# mix?) and (b) from the form of $\partial \ell / \partial w_k$ (write it with $s_k$). What
# does (b) mean for a mix that starts, or drifts, far from uniform, and why is $w$ usually
# started at $0$? **NSP:** RoBERTa (Liu et al., 2019) trained without the next-sentence
# objective and did as well or better. Give one reason why NSP was a weak signal, as its
# NotNext pairs are built in Part C.

# %% [markdown] nbgrader={"grade": true, "grade_id": "mix_and_nsp", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** (a) The entries of `grad_w` add up to 0 (the cell prints -5.6e-17 and
# +2.0e-15, rounding errors): adding the same constant to every $w_j$ leaves
# $\operatorname{softmax}(w)$, hence the mix and the loss, unchanged, so the loss does not
# change along $(1, \dots, 1)$ and the gradient is orthogonal to it. In the formula,
# $\partial \ell / \partial w_k = s_k (a_k - \bar a)$ with $a_k = \partial \ell / \partial s_k$
# and $\bar a = \sum_j s_j a_j$, and $\sum_k s_k (a_k - \bar a) = \bar a - \bar a = 0$. (b) With
# $w = (8, 0, 0, 0, 0)$, $s = (0.9987, 0.0003, \dots)$: every other layer's entry carries its
# factor $s_k = 0.0003$, and the favoured layer's entry is $s_0 (a_0 - \bar a)$ with $\bar a$
# almost $a_0$ (their gap is $1 - s_0$ times the differences of the $a_j$), so the size of
# `grad_w` falls from 8.83e-01 to 4.79e-03, a factor of 184. The softmax saturates: a mix
# that starts, or drifts, close to one layer gets almost no signal to leave it, even when
# another layer would serve the task better (the vanishing gradient of a saturated sigmoid).
# Starting at $w = 0$ gives every layer the same share and the gradient its full size, so
# the task, not the initialisation, decides which layers count. Next-sentence prediction was
# weak because a NotNext segment comes from another document: it usually differs in topic,
# so the task can be solved by topic matching rather than by coherence across sentences, and
# it forced short pairs of segments. RoBERTa found that packing long contiguous text without
# NSP matched or improved downstream results; ALBERT replaced NSP by sentence-order
# prediction (two consecutive segments, swapped or not), which needs coherence.
#
# *Grading notes: 1 point for the sum of zero explained by the softmax's invariance to
# adding a constant to every weight, and the shrinking gradient explained by the factor
# $s_k$ (a saturated softmax), with what it means for a mix started far from uniform; accept
# the student's own printed numbers. 1 point for NSP being solvable by topic (the random B
# comes from another document), with RoBERTa's finding or ALBERT's sentence-order
# prediction. The numbers above are those the reference prints;
# `tests/grading/test_a7_hidden_checks.py` checks each against the cell's output.*
