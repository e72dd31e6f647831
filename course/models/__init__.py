"""Models, one family per file, each readable top to bottom.

- ``course.models.recurrent``: CharRNN, CharLSTM and SequenceTagger (Units 1 and 2)
- ``course.models.bert``: a tiny BERT (Unit 7) with MLM and NSP heads, saved for and checked
  against ``transformers``
- ``course.models.gpt``: a GPT (Unit 8) from Unit 6's blocks, with a KV cache, checked against
  ``transformers``' GPT2LMHeadModel
"""
