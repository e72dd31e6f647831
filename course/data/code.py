"""Offline corpora and character vocabularies.

Nothing here touches the network. The main corpus is the source code of Python's own standard
library, which every Python installation carries:

    train_text = load_python_source(max_chars=1_000_000, split="train")
    val_text = load_python_source(max_chars=100_000, split="val")
    vocab = CharVocab.from_text(train_text)
    train_ids = vocab.encode(train_text)              # (N,) int64
    x, y = batch_windows(train_ids, batch_size=32, seq_len=64, generator=g)  # (B, T), (B, T)

Train and validation text come from different files, so the held-out score measures
generalisation to unseen modules, not to unseen lines of a module already read.
"""

from __future__ import annotations

import sysconfig
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from course.checks import expect_dtype, expect_shape

__all__ = [
    "stdlib_source_files",
    "split_of_file",
    "load_python_source",
    "load_pydoc_topics",
    "load_text_file",
    "CharVocab",
    "batch_windows",
    "random_windows",
]

Split = Literal["train", "val"]
_VAL_BUCKETS = 10  # one file in ten (by a hash of its name) is held out


def stdlib_source_files() -> list[Path]:
    """Return the top-level ``*.py`` files of the standard library, sorted by name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.is_file())


def split_of_file(path: str | Path) -> Split:
    """Return "val" for about one file in ten and "train" for the rest.

    The choice depends only on the file name (a CRC32 hash), so it does not change when other
    files are added or removed, nor between runs or machines.
    """
    name = Path(path).name
    return "val" if zlib.crc32(name.encode("utf-8")) % _VAL_BUCKETS == 0 else "train"


def load_python_source(max_chars: int | None = 1_000_000, split: Split = "train") -> str:
    """Concatenate standard-library source files of one split, in sorted file order.

    Files that are not valid UTF-8 are skipped. Each file ends with a newline. The result is
    cut to ``max_chars`` characters (``None`` keeps everything).
    """
    if split not in ("train", "val"):
        raise ValueError(f"split: expected 'train' or 'val', got {split!r}")
    if max_chars is not None and max_chars <= 0:
        raise ValueError(f"max_chars: expected a positive number or None, got {max_chars}")
    pieces: list[str] = []
    total = 0
    for path in stdlib_source_files():
        if split_of_file(path) != split:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not text.endswith("\n"):
            text += "\n"
        pieces.append(text)
        total += len(text)
        if max_chars is not None and total >= max_chars:
            break
    joined = "".join(pieces)
    return joined if max_chars is None else joined[:max_chars]


def load_pydoc_topics() -> str:
    """Return the text of Python's built-in help topics (``pydoc_data.topics``), sorted by topic.

    English prose about Python, about 0.5 MB: a second offline corpus.
    """
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key].strip() + "\n" for key in sorted(topics))


def load_text_file(path: str | Path) -> str:
    """Read a UTF-8 text file; a missing file gives a FileNotFoundError that names the path."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no text file at {file.resolve()} (given as {str(path)!r})")
    return file.read_text(encoding="utf-8")


@dataclass(frozen=True)
class CharVocab:
    """A character vocabulary. Id 0 is reserved for characters not seen when it was built.

    ``encode`` maps an unseen character to ``UNK_ID`` (or raises KeyError with ``strict=True``)
    and ``decode`` prints ``UNK_ID`` as ``UNK_CHAR`` ("\ufffd"). The other ids follow the
    sorted order of the characters, so the same text always gives the same vocabulary.
    """

    chars: tuple[str, ...]

    UNK_ID = 0
    UNK_CHAR = "\ufffd"

    def __post_init__(self) -> None:
        if len(set(self.chars)) != len(self.chars) or any(len(c) != 1 for c in self.chars):
            raise ValueError("chars: expected distinct single characters")
        object.__setattr__(self, "_index", {c: i + 1 for i, c in enumerate(self.chars)})

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        """Build the vocabulary of the distinct characters in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        if not text:
            raise ValueError("text: cannot build a vocabulary from an empty string")
        return cls(tuple(sorted(set(text))))

    def __len__(self) -> int:
        """Number of ids, the unknown id included (the V of the logits' last dimension)."""
        return len(self.chars) + 1

    def encode(self, text: str, *, strict: bool = False) -> torch.Tensor:
        """Map a string of length N to a LongTensor of shape (N,)."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        index: dict[str, int] = self._index  # type: ignore[attr-defined]
        if strict:
            unknown = sorted(set(text) - index.keys())
            if unknown:
                raise KeyError(f"characters not in the vocabulary: {''.join(unknown)!r}")
        return torch.tensor([index.get(c, self.UNK_ID) for c in text], dtype=torch.long)

    def decode(self, ids: torch.Tensor | Sequence[int] | Iterable[int]) -> str:
        """Map ids of shape (N,) back to a string of length N."""
        if isinstance(ids, torch.Tensor):
            expect_shape(ids, (None,), "ids")
            expect_dtype(ids, "iu", "ids")
            ids = ids.tolist()
        out = []
        for i in ids:
            if not 0 <= int(i) < len(self):
                raise ValueError(f"ids: id {int(i)} is outside the vocabulary [0, {len(self)})")
            out.append(self.UNK_CHAR if i == self.UNK_ID else self.chars[int(i) - 1])
        return "".join(out)


def _check_windows(ids: torch.Tensor, batch_size: int, seq_len: int) -> None:
    """Raise a clear error unless ``batch_size`` windows of ``seq_len`` + 1 ids fit in ids (N,)."""
    expect_shape(ids, ("N",), "ids")
    expect_dtype(ids, "iu", "ids")
    if batch_size < 1 or seq_len < 1:
        raise ValueError(f"batch_size and seq_len must be >= 1, got {batch_size} and {seq_len}")
    if len(ids) < seq_len + 1:
        raise ValueError(
            f"ids: need at least seq_len + 1 = {seq_len + 1} ids to cut one window, got {len(ids)}"
        )


def batch_windows(
    ids: torch.Tensor,
    batch_size: int,
    seq_len: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cut ``batch_size`` random windows from a stream of ids, for next-character prediction.

    ids: (N,) integer tensor. Returns inputs x (B, T) and targets y (B, T) with
    ``y[b, t] == ids[start_b + t + 1]``, i.e. y is x shifted left by one character.
    """
    _check_windows(ids, batch_size, seq_len)
    starts = torch.randint(0, len(ids) - seq_len, (batch_size,), generator=generator)  # (B,)
    offsets = torch.arange(seq_len + 1)  # (T+1,)
    windows = ids[starts[:, None] + offsets[None, :]]  # (B, T+1)
    return windows[:, :-1].long(), windows[:, 1:].long()


def random_windows(
    ids: torch.Tensor, batch_size: int, seq_len: int, *, seed: int = 0
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of :func:`batch_windows` batches, x (B, T) and y (B, T).

    The windows come from one generator seeded with ``seed``, so the stream is the same on
    every run. The arguments are checked at once, not at the first batch.
    """
    _check_windows(ids, batch_size, seq_len)
    generator = torch.Generator().manual_seed(seed)

    def stream() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        while True:
            yield batch_windows(ids, batch_size, seq_len, generator)

    return stream()
