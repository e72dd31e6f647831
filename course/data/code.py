"""Offline corpora: the source of Python's standard library and its documentation.

Nothing here touches the network. The main corpus is the source code of Python's own standard
library, which every Python installation carries:

    train_text = load_python_source(max_chars=1_000_000, split="train")
    val_text = load_python_source(max_chars=100_000, split="val")

(characters as ids, and windows of them, are in ``course.data.chars``)

Train and validation text come from different files, so the held-out score measures
generalisation to unseen modules, not to unseen lines of a module already read.
"""

from __future__ import annotations

import sysconfig
import zlib
from pathlib import Path
from typing import Literal

from course.data.chars import CharVocab, batch_windows, random_windows

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

# Characters and windows have a module of their own (course.data.chars); they are named here
# too, as the checkpoints' metadata and earlier notebooks name them.

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
