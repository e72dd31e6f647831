"""Words for word-level models (Unit 3 on): a tokenizer, a word vocabulary, and batches of
token windows.

The same tokenizer made the WordNet task files (``tools/prepare_corpora.py`` imports it), so a
model trained on the prose reads the task sentences in the same units::

    tokenize("The dog's bone isn't here.")   # ['The', 'dog', "'s", 'bone', 'is', "n't", 'here', '.']

A :class:`WordVocab` maps the most frequent (lower-cased) words to ids, and every other word
to <unk>::

    vocab = WordVocab.build(sentences, max_words=5000)
    vocab.ids(["the", "zyzzyva"])            # [5, 1]: 1 is <unk>
    stream = vocab.encode(sentences)         # (N,) the ids of all sentences, one after another

Sentences are read between boundary tokens ``<s>`` and ``</s>``, as ELMo's language model does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

from course.checks import expect_shape

__all__ = [
    "tokenize",
    "PAD",
    "UNK",
    "BOS",
    "EOS",
    "SPECIALS",
    "WordVocab",
    "sentence_tokens",
    "token_windows",
]

_WORD = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]")
_CLITIC = re.compile(r"(?i)^(.+?)(n['’]t|['’](?:s|re|ve|ll|d|m))$")


def tokenize(sentence: str) -> list[str]:
    """Split a sentence into words and punctuation marks, Penn-style clitics apart.

    "The dog's bone isn't here." -> [The, dog, 's, bone, is, n't, here, .]
    """
    tokens: list[str] = []
    for token in _WORD.findall(sentence):
        clitic = _CLITIC.match(token)
        if clitic and clitic.group(1)[-1].isalpha():
            tokens.extend(clitic.groups())
        else:
            tokens.append(token)
    return tokens


PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)  # ids 0, 1, 2, 3 of every WordVocab


def sentence_tokens(sentence: str | Sequence[str]) -> list[str]:
    """Lower-cased tokens of a sentence (a string, or tokens already split) between <s> and </s>."""
    tokens = tokenize(sentence) if isinstance(sentence, str) else list(sentence)
    return [BOS, *(t.lower() for t in tokens), EOS]


@dataclass(frozen=True)
class WordVocab:
    """The words a word-level model knows, in id order; ``words[:4]`` are <pad>, <unk>, <s>, </s>.

    Every other token maps to <unk> (id 1).
    """

    words: tuple[str, ...]

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], *, max_words: int = 5000) -> WordVocab:
        """The ``max_words`` most frequent tokens of ``sentences`` (lists of tokens, as
        :func:`sentence_tokens` gives), the four specials included; ties broken alphabetically."""
        if max_words <= len(SPECIALS):
            raise ValueError(f"max_words must be > {len(SPECIALS)}, got {max_words}")
        counts: Counter[str] = Counter()
        for sentence in sentences:
            counts.update(t for t in sentence if t not in SPECIALS)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return cls(SPECIALS + tuple(w for w, _ in ranked[: max_words - len(SPECIALS)]))

    def __post_init__(self) -> None:
        if self.words[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"words must start with {SPECIALS}, got {self.words[:4]}")
        if len(set(self.words)) != len(self.words):
            raise ValueError("words: expected each word once")
        object.__setattr__(self, "_index", {w: i for i, w in enumerate(self.words)})

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, tokens: Sequence[str]) -> list[int]:
        """Word ids; a word outside the vocabulary gets the id of <unk> (1)."""
        index = self._index  # type: ignore[attr-defined]
        return [index.get(t, 1) for t in tokens]

    def encode(self, sentences: Iterable[Sequence[str]]) -> torch.Tensor:
        """(N,) int64 ids of sentences read one after another, as one stream."""
        return torch.tensor([i for sentence in sentences for i in self.ids(sentence)])


def token_windows(
    stream: Sequence[int] | torch.Tensor,
    batch_size: int,
    length: int,
    *,
    seed: int = 0,
) -> Iterator[torch.Tensor]:
    """Endless (batch_size, length) windows of a token-id stream at random offsets.

    ``stream`` is the ids of a corpus read as one sequence (sentences with their boundary
    tokens, one after another). Each window is read forwards by the forward LM and backwards by
    the backward LM.
    """
    ids = torch.as_tensor(stream, dtype=torch.long)
    expect_shape(ids, ("N",), "stream")
    if len(ids) <= length:
        raise ValueError(f"stream: {len(ids)} tokens is too short for windows of {length}")
    generator = torch.Generator().manual_seed(seed)
    offsets = torch.arange(length)
    while True:
        starts = torch.randint(0, len(ids) - length + 1, (batch_size, 1), generator=generator)
        yield ids[starts + offsets]
