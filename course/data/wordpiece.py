"""WordPiece (Unit 7): learning a subword vocabulary with the likelihood criterion, and BERT's
greedy longest-match-first tokenisation.

Words are made by :func:`pre_tokenize`: lower-cased text split on whitespace, every character
that is neither a letter nor a digit becoming a word of its own ("don't." → "don", "'", "t",
"."). Inside a word, a piece that does not start the word carries the continuation prefix
``##``: "playing" may become ["play", "##ing"].

Learning (:func:`learn_wordpiece`) starts from the characters, "p", "##l", "##a", ..., and
repeatedly merges the adjacent pair (a, b) with the highest score

    score(a, b) = count(ab) / (count(a) · count(b))                              (WP-1)

where counts are occurrences in the corpus (each word weighted by its frequency). N times the
score is the ratio inside the pointwise mutual information log(N count(ab) / (count(a)
count(b))), N the number of pieces: the rule prefers pairs whose parts rarely occur apart, not
merely frequent pairs (byte-pair encoding's rule, count(ab) alone). The gain in a unigram
model's log-likelihood is roughly count(ab) times that logarithm; the rule uses the ratio
alone, so its first merges join rare characters (see ``min_pair_count``). Ties are broken by
the larger count(ab), then by the alphabetical order of (a, b). The merged piece is
a + b without b's ``##``. Learning stops when the vocabulary (special tokens, the alphabet and
the merged pieces) reaches ``vocab_size``, or earlier when no pair is left that occurs at
least ``min_pair_count`` times (the vocabulary is then smaller than asked).

Tokenising a word (:meth:`WordPiece.tokenize_word`), as BERT does: take the longest prefix of
the rest of the word that is in the vocabulary (with ``##`` after the first piece), and repeat;
if at some point no prefix is in the vocabulary, the whole word becomes ``[UNK]``, as does a
word longer than ``max_chars`` characters.

The `tokenizers` library is the reference: :func:`tokenizers_tokenize` runs its WordPiece model
on our vocabulary (the two tokenisations agree exactly), and :func:`compare_with_tokenizers`
trains its WordPiece trainer (which actually merges by pair frequency, as BPE does) on the same
words and reports how the two vocabularies differ (its alphabet also holds every character as
a word start, even one seen only inside words; ours holds the forms seen). ``tokenizers`` is
imported only there.
"""

from __future__ import annotations

import heapq
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from tqdm.auto import tqdm

__all__ = [
    "SPECIAL_TOKENS",
    "PREFIX",
    "pre_tokenize",
    "count_words",
    "WordPiece",
    "learn_wordpiece",
    "tokenizers_tokenize",
    "train_tokenizers_wordpiece",
    "VocabularyComparison",
    "segmentation_rates",
    "compare_with_tokenizers",
]

# BERT's special tokens; their position here is their id (bert_inputs relies on it).
SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PREFIX = "##"
_WORD = re.compile(r"[^\W_]+|[^\s]", re.UNICODE)  # letters/digits runs, or one other character


def pre_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Split text into words: runs of letters and digits, and each other non-space character.

    >>> pre_tokenize("Don't panic, 42!")
    ['don', "'", 't', 'panic', ',', '42', '!']
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    return _WORD.findall(text.lower() if lowercase else text)


def count_words(texts: Iterable[str], lowercase: bool = True) -> Counter[str]:
    """How often each word of :func:`pre_tokenize` occurs in ``texts`` (an iterable of str)."""
    if isinstance(texts, str):
        raise TypeError("texts: expected an iterable of strings (e.g. a list), got one str")
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(pre_tokenize(text, lowercase))
    return counts


@dataclass
class WordPiece:
    """A WordPiece vocabulary and BERT's tokeniser. ``vocab[i]`` is the token with id i.

    ``merges`` lists the learned merges in order, as (a, b, score) (empty when the vocabulary
    was loaded from a file).
    """

    vocab: list[str]
    unk_token: str = "[UNK]"
    max_chars: int = 100
    lowercase: bool = True
    merges: list[tuple[str, str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(set(self.vocab)) != len(self.vocab):
            seen: set[str] = set()
            repeated = next(t for t in self.vocab if t in seen or seen.add(t))  # type: ignore[func-returns-value]
            raise ValueError(f"vocab: the token {repeated!r} appears twice")
        if self.unk_token not in self.vocab:
            raise ValueError(f"vocab: the unknown token {self.unk_token!r} is missing")
        self.token_to_id = {token: i for i, token in enumerate(self.vocab)}
        self._memo: dict[tuple[str, int], tuple[str, ...]] = {}  # words repeat: remember them

    def __len__(self) -> int:
        return len(self.vocab)

    def tokenize_word(self, word: str) -> list[str]:
        """Greedy longest-match-first: ["un", "##aff", "##able"], or [unk] if it cannot."""
        if len(word) > self.max_chars:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):  # the longest candidate first
                piece = word[start:end] if start == 0 else PREFIX + word[start:end]
                if piece in self.token_to_id:
                    break
            else:
                return [self.unk_token]  # no prefix of the rest is known: the whole word
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """Pre-tokenise ``text`` and tokenise every word (each distinct word once)."""
        out: list[str] = []
        for word in pre_tokenize(text, self.lowercase):
            key = (word, self.max_chars)
            if key not in self._memo:
                self._memo[key] = tuple(self.tokenize_word(word))
            out += self._memo[key]
        return out

    def encode(self, text: str) -> list[int]:
        """Token ids of :meth:`tokenize` (no [CLS]/[SEP]: see ``course.data.bert_inputs``)."""
        return [self.token_to_id[p] for p in self.tokenize(text)]

    def decode(self, ids: Sequence[int]) -> str:
        """Tokens joined into words: a ``##`` piece is glued to the one before it."""
        out = ""
        for i in ids:
            token = self.vocab[int(i)]
            out += (
                token[len(PREFIX) :] if token.startswith(PREFIX) else (" " if out else "") + token
            )
        return out

    def save(self, path: str | Path) -> Path:
        """Write the vocabulary as BERT's ``vocab.txt``: one token per line, line i is id i."""
        path = Path(path)
        path.write_text("".join(token + "\n" for token in self.vocab), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path, **options: object) -> WordPiece:
        """Read a ``vocab.txt`` written by :meth:`save` (or a BERT checkpoint's)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such vocabulary file (one token per line)")
        tokens = path.read_text(encoding="utf-8").split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        if not tokens or any(not t or t != t.strip() for t in tokens):
            raise ValueError(f"{path}: expected one non-empty token per line, with no spaces")
        return cls(tokens, **options)  # type: ignore[arg-type]


def _merged(a: str, b: str) -> str:
    return a + b[len(PREFIX) :]


def learn_wordpiece(
    word_counts: Mapping[str, int],
    vocab_size: int,
    min_pair_count: int = 1,
    special_tokens: Sequence[str] = SPECIAL_TOKENS,
    lowercase: bool = True,
    progress: bool = False,
) -> WordPiece:
    """Learn a WordPiece vocabulary of ``vocab_size`` tokens by rule (WP-1).

    Only pairs seen at least ``min_pair_count`` times may merge. With 1 (the pure rule), the
    first merges join rare characters and digits, whose parts are rare; a larger threshold
    keeps the rule but spends the vocabulary on pieces that are common enough to matter.

    ``word_counts`` maps each word (already pre-tokenised, see :func:`count_words`) to its
    frequency. The vocabulary is the special tokens, then the alphabet (first characters and
    ``##`` characters, sorted), then one piece per merge, in the order learned.

    Counts are kept up to date incrementally: a merge of (a, b) only rewrites the words that
    contain the pair (an index from pair to words), and the scores of the pairs that changed
    (those next to a merge, and every pair containing a or b, whose counts dropped) are pushed
    again on a heap; stale heap entries are recognised by their score and skipped.
    ``progress=True`` shows a progress bar of the vocabulary's growth.
    """
    if not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"vocab_size: expected a positive int, got {vocab_size!r}")
    bad = [w for w, c in word_counts.items() if not w or any(ch.isspace() for ch in w) or c < 1]
    if bad:
        raise ValueError(
            f"word_counts: words must be non-empty with no spaces and counts ≥ 1: {bad[:3]}"
        )
    words = [[w[0]] + [PREFIX + ch for ch in w[1:]] for w in word_counts]
    freqs = list(word_counts.values())
    symbol_count: Counter[str] = Counter()
    pair_count: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[int]] = {}  # pair -> the words that contain it
    # symbol -> the pairs it is part of that are frequent enough to merge
    eligible_of: dict[str, set[tuple[str, str]]] = {}
    for i, (symbols, f) in enumerate(zip(words, freqs, strict=True)):
        for s in symbols:
            symbol_count[s] += f
        for pair in pairwise(symbols):
            pair_count[pair] += f
            where.setdefault(pair, set()).add(i)

    vocab = list(special_tokens) + sorted(t for t in symbol_count if t not in special_tokens)
    if len(vocab) > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size} is smaller than the special tokens and the alphabet "
            f"({len(vocab)} tokens)"
        )
    known = set(vocab)

    def score(pair: tuple[str, str]) -> float:
        return pair_count[pair] / (symbol_count[pair[0]] * symbol_count[pair[1]])

    def push(pair: tuple[str, str]) -> None:
        if pair_count[pair] >= min_pair_count:
            heapq.heappush(heap, (-score(pair), -pair_count[pair], pair))

    def track(pair: tuple[str, str]) -> None:
        """Keep ``eligible_of`` up to date after the count of ``pair`` changed."""
        for s in pair:
            if pair_count[pair] >= min_pair_count:
                eligible_of.setdefault(s, set()).add(pair)
            elif s in eligible_of:
                eligible_of[s].discard(pair)

    heap: list[tuple[float, int, tuple[str, str]]] = []
    for pair in pair_count:
        track(pair)
        push(pair)
    merges: list[tuple[str, str, float]] = []
    bar = tqdm(total=vocab_size, initial=len(vocab), desc="WordPiece", disable=not progress)
    while len(vocab) < vocab_size and heap:
        neg_score, neg_count, pair = heapq.heappop(heap)
        if pair_count[pair] < min_pair_count:
            continue  # merged away, or too rare
        if pair_count[pair] != -neg_count or score(pair) != -neg_score:
            push(pair)  # a stale entry: put the pair back with its current score
            continue
        a, b = pair
        new = _merged(a, b)
        merges.append((a, b, -neg_score))
        if new not in known:
            known.add(new)
            vocab.append(new)
            bar.update()
        delta: Counter[tuple[str, str]] = Counter()  # net change of each pair's count
        for i in list(where[pair]):
            old, f = words[i], freqs[i]
            symbols, k, n = [], 0, 0
            while k < len(old):  # replace a b by ab, left to right
                if k + 1 < len(old) and old[k] == a and old[k + 1] == b:
                    symbols.append(new)
                    k, n = k + 2, n + 1
                else:
                    symbols.append(old[k])
                    k += 1
            symbol_count[a] -= n * f
            symbol_count[b] -= n * f
            symbol_count[new] += n * f
            old_pairs, new_pairs = list(pairwise(old)), list(pairwise(symbols))
            for p in old_pairs:
                delta[p] -= f
            for p in new_pairs:
                delta[p] += f
            for p in set(old_pairs).difference(new_pairs):
                where[p].discard(i)
            for p in set(new_pairs).difference(old_pairs):
                where.setdefault(p, set()).add(i)
            words[i] = symbols
        changed = {p for p, d in delta.items() if d}
        for p in changed:
            pair_count[p] += delta[p]
            track(p)
        for s in (a, b):  # their counts dropped: every score with them in it rose
            changed |= eligible_of.get(s, set())
        for p in changed:
            push(p)
    bar.close()
    return WordPiece(vocab, lowercase=lowercase, merges=merges)


# ----------------------------------------------------------------------------------------------
# The `tokenizers` library, for comparison


def tokenizers_tokenize(wordpiece: WordPiece, words: Sequence[str]) -> list[list[str]]:
    """Tokenise each word with the `tokenizers` library's WordPiece model on our vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    model = models.WordPiece(
        wordpiece.token_to_id,
        unk_token=wordpiece.unk_token,
        max_input_chars_per_word=wordpiece.max_chars,
        continuing_subword_prefix=PREFIX,
    )
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if any(not w or any(ch.isspace() for ch in w) for w in words):
        raise ValueError("words: each word must be non-empty and contain no whitespace")
    return [e.tokens for e in tokenizer.encode_batch([w for w in words])]


def train_tokenizers_wordpiece(
    word_counts: Mapping[str, int],
    vocab_size: int,
    special_tokens: Sequence[str] = SPECIAL_TOKENS,
) -> WordPiece:
    """Train the `tokenizers` library's WordPieceTrainer on the same counted words.

    The vocabulary is the special tokens, the sorted alphabet, then the merged pieces in the
    trainer's order (its order among pairs of equal count can change from run to run; the set
    of tokens does not).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=PREFIX))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        continuing_subword_prefix=PREFIX,
        min_frequency=0,
        show_progress=False,
    )
    # Each distinct word once per occurrence would be slow to send; a line of c copies is
    # counted the same by the trainer's whitespace pre-tokeniser.
    lines = (" ".join([w] * c) for w, c in word_counts.items())
    tokenizer.train_from_iterator(lines, trainer=trainer)
    ids = tokenizer.get_vocab()
    by_id = sorted(ids, key=ids.__getitem__)
    # The trainer numbers its alphabet in hash order, which changes from run to run: sort it.
    alphabet = sorted(
        t for t in by_id if len(t.removeprefix(PREFIX)) == 1 and t not in special_tokens
    )
    rest = [t for t in by_id if t in special_tokens or len(t.removeprefix(PREFIX)) > 1]
    return WordPiece(rest[: len(special_tokens)] + alphabet + rest[len(special_tokens) :])


@dataclass(frozen=True)
class VocabularyComparison:
    """Our likelihood vocabulary against the `tokenizers` trainer's, on the same words."""

    ours: WordPiece
    theirs: WordPiece
    only_ours: list[str]  # pieces in our vocabulary only, in our learning order
    only_theirs: list[str]  # pieces in theirs only, in their id order
    tokens_per_word_ours: float  # on the held-out words, each tokenised with its vocabulary
    tokens_per_word_theirs: float
    unknown_ours: float  # fraction of held-out words that become [UNK]
    unknown_theirs: float
    seconds_ours: float  # learning time
    seconds_theirs: float

    def summary(self) -> str:
        shared = len(self.ours) - len(self.only_ours)
        return (
            f"{len(self.ours)} vs {len(self.theirs)} tokens, {shared} shared; "
            f"tokens per held-out word {self.tokens_per_word_ours:.3f} (likelihood, ours) vs "
            f"{self.tokens_per_word_theirs:.3f} (tokenizers, frequency); "
            f"learned in {self.seconds_ours:.2f} s vs {self.seconds_theirs:.2f} s"
        )


def segmentation_rates(wordpiece: WordPiece, words: Counter[str]) -> tuple[float, float]:
    """(tokens per word, share of the words that are [UNK]) over ``words``, a Counter of
    words as :func:`pre_tokenize` gives them: each distinct word is tokenised once."""
    total = sum(words.values())
    if not total:
        raise ValueError("words: no words to measure on")
    pieces = {w: wordpiece.tokenize_word(w) for w in words}
    unknown = sum(n for w, n in words.items() if pieces[w] == [wordpiece.unk_token])
    return sum(n * len(pieces[w]) for w, n in words.items()) / total, unknown / total


def compare_with_tokenizers(
    train_texts: Iterable[str],
    heldout_texts: Iterable[str],
    vocab_size: int,
    min_pair_count: int = 1,
) -> VocabularyComparison:
    """Learn both vocabularies on ``train_texts`` and measure them on ``heldout_texts``.

    ``min_pair_count`` applies to our learner only (see :func:`learn_wordpiece`).
    """
    counts = count_words(train_texts)
    start = time.perf_counter()
    ours = learn_wordpiece(counts, vocab_size, min_pair_count)
    seconds_ours = time.perf_counter() - start
    start = time.perf_counter()
    theirs = train_tokenizers_wordpiece(counts, vocab_size)
    seconds_theirs = time.perf_counter() - start
    heldout = Counter(w for text in heldout_texts for w in pre_tokenize(text))
    if not heldout:
        raise ValueError("heldout_texts: no words to measure on")
    tpw_ours, unk_ours = segmentation_rates(ours, heldout)
    tpw_theirs, unk_theirs = segmentation_rates(theirs, heldout)
    return VocabularyComparison(
        ours=ours,
        theirs=theirs,
        only_ours=[t for t in ours.vocab if t not in theirs.token_to_id],
        only_theirs=[t for t in theirs.vocab if t not in ours.token_to_id],
        tokens_per_word_ours=tpw_ours,
        tokens_per_word_theirs=tpw_theirs,
        unknown_ours=unk_ours,
        unknown_theirs=unk_theirs,
        seconds_ours=seconds_ours,
        seconds_theirs=seconds_theirs,
    )
