"""The lowest layer: what every other layer may use, and nothing of theirs.

=============  =====================================================================================
module         contents
=============  =====================================================================================
``errors``     every exception class of aqmlab (the engine's two re-exported), and ``one_line``
``version``    ``__version__`` and the engine build's fingerprint (part of every cache key)
``units``      the engine's unit parsers (rates, durations, sizes) and the printed forms of values
``metrics``    Jain's index, written once
``io``         bounded reads, atomic writes, tables as CSV, Parquet and Arrow
``parquet``    a standard-library Parquet writer for the engine's tables
``compat``     ``tomllib`` on every supported Python
=============  =====================================================================================

Nothing here imports pandas, pyarrow, matplotlib or scipy at import time.
"""
