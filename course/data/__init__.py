"""Corpora and tasks, all offline.

- ``course.data.code``: Python's standard-library source as a character corpus, ``CharVocab``
  and random training windows
- ``course.data.recall``: the synthetic "recall the first token" task of Lecture 2
"""
