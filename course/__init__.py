"""Shared helpers for the sequence-models course.

Import the module you need; nothing heavy is imported here. One topic per module:

- ``course.data``: corpora and tasks (``code``: Python's own source and character vocabularies;
  ``recall``: the synthetic long-range recall task; ``english`` and ``words``: English prose and
  labelled tasks; ``dates`` and ``numbers``: generated translation tasks on the shared
  ``translation`` base; ``copying``: the delayed-copy task)
- ``course.models``: one model family per file (``recurrent``: CharRNN, CharLSTM, taggers;
  ``bilm``: ELMo's biLM; ``seq2seq``: an RNN encoder–decoder with attention; ``attention``:
  self-attention, multi-head attention, positional encodings; ``tiny_transformer``;
  ``transformer``: the encoder–decoder of Unit 6; ``bert``: Unit 7; ``gpt``: a decoder-only
  Transformer with a KV cache, Unit 8)
- ``course.decoding``: greedy and beam search over any step function; temperature, top-k and
  nucleus filters and sampling (Unit 8)
- ``course.train``: the one training loop (``fit``), with clipping, a progress bar and a
  wall-clock budget, and the language-model trainer built on it
- ``course.analysis``: measurements that return numbers (``lm``: bits per character, baselines,
  samples; ``gradients``: gradient flow; ``interpret``: interpretable cells; ``ngram`` and
  ``elmo``; ``seq2seq``: exact match, exposure bias; ``parameters``: parameter counts by
  formula (Transformer, BERT, GPT) and FLOPs; ``generation``: distinct-n, repetition, the
  model's own likelihood, generation time; ``permutation_lm``: XLNet's factorisation orders)
- ``course.viz``: figures and widgets by topic (``gradients``, ``training``, ``recall``,
  ``cells``, ``elmo``, ``seq2seq``, ``attention``, ``transformer``, ``generation``): figure
  functions with defaults, and thin ``interact`` wrappers
- ``course.checks``: shape, dtype and input guards, and the comparisons that visible tests use
- ``course.metrics``: recording measured figures for the benchmark table
- ``course.checkpoints``: course-trained models that lectures load (``make checkpoints``)
"""

__version__ = "0.1.0"
