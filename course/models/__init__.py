"""Models, one family per file, each readable top to bottom.

- ``course.models.recurrent``: CharRNN, CharLSTM and SequenceTagger (Units 1 and 2)
- ``course.models.bert``: a tiny BERT (Unit 7) with MLM and NSP heads, saved for and checked
  against ``transformers``
- ``course.models.gpt``: a GPT (Unit 8) from Unit 6's blocks, with a KV cache, checked against
  ``transformers``' GPT2LMHeadModel

Every model runs on any device: the tensors it makes follow its input's device. The analysis
helpers that build a model's inputs (``course.analysis``) move them to :func:`model_device`.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

__all__ = ["model_device"]


def model_device(model: nn.Module) -> torch.device:
    """Where a model lives: the device of its first parameter or buffer (the CPU if it has none)."""
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        return tensor.device
    return torch.device("cpu")
