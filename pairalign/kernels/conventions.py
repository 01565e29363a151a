"""Codes shared by every backend: modes, traceback origins, alignment operations.

The numba kernels freeze these constants in when they compile; kernels cached
with other values are dropped before use (:mod:`._numba_cache`)."""

GLOBAL = 0
SEMIGLOBAL = 1
LOCAL = 2
MODES = {"global": GLOBAL, "semiglobal": SEMIGLOBAL, "local": LOCAL}

ORIGIN_STOP = 0
ORIGIN_DIAG = 1
ORIGIN_E = 2
ORIGIN_F = 3

#: Alignment operations, run-length encoded: an aligned pair of residues
#: (``M``: a match or a mismatch, told apart from the residues when a CIGAR is
#: written with ``=`` and ``X``), a query residue against a gap (``I``,
#: consumes the query) and a target residue against a gap (``D``, consumes the
#: target), as in SAM with the query as the read.
OP_ALIGNED = 0
OP_INS = 1
OP_DEL = 2
OP_CHARS = b"MID"
