"""Measurements that return numbers (their figures are in ``course.viz``).

- ``course.analysis.lm``: held-out bits per character, n-gram baselines, samples
- ``course.analysis.gradients``: how far gradients reach back in RNN, LSTM and GRU cells
- ``course.analysis.interpret``: text features, LSTM cell states and best-matching cells
- ``course.analysis.geometry``: anisotropy of representations, layer by layer (Unit 7)
- ``course.analysis.parameters``: parameter counts by formula (Transformer, BERT, GPT), FLOPs
- ``course.analysis.generation``: distinct-n, repetition, the model's own log-likelihood of
  its output, generation time with and without a KV cache (Unit 8)
- ``course.analysis.permutation_lm``: XLNet's permutation masks and factorisation orders (Unit 8)
- ``course.analysis.in_context``: accuracy on the key-value task by where the key was shown
  before, against chance, the context-free guess and any shown value (Unit 8)
"""
