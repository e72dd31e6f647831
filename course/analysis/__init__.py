"""Measurements that return numbers (their figures are in ``course.viz``).

- ``course.analysis.lm``: held-out bits per character, n-gram baselines, samples
- ``course.analysis.gradients``: how far gradients reach back in RNN, LSTM and GRU cells
- ``course.analysis.interpret``: text features, LSTM cell states and best-matching cells
- ``course.analysis.geometry``: anisotropy of representations, layer by layer (Unit 7)
"""
