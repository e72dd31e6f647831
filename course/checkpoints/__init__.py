"""Course-trained checkpoints: models trained longer than a lecture can afford to.

A lecture still trains its model live and shows the curve; where it needs a better model (the
interpretable cells of Lecture 2 now, BERT and GPT later), it loads one of these. Each was made
by the course's own training code (``course.train``) with fixed seeds and a fixed number of
steps, by ``make checkpoints`` (``python -m tools.make_checkpoints``). A checkpoint ``<name>``
is three files in this package's folder, shipped in the bundle and the wheel:

- ``<name>.pt``: the model's ``state_dict`` in float32, read with ``torch.load(weights_only=True)``;
- ``<name>.json``: its metadata: model class and configuration, a hash of the source of the
  module that defines the model, vocabulary, training settings (steps, seed...), corpus,
  held-out figure (and the same figure on the text's first tenth, ``heldout.check``, which the
  suite reproduces quickly), torch version, the command that remakes it, and the hash of the
  weights;
- ``<name>.heldout.txt.gz``: the held-out text its recorded figure was measured on.

Usage::

    model, meta = load_checkpoint("char_lstm_stdlib")     # eval mode, on the CPU
    vocab = checkpoint_vocab(meta)
    text = load_heldout_text("char_lstm_stdlib")
    heldout_bits_per_char(model, meta, text)               # == meta["heldout"]["bits_per_char"]

Loading refuses a checkpoint whose model code changed since it was made (its weights may no
longer mean the same thing), or whose files are missing or corrupt, with a message that says
which checkpoint, which file, and to run ``make checkpoints``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import inspect
import io
import json
import re
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from course.analysis.lm import bits_per_char, windowed_bits_per_char
from course.data.chars import CharVocab
from course.data.wordpiece import WordPiece
from course.data.words import WordVocab

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "CHECKPOINT_DIR",
    "REMAKE_COMMAND",
    "METADATA_KEYS",
    "CheckpointError",
    "StaleCheckpointError",
    "available_checkpoints",
    "model_source",
    "model_code_sha256",
    "save_checkpoint",
    "read_metadata",
    "load_checkpoint",
    "checkpoint_vocab",
    "load_heldout_text",
    "heldout_bits_per_char",
    "check_text",
    "heldout_key",
]

CHECKPOINT_DIR = Path(__file__).resolve().parent  # where ``make checkpoints`` writes
REMAKE_COMMAND = "make checkpoints"
METADATA_KEYS = {
    "name": str,
    "description": str,
    "model": dict,  # module, class, config, source_file, code_sha256, parameters
    # a character model's vocabulary: the characters of ids 1, 2, ... (id 0 is the unknown
    # character); a word model's: the list of its words in id order
    "vocab": (str, list),
    "training": dict,  # function, steps, seed, batch_size, seq_len, lr, ...
    "corpus": dict,  # description, characters, sha256, python
    "heldout": dict,  # bits_per_char, file, characters, sha256, evaluation
    "torch": str,
    "command": str,
    "weights_file": str,
    "weights_sha256": str,
}
NESTED_KEYS = {
    "model": ("module", "class", "config", "source_file", "code_sha256", "parameters"),
    "training": ("function", "steps", "seed"),
    "corpus": ("description",),
    "heldout": ("file", "characters", "sha256", "evaluation"),
}
# The held-out figure each kind of vocabulary's model records.
HELDOUT_FIGURE = {str: "bits_per_char", list: "perplexity"}
HELDOUT_EVALUATION = {
    "batch_size": 16,
    "seq_len": 256,
}  # arguments of course.analysis.lm.bits_per_char
_NAME = re.compile(r"^[a-z0-9_]+$")


class CheckpointError(ValueError):
    """A checkpoint's files are corrupt or do not fit together."""


class StaleCheckpointError(CheckpointError):
    """The code that defines the model changed since the checkpoint was made."""


def _folder(directory: str | Path | Traversable | None) -> Traversable:
    """The folder that holds the checkpoints: this package's (installed or not) by default."""
    if directory is None:
        return resources.files(__name__)
    return Path(directory) if isinstance(directory, (str, Path)) else directory


def available_checkpoints(directory: str | Path | None = None) -> list[str]:
    """The names of the checkpoints in ``directory`` (default: the shipped ones), sorted."""
    folder = _folder(directory)
    return sorted(
        entry.name[: -len(".json")]
        for entry in folder.iterdir()
        if entry.name.endswith(".json") and _NAME.match(entry.name[: -len(".json")])
    )


def _normalised_source(source: str) -> str:
    """Source text without what cannot change behaviour across checkouts: line endings
    (CRLF on Windows), trailing spaces, blank lines and whole-line comments."""
    lines = (line.rstrip() for line in source.splitlines())
    return "\n".join(line for line in lines if line and not line.lstrip().startswith("#"))


def model_source(module_name: str) -> str:
    """The source text of the module that defines a model (e.g. ``course.models.recurrent``)."""
    return inspect.getsource(importlib.import_module(module_name))


def model_code_sha256(module_name: str) -> str:
    """SHA-256 of the normalised source of the module that defines a model."""
    text = _normalised_source(model_source(module_name))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _source_file(module_name: str) -> str:
    """The module's file as a path inside the repository, e.g. ``course/models/recurrent.py``."""
    return module_name.replace(".", "/") + ".py"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def checkpoint_vocab(metadata: Mapping[str, Any]) -> CharVocab | WordVocab | WordPiece:
    """The vocabulary the checkpoint's model reads: a CharVocab for a character-level model,
    a WordVocab for a word-level one, a WordPiece for a subword one (its ids are the model's
    inputs)."""
    if metadata.get("tokenizer") == "wordpiece":
        return WordPiece(list(metadata["vocab"]))
    if isinstance(metadata["vocab"], list):
        return WordVocab(tuple(metadata["vocab"]))
    return CharVocab(tuple(metadata["vocab"]))


def heldout_bits_per_char(model: nn.Module, metadata: Mapping[str, Any], text: str) -> float:
    """Held-out bits per character of ``model`` on ``text``, evaluated exactly as recorded.

    Encodes ``text`` with the checkpoint's vocabulary and calls
    ``course.analysis.lm.bits_per_char`` with the recorded arguments (16 streams, chunks of 256),
    or ``windowed_bits_per_char`` when they name a window (windows each started afresh).
    """
    ids = checkpoint_vocab(metadata).encode(text)  # (N,)
    evaluation = metadata["heldout"]["evaluation"]
    if "window" in evaluation:  # fixed windows, each started afresh (Lecture 8's models)
        return windowed_bits_per_char(model, ids, **evaluation)
    return bits_per_char(model, ids, **evaluation)


def check_text(text: str) -> str:
    """The part of a held-out text on which the suite checks a shipped checkpoint: its first
    tenth, to the end of that line (whole sentences, pairs or lines).

    The whole held-out figure takes tens of seconds for the biLM and BERT on a 2-core laptop;
    ``make checkpoints`` records the figure on this part too (``heldout.check``), so a test can
    show quickly that the weights and the code still give what they gave when it was made.
    """
    end = text.find("\n", len(text) // 10)
    return text if end < 0 else text[: end + 1]


def heldout_key(metadata: Mapping[str, Any]) -> str:
    """The name of a checkpoint's held-out figure in ``metadata["heldout"]``: the ``figure``
    its recipe named (``"pretraining"``, ``"in_context"``), else ``"bits_per_char"`` for a
    character model and ``"perplexity"`` for a word model (by the type of its vocabulary)."""
    return metadata["heldout"].get("figure") or HELDOUT_FIGURE[type(metadata["vocab"])]


def _float32_state(model: nn.Module) -> dict[str, torch.Tensor]:
    state = {}
    for key, value in model.state_dict().items():
        if value.is_floating_point():
            value = value.to(torch.float32)
        state[key] = value.detach().cpu().contiguous().clone()
    return state


def save_checkpoint(
    model: nn.Module,
    name: str,
    *,
    config: Mapping[str, Any],
    vocab: CharVocab | WordVocab | WordPiece,
    training: Mapping[str, Any],
    corpus: Mapping[str, Any],
    heldout_text: str,
    heldout_description: str,
    description: str,
    command: str = REMAKE_COMMAND,
    directory: str | Path | None = None,
    heldout_figure: Callable[[nn.Module, Mapping[str, Any], str], Any] | None = None,
    evaluation: Mapping[str, Any] | None = None,
    figure_name: str | None = None,
) -> dict[str, Any]:
    """Write ``<name>.pt``, ``<name>.heldout.txt.gz`` and ``<name>.json``; return the metadata.

    config: the keyword arguments that rebuild the model, ``type(model)(**config)`` (checked
    here: same parameter names and shapes). training: settings of the run (must include
    ``steps`` and ``seed``). corpus: what it was trained on. The held-out figure is measured
    here on ``heldout_text`` with :func:`heldout_bits_per_char` for a character model; a word
    model passes ``heldout_figure(model, metadata, text)`` (which returns its perplexity) and
    the ``evaluation`` settings it reads. A model whose figure is something else (a masked LM's
    accuracy, say) names it with ``figure_name``; a WordPiece vocabulary is stored as its list
    of tokens with ``"tokenizer": "wordpiece"``.
    """
    if not _NAME.match(name):
        raise ValueError(f"name: expected lower-case letters, digits and _, got {name!r}")
    for key in ("steps", "seed"):
        if key not in training:
            raise ValueError(f"training: expected a {key!r} entry, got keys {sorted(training)}")
    folder = CHECKPOINT_DIR if directory is None else Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    cls = type(model)
    rebuilt = cls(**config).state_dict()
    state = _float32_state(model)
    shapes = {k: tuple(v.shape) for k, v in state.items()}
    if shapes != {k: tuple(v.shape) for k, v in rebuilt.items()}:
        raise ValueError(f"config: {cls.__name__}(**{dict(config)}) does not rebuild this model")

    weights_file = f"{name}.pt"
    buffer = io.BytesIO()
    torch.save(state, buffer)
    weights = buffer.getvalue()
    (folder / weights_file).write_bytes(weights)

    heldout_file = f"{name}.heldout.txt.gz"
    (folder / heldout_file).write_bytes(gzip.compress(heldout_text.encode("utf-8"), mtime=0))

    metadata: dict[str, Any] = {
        "name": name,
        "description": description,
        "model": {
            "module": cls.__module__,
            "class": cls.__name__,
            "config": dict(config),
            "source_file": _source_file(cls.__module__),
            "code_sha256": model_code_sha256(cls.__module__),
            "parameters": sum(v.numel() for v in state.values()),
        },
        "vocab": (
            list(vocab.vocab)
            if isinstance(vocab, WordPiece)
            else list(vocab.words)
            if isinstance(vocab, WordVocab)
            else "".join(vocab.chars)
        ),
        "training": dict(training),
        "corpus": dict(corpus),
        "heldout": {
            "description": heldout_description,
            "file": heldout_file,
            "characters": len(heldout_text),
            "sha256": _sha256(heldout_text.encode("utf-8")),
            "evaluation": dict(HELDOUT_EVALUATION if evaluation is None else evaluation),
            **({} if figure_name is None else {"figure": figure_name}),
        },
        "torch": torch.__version__,
        "command": command,
        "weights_file": weights_file,
        "weights_sha256": _sha256(weights),
    }
    if isinstance(vocab, WordPiece):
        metadata["tokenizer"] = "wordpiece"
    was_training = model.training
    model.eval()

    def measure(text: str) -> Any:
        if heldout_figure is None:
            return round(heldout_bits_per_char(model, metadata, text), 6)
        return heldout_figure(model, metadata, text)

    figure = measure(heldout_text)
    check = check_text(heldout_text)
    key = heldout_key(metadata)
    metadata["heldout"]["check"] = {"characters": len(check), key: measure(check)}
    model.train(was_training)
    metadata["heldout"] = {key: figure, **metadata["heldout"]}
    (folder / f"{name}.json").write_text(
        json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return metadata


def _read(folder: Traversable, file: str, name: str, what: str) -> bytes:
    entry = folder / file
    if not entry.is_file():
        raise FileNotFoundError(
            f"checkpoint {name!r}: its {what} {file} is missing from {folder}. "
            f"Remake the checkpoints with `{REMAKE_COMMAND}` (python -m tools.make_checkpoints)."
        )
    return entry.read_bytes()


def _corrupt(name: str, file: str, problem: str) -> CheckpointError:
    return CheckpointError(
        f"checkpoint {name!r}: {file} is corrupt ({problem}). "
        f"Restore it from the course repository or remake it with `{REMAKE_COMMAND}`."
    )


def read_metadata(name: str, directory: str | Path | None = None) -> dict[str, Any]:
    """Read and check ``<name>.json`` (every key of :data:`METADATA_KEYS`, with its type)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"name: expected a checkpoint name such as 'char_lstm_stdlib', got {name!r}"
        )
    folder = _folder(directory)
    file = f"{name}.json"
    if not (folder / file).is_file():
        raise FileNotFoundError(
            f"checkpoint {name!r}: no metadata file {file} in {folder} "
            f"(available: {', '.join(available_checkpoints(directory)) or 'none'}). "
            f"Remake the checkpoints with `{REMAKE_COMMAND}` (python -m tools.make_checkpoints)."
        )
    try:
        metadata = json.loads(_read(folder, file, name, "metadata file").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _corrupt(name, file, f"not valid JSON: {error}") from error
    if not isinstance(metadata, dict):
        raise _corrupt(name, file, "expected a JSON object")
    wrong = [k for k, kind in METADATA_KEYS.items() if not isinstance(metadata.get(k), kind)]
    if isinstance(metadata.get("heldout"), dict) and "vocab" not in wrong:
        figure = heldout_key(metadata)
        wrong += [f"heldout.{figure}"] if figure not in metadata["heldout"] else []
    wrong += [
        f"{k}.{sub}"
        for k, subs in NESTED_KEYS.items()
        if isinstance(metadata.get(k), dict)
        for sub in subs
        if sub not in metadata[k]
    ]
    if wrong:
        raise _corrupt(name, file, f"missing or malformed entries: {', '.join(wrong)}")
    return metadata


def load_heldout_text(name: str, directory: str | Path | None = None) -> str:
    """The held-out text a checkpoint's recorded figure was measured on."""
    metadata = read_metadata(name, directory)
    file = metadata["heldout"]["file"]
    data = _read(_folder(directory), file, name, "held-out text")
    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise _corrupt(name, file, f"not gzipped UTF-8 text: {error}") from error
    if _sha256(text.encode("utf-8")) != metadata["heldout"]["sha256"]:
        raise _corrupt(name, file, "its SHA-256 differs from the one in the metadata")
    return text


def load_checkpoint(
    name: str, directory: str | Path | None = None
) -> tuple[nn.Module, dict[str, Any]]:
    """Load a course-trained checkpoint into today's code: returns (model in eval mode, metadata).

    Raises FileNotFoundError for a missing file, CheckpointError for a corrupt one, and
    StaleCheckpointError when the source of the module that defines the model changed since
    the checkpoint was made. Works offline from the installed package, on any OS.
    """
    metadata = read_metadata(name, directory)
    spec = metadata["model"]
    module_name, class_name = spec["module"], spec["class"]
    today = model_code_sha256(module_name)
    if today != spec["code_sha256"]:
        raise StaleCheckpointError(
            f"checkpoint {name!r} was made with other code for {class_name}: "
            f"{spec['source_file']} changed since (SHA-256 of its source {today[:12]}..., "
            f"recorded {spec['code_sha256'][:12]}...), so its weights may not mean the same "
            f"thing any more. Remake the checkpoints with `{metadata['command']}` "
            "(python -m tools.make_checkpoints) and commit them with the code change."
        )
    file = metadata["weights_file"]
    weights = _read(_folder(directory), file, name, "weights file")
    if _sha256(weights) != metadata["weights_sha256"]:
        raise _corrupt(name, file, "its SHA-256 differs from the one in the metadata")
    try:
        state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a damaged archive
        raise _corrupt(name, file, f"torch.load failed: {error}") from error
    model = getattr(importlib.import_module(module_name), class_name)(**spec["config"])
    try:
        model.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, AttributeError) as error:
        raise _corrupt(name, file, f"its tensors do not fit {class_name}: {error}") from error
    model.eval()
    return model, metadata
