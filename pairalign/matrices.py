"""Substitution matrices: by name (scikit-bio's), from a file in the NCBI
format (as BLAST, EMBOSS and parasail read them), or a scikit-bio
``SubstitutionMatrix``.

The NCBI format: ``#`` comment lines, a line of the column letters, then a line
a letter, the letter first and its scores after it::

    #  a matrix of two letters
       A  C
    A  2 -1
    C -1  2

Every matrix is checked here for what any alphabet needs: one letter a row
and column, whole-number scores, and symmetry (the score of A against C is
that of C against A: an all-vs-all run aligns each pair once, either way
round). :meth:`pairalign.scoring.Scoring.create` checks the letters against
the alphabet.
"""

from __future__ import annotations

import os
from typing import Any, Union

import numpy as np

from .cache import cache_dir, write_atomically
from .errors import OptionError

#: Matrices available by name (through scikit-bio).
MATRIX_NAMES = ("BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90",
                "PAM30", "PAM70", "PAM250", "NUC.4.4")

#: What ``matrix=`` takes: a name of :data:`MATRIX_NAMES` (any case), a path
#: to a matrix file, or a scikit-bio ``SubstitutionMatrix`` (anything with
#: ``alphabet`` and ``scores``).
MatrixLike = Union[str, "os.PathLike[str]", Any]

#: No matrix score may reach this (the bound of match/mismatch scores too):
#: the 32-bit kernels' headroom (scoring.INT32_LIMIT // 4).
SCORE_LIMIT = (1 << 29) // 4


def load_matrix(matrix: MatrixLike) -> tuple[np.ndarray, str, str]:
    """``(scores, letters, name)`` of a matrix given by name, file or object.

    A name of :data:`MATRIX_NAMES` comes first: a file of that name is read
    only as ``./BLOSUM62`` or so.

    Examples
    --------
    >>> scores, letters, name = load_matrix("blosum62")
    >>> name, letters[:5], int(scores[0, 0])
    ('BLOSUM62', 'ARNDC', 4)
    >>> load_matrix("BLOSUM63")
    Traceback (most recent call last):
    ...
    pairalign.errors.OptionError: unknown matrix 'BLOSUM63': expected one of BLOSUM45, \
BLOSUM50, BLOSUM62, BLOSUM80, BLOSUM90, PAM30, PAM70, PAM250, NUC.4.4, or a matrix file
    """
    if isinstance(matrix, str) and matrix.upper() in MATRIX_NAMES:
        scores, letters = _named_matrix(matrix.upper())
        return scores, letters, matrix.upper()
    if isinstance(matrix, (str, os.PathLike)):
        path = os.fspath(matrix)
        if not isinstance(path, str) or not os.path.isfile(path):
            raise OptionError(f"unknown matrix {path!r}: expected one of "
                              f"{', '.join(MATRIX_NAMES)}, or a matrix file")
        scores, letters = read_matrix_file(path)
        return scores, letters, os.path.abspath(path)  # not taken for a name
    if hasattr(matrix, "alphabet") and hasattr(matrix, "scores"):
        letters = [str(c) for c in matrix.alphabet]
        kind = type(matrix).__name__
        if not all(len(c) == 1 for c in letters):
            raise OptionError(f"matrix ({kind}): its alphabet must be of single letters, "
                              f"got {letters!r}")
        scores = checked_scores(np.asarray(matrix.scores), "".join(letters), kind)
        return scores, "".join(letters).upper(), kind
    raise OptionError(f"matrix must be a name ({', '.join(MATRIX_NAMES)}), a matrix file or "
                      f"a scikit-bio SubstitutionMatrix, got {type(matrix).__name__}")


def read_matrix_file(path: str) -> tuple[np.ndarray, str]:
    """``(scores, letters)`` of a matrix file in the NCBI format (see above);
    letters in upper case. A bad file raises :class:`OptionError` naming the
    file and the line."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError as err:
        raise OptionError(f"{path}: cannot read the matrix: {err.strerror or err}") from None
    where = [k for k, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
    if not where:
        raise OptionError(f"{path}: no matrix in the file (only comments or blank lines)")

    def fail(k: int, message: str) -> OptionError:
        return OptionError(f"{path}, line {k}: {message}")

    head = lines[where[0] - 1].split()
    if any(len(c) != 1 for c in head):
        raise fail(where[0], "the first line must be the column letters, one character each")
    letters = "".join(head).upper()
    if len(set(letters)) != len(letters):
        raise fail(where[0], f"a letter twice among the columns {' '.join(head)}")
    rows: dict[str, list[int]] = {}
    for k in where[1:]:
        fields = lines[k - 1].split()
        letter, values = fields[0].upper(), fields[1:]
        if len(letter) != 1 or letter not in letters:
            raise fail(k, f"a row must start with one of the column letters, got {fields[0]!r}")
        if letter in rows:
            raise fail(k, f"a second row for {fields[0]!r}")
        if len(values) != len(letters):
            raise fail(k, f"{len(values)} scores for {len(letters)} columns")
        bad = next((v for v in values if not _whole(v)), None)
        if bad is not None:
            raise fail(k, f"scores must be whole numbers, got {bad!r}")
        rows[letter] = [int(float(v)) for v in values]
    missing = [c for c in letters if c not in rows]
    if missing:
        raise OptionError(f"{path}: no row for {', '.join(missing)}")
    scores = np.array([rows[c] for c in letters], dtype=np.float64)
    return checked_scores(scores, letters, path), letters


def _whole(text: str) -> bool:
    try:
        x = float(text)
    except ValueError:
        return False
    return bool(np.isfinite(x)) and x == int(x)


def checked_scores(scores: np.ndarray, letters: str, name: str) -> np.ndarray:
    """``scores`` as int32, where they are a square matrix of whole numbers
    within :data:`SCORE_LIMIT`, symmetric, one row a letter of ``letters``
    (told apart regardless of case)."""
    if scores.ndim != 2 or scores.shape != (len(letters), len(letters)):
        raise OptionError(f"matrix {name}: {len(letters)} letters but scores of shape "
                          f"{scores.shape}")
    if len(set(letters.upper())) != len(letters):
        raise OptionError(f"matrix {name}: a letter twice in {letters!r}")
    try:
        values = scores.astype(np.float64)
    except (TypeError, ValueError):
        raise OptionError(f"matrix {name}: scores must be numbers") from None
    if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
        raise OptionError(f"matrix {name} has non-integer scores")
    if np.abs(values).max(initial=0) >= SCORE_LIMIT:
        raise OptionError(f"matrix {name}: scores too large (at most {SCORE_LIMIT - 1:,} "
                          f"either way)")
    asym = np.argwhere(values != values.T)
    if len(asym):
        i, j = asym[0]
        raise OptionError(
            f"matrix {name} is not symmetric: {letters[i]} against {letters[j]} scores "
            f"{values[i, j]:g}, {letters[j]} against {letters[i]} {values[j, i]:g}")
    return values.astype(np.int32)


def _named_matrix(key: str) -> tuple[np.ndarray, str]:
    """A matrix of :data:`MATRIX_NAMES` from scikit-bio, kept in a user cache
    after the first read: importing scikit-bio takes longer than a small
    all-vs-all run. A cache file that does not read (damaged) is read again
    from scikit-bio."""
    cached = cache_dir() / "matrices" / f"{key}.npz"
    try:
        with np.load(cached) as data:
            return data["scores"].astype(np.int32), str(data["letters"])
    except Exception:  # missing, unreadable, or not a whole .npz file
        pass
    from skbio.sequence import SubstitutionMatrix

    sm = SubstitutionMatrix.by_name(key)
    letters = "".join(sm.alphabet)
    scores = checked_scores(np.asarray(sm.scores), letters, key)
    # a read-only home only costs the next start
    write_atomically(cached, lambda h: np.savez(h, scores=scores, letters=np.array(letters)))
    return scores, letters
