"""Shared helpers for the sequence-models course.

Import the submodule you need; nothing heavy is imported here:

- ``course.data``: offline corpora (Python's own source code) and character vocabularies
- ``course.models``: the small models later units reuse
- ``course.train``: a training loop with a progress bar and a wall-clock budget
- ``course.viz``: plotting functions with defaults, and thin ``interact`` wrappers
- ``course.checks``: shape guards and the comparisons that visible tests use
- ``course.metrics``: recording measured figures for the benchmark table
"""

__version__ = "0.1.0"
