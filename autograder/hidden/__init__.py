"""Hidden checks, one module per assignment (named like the assignment, e.g. ``a1_rnn_bptt``)."""
