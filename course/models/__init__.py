"""Models, one family per file, each readable top to bottom.

- ``course.models.recurrent``: CharRNN, CharLSTM and SequenceTagger (Units 1 and 2)
"""
