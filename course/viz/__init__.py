"""Figures and widgets, one module per topic. Numbers come from ``course.analysis``.

- ``course.viz.gradients``: gradient flow (BPTT terms, truncation, Jacobian products, gradient
  norms against distance, gated cells) and its widget
- ``course.viz.training``: training curves (loss, gradient norm, bits per character)
- ``course.viz.recall``: the long-range recall task
- ``course.viz.cells``: one LSTM cell's activation over text, and its widget
- ``course.viz.attention_views``: bertviz's attention head and model views, drawn offline
- ``course.viz.generation``: sampling filters on a next-token distribution (and its widget),
  generation time with and without a KV cache, XLNet's permutation masks (Unit 8)
- ``course.viz.diagrams``: architecture diagrams, one or more per lecture (RNN unrolled with
  BPTT, LSTM and GRU cells, biLM and ELMo, encoder–decoder without and with attention,
  Bahdanau's against Luong's attention, self-attention and heads, Transformer, BERT's input,
  pretraining heads and fine-tuning set-ups, causal mask and decoding tree)

Every figure is a plain function with defaults that returns the matplotlib Figure and never
closes it; every widget is a thin ``interact_*`` wrapper that drives such a function with
controls in JupyterLab. matplotlib and ipywidgets are imported inside the functions, so
importing a module stays cheap.
"""
