"""Shared helpers for the sequence-models course.

Import the module you need; nothing heavy is imported here. One topic per module:

- ``course.data``: corpora and tasks (``code``: Python's own source and character vocabularies;
  ``recall``: the synthetic long-range recall task)
- ``course.models``: one model family per file (``recurrent``: CharRNN, CharLSTM, taggers)
- ``course.train``: the one training loop (``fit``), with clipping, a progress bar and a
  wall-clock budget, and the language-model trainer built on it
- ``course.analysis``: measurements that return numbers (``lm``: bits per character, baselines,
  samples; ``gradients``: gradient flow; ``interpret``: interpretable cells)
- ``course.viz``: figures and widgets by topic (``gradients``, ``training``, ``recall``,
  ``cells``): figure functions with defaults, and thin ``interact`` wrappers
- ``course.checks``: shape, dtype and input guards, and the comparisons that visible tests use
- ``course.metrics``: recording measured figures for the benchmark table
- ``course.checkpoints``: course-trained models that lectures load (``make checkpoints``)
"""

__version__ = "0.1.0"
