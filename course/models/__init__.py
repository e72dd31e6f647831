"""Models, one family per file, each readable top to bottom.

- ``course.models.recurrent``: CharRNN, CharLSTM and SequenceTagger (Units 1 and 2)
- ``course.models.bert``: a tiny BERT (Unit 7) with MLM and NSP heads, saved for and checked
  against ``transformers``
"""
