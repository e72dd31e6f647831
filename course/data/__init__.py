"""Corpora and tasks, all offline.

- ``course.data.code``: Python's standard-library source as a character corpus, ``CharVocab``
  and random training windows
- ``course.data.english``: English prose (the World English Bible and the Python documentation)
  with document and sentence order, and two WordNet tasks (part of speech, supersense);
  prepared files in ``course/data/files/`` with their sources and licences
- ``course.data.recall``: the synthetic "recall the first token" task of Lecture 2
- ``course.data.key_value``: sequences of key-value pairs, each with its own random mapping,
  for in-context learning (Unit 8)
- ``course.data.wordpiece``: WordPiece by the likelihood rule and greedy longest-match-first
  tokenisation (Unit 7), compared with the ``tokenizers`` library
- ``course.data.bert_inputs``: BERT's special tokens, sentence-pair framing, MLM masking and
  NSP pairs
- ``course.data.dates``, ``course.data.numbers``, ``course.data.sorting``: generated
  translation tasks, words in and characters out (Units 4 and 6), on the shared base of
  ``course.data.translation``
"""
