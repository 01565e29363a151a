"""Substitution matrices and gap penalties: the scoring scheme of an alignment.

Gap convention (as parasail, EMBOSS and Biopython): a gap of length ``k`` costs
``gap_open + (k - 1) * gap_extend``; ``gap_open`` is the cost of the first gap
position. BLAST and scikit-bio's ``pair_align`` charge ``o + k * e`` instead:
their ``(o, e)`` is our ``(o + e, e)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .alphabet import DNA_LETTERS, PROTEIN_LETTERS, Alphabet, mask_bytes
from .errors import OptionError
from .matrices import MATRIX_NAMES, SCORE_LIMIT, MatrixLike, load_matrix

__all__ = ["Scoring", "MATRIX_NAMES", "PROTEIN_DEFAULTS", "DNA_DEFAULTS", "INT16_LIMIT",
           "INT32_LIMIT"]

PROTEIN_DEFAULTS = {"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1}
DNA_DEFAULTS = {"match": 2, "mismatch": -3, "gap_open": 5, "gap_extend": 2}

#: Letters scored as another where the matrix lacks them (their stand-in). A
#: scoring reads them as their stand-in; a job whose sequences hold them gives
#: them codes of their own with the stand-in's scores
#: (:meth:`Scoring.for_residues`), so that U against X is no identity.
_FALLBACK = {"U": "X", "O": "X", "J": "X", "B": "X", "Z": "X", "*": "X"}
_DNA_FALLBACK = {"U": "T"}

#: Scores must stay within these bounds for 16-bit and 32-bit arithmetic.
INT16_LIMIT = 16_000
INT32_LIMIT = 1 << 29


@dataclass(frozen=True, repr=False)
class Scoring:
    """A substitution matrix over encoded residues, and affine gap costs.

    Parameters
    ----------
    matrix : numpy.ndarray
        ``K x K`` int32 scores, indexed by residue codes.
    letters : str
        The letter of each code, in matrix order.
    gap_open : int
        Cost (positive) of the first position of a gap.
    gap_extend : int
        Cost (positive) of each further position of a gap.
    alphabet : {"protein", "dna"}
        Which sequences the scheme scores.
    name : str
        The matrix name, or ``"match/mismatch"``.
    lookup : numpy.ndarray
        uint8[256]: the code of each byte value (upper and lower case).
    active : int or None
        Where set (:meth:`for_residues`), the codes of a job's residues are
        the first ``active``: the kernels score by :attr:`kernel_matrix`.

    Examples
    --------
    >>> s = Scoring.create("protein")
    >>> s.name, s.gap_open, s.gap_extend
    ('BLOSUM62', 11, 1)
    >>> int(s.score("W", "W"))
    11
    """

    matrix: np.ndarray
    letters: str
    gap_open: int
    gap_extend: int
    alphabet: Alphabet
    name: str
    lookup: np.ndarray = field(repr=False)
    active: int | None = None

    @classmethod
    def create(
        cls,
        alphabet: Alphabet,
        matrix: MatrixLike | None = None,
        gap_open: int | None = None,
        gap_extend: int | None = None,
        match: int | None = None,
        mismatch: int | None = None,
    ) -> "Scoring":
        """Build the scoring of an alphabet, filling in the defaults.

        Protein: ``matrix`` (default BLOSUM62), open 11, extend 1. DNA:
        ``match``/``mismatch`` (default 2/-3) or a matrix such as NUC.4.4,
        open 5, extend 2. A matrix is a name of :data:`MATRIX_NAMES`, a file
        in the NCBI format or a scikit-bio ``SubstitutionMatrix``
        (:func:`pairalign.matrices.load_matrix`): symmetric, of whole
        numbers, of the alphabet's letters only; a protein matrix scores the
        20 amino acids and X (or each of B, Z, J, U, O and ``*`` it reads),
        a DNA matrix A, C, G, T and N (or each IUPAC code).
        """
        if alphabet not in ("protein", "dna"):
            raise OptionError(f"unknown alphabet {alphabet!r}: expected protein or dna")
        if alphabet == "protein":
            if match is not None or mismatch is not None:
                raise OptionError("--match/--mismatch apply to DNA, and these sequences read "
                                  "as protein (--alphabet dna if they are DNA); use --matrix "
                                  "for protein")
            scores, letters, name = load_matrix(
                PROTEIN_DEFAULTS["matrix"] if matrix is None else matrix)
            if set("ARNDCQEGHILKMFPSTWYV") - set(letters):
                raise OptionError(f"matrix {name} does not score the 20 amino acids")
            _only_letters_of(letters, PROTEIN_LETTERS, name, "protein")
            gap_open = PROTEIN_DEFAULTS["gap_open"] if gap_open is None else gap_open
            gap_extend = PROTEIN_DEFAULTS["gap_extend"] if gap_extend is None else gap_extend
            lookup = _lookup(letters, PROTEIN_LETTERS, _FALLBACK, name)
        else:
            if matrix is not None and (match is not None or mismatch is not None):
                raise OptionError("give either --matrix or --match/--mismatch, not both")
            if matrix is not None:
                scores, letters, name = load_matrix(matrix)
                if set("ACGT") - set(letters):
                    raise OptionError(f"matrix {name} does not score DNA (A, C, G, T)")
                _only_letters_of(letters, DNA_LETTERS, name, "DNA")
                scores, letters = _u_as_t(scores, letters, name)
            else:
                name = "match/mismatch"
                match = _integer("match", DNA_DEFAULTS["match"] if match is None else match)
                mismatch = _integer("mismatch",
                                    DNA_DEFAULTS["mismatch"] if mismatch is None else mismatch)
                if max(abs(match), abs(mismatch)) >= SCORE_LIMIT:
                    raise OptionError(f"match/mismatch scores too large ({match}, {mismatch})")
                letters = DNA_LETTERS.replace("U", "")
                scores = np.full((len(letters), len(letters)), mismatch, dtype=np.int32)
                for k in range(4):  # only A, C, G, T identities score a match
                    scores[k, k] = match
            gap_open = DNA_DEFAULTS["gap_open"] if gap_open is None else gap_open
            gap_extend = DNA_DEFAULTS["gap_extend"] if gap_extend is None else gap_extend
            lookup = _lookup(letters, DNA_LETTERS,
                             {**{c: "N" for c in DNA_LETTERS}, **_DNA_FALLBACK}, name)
        gap_open, gap_extend = _integer("gap open", gap_open), _integer("gap extend", gap_extend)
        if gap_open < 0 or gap_extend < 0:
            raise OptionError(f"gap costs must be >= 0 (got open {gap_open}, extend {gap_extend})")
        if gap_open < gap_extend:
            raise OptionError(
                f"gap open ({gap_open}) must be at least gap extend ({gap_extend}): a gap "
                f"of length k costs open + (k - 1) * extend, and opening is the first position")
        if gap_open >= SCORE_LIMIT or gap_extend >= SCORE_LIMIT:
            raise OptionError("gap costs too large")
        return cls(np.ascontiguousarray(scores, dtype=np.int32), letters, gap_open,
                   gap_extend, alphabet, name, lookup)

    def __repr__(self) -> str:
        """The scheme in a line (the matrix by name, not its scores).

        >>> Scoring.create("dna")
        Scoring(dna, match/mismatch 2/-3, gap open 5, extend 2)
        """
        what = self.name
        if self.name == "match/mismatch":
            k = self.letters.index("A")
            what += f" {self.matrix[k, k]}/{self.matrix[k, self.letters.index('C')]}"
        return (f"Scoring({self.alphabet}, {what}, gap open {self.gap_open}, "
                f"extend {self.gap_extend})")

    @cached_property
    def kernel_matrix(self) -> np.ndarray:
        """The scores that the kernels index: the codes of the job's residues
        (the first :attr:`active`), or the whole matrix."""
        if self.active is None:
            return self.matrix
        return np.ascontiguousarray(self.matrix[:self.active, :self.active])

    @cached_property
    def _not_stand_ins(self) -> bytes:
        """Every byte value but the letters scored as a stand-in (either case)."""
        keep = np.ones(256, bool)
        for c in PROTEIN_LETTERS:
            if c not in self.letters:
                keep[ord(c)] = keep[ord(c.lower())] = False
        return mask_bytes(keep)

    def for_residues(self, *texts: bytes) -> "Scoring":
        """This scoring, or, where the residues of ``texts`` hold protein
        letters that it scores as a stand-in (U, O, J as X), the same scores
        with codes that tell every letter apart.

        Identities compare codes: read as X, U against X or O would count as
        identical. The scoring returned gives each such letter a code of its
        own, with its stand-in's scores, and orders the codes so that the
        letters the texts hold come first (:attr:`active`): the GPU's warp
        kernels hold a profile of 24 letters, and the matrix's letters that
        the texts lack (B, Z, ``*`` most often) make room. Every letter
        keeps its scores (:meth:`score`), in either scoring. A scoring that
        this method returned, asked again for other texts, orders its codes
        for those.

        Examples
        --------
        >>> sc = Scoring.create("protein")
        >>> sc.for_residues(b"MKVW") is sc
        True
        >>> exact = sc.for_residues(b"MKUXW")
        >>> exact.letters[:exact.active], int(exact.score("U", "X")), int(sc.score("U", "X"))
        ('KMWXU', -1, -1)
        >>> bool(exact.encode("U")[0] == exact.encode("X")[0])
        False
        """
        if self.alphabet != "protein":
            return self
        stand_in = any(t.translate(None, self._not_stand_ins) for t in texts)
        if not stand_in and self.active is None:
            return self
        present = np.zeros(256, bool)
        for t in texts:
            present[np.frombuffer(t, np.uint8)] = True
        held = {chr(b).upper() for b in np.flatnonzero(present)}
        if not stand_in and all(self.lookup[ord(c)] < self.active for c in held):
            return self  # a scoring of this method's whose codes hold these texts
        own = [c for c in self.letters if c in held]
        stand_ins = [c for c in PROTEIN_LETTERS if c not in self.letters and c in held]
        letters = own + stand_ins + [c for c in self.letters if c not in held]
        source = self.lookup[np.frombuffer("".join(letters).encode(), np.uint8)]
        code = {c: k for k, c in enumerate(letters)}
        lookup = np.zeros(256, np.uint8)
        for c in PROTEIN_LETTERS:
            k = code.get(c, code[self.letters[self.lookup[ord(c)]]])
            lookup[ord(c)] = lookup[ord(c.lower())] = k
        return Scoring(np.ascontiguousarray(self.matrix[np.ix_(source, source)]),
                       "".join(letters), self.gap_open, self.gap_extend, self.alphabet,
                       self.name, lookup, len(own) + len(stand_ins))

    @property
    def max_abs_score(self) -> int:
        """The largest absolute value in the matrix."""
        return int(np.abs(self.matrix).max())

    def score_bound(self, n: int | np.ndarray, m: int | np.ndarray,
                    mode: str = "global") -> int | np.ndarray:
        """An upper bound on ``|H|`` for any cell of an ``n x m`` alignment in
        ``mode`` (``"global"``, the widest, by default).

        From above, a path to cell ``(i, j)`` holds at most ``min(i, j)``
        aligned pairs and gaps cost: ``H <= max(0, best score) * min(n, m)``.
        From below, ``H`` is the best of all paths, so at least one path's
        score: in global mode the path of two gaps, ``-(2 * gap_open +
        gap_extend * (n + m))``; in semiglobal mode the gap straight from the
        nearer free edge, ``-(gap_open + gap_extend * min(n, m))``; in local
        mode 0.

        A pair that runs on past its end in padding beside a longer
        neighbour (a couple, a CPU task) stays within the neighbour's bound:
        every lower bound above is the score of a path of gaps from a free
        edge or of none, which padding leaves as it is, and the pad scores
        (negative) only lower the upper one.

        Examples
        --------
        >>> sc = Scoring.create("dna")
        >>> int(sc.score_bound(4000, 4000)), int(sc.score_bound(4000, 4000, "local"))
        (16010, 8000)
        """
        best = max(int(self.matrix.max()), 0)
        short = np.minimum(n, m)
        if mode == "local":
            return best * short
        if mode == "semiglobal":
            return np.maximum(best * short, self.gap_open + self.gap_extend * short)
        if mode != "global":
            raise OptionError(f"unknown mode {mode!r}: expected one of global, semiglobal, local")
        return np.maximum(best * short, 2 * self.gap_open + self.gap_extend * (n + m))

    def _bound_with_gap(self, n, m, mode="global"):
        """:meth:`score_bound` with room for a gap and an aligned pair more
        (the terms a cell adds to its neighbours' values before the max)."""
        return (self.score_bound(n, m, mode) + self.gap_open + self.gap_extend
                + self.max_abs_score)

    def fits_int16(self, n: int | np.ndarray, m: int | np.ndarray,
                   mode: str = "global") -> bool | np.ndarray:
        """Whether every score of ``n x m`` alignments in ``mode`` fits 16
        bits (with room for a gap more); ``n`` and ``m`` may be integers or
        NumPy arrays."""
        return ((self._bound_with_gap(n, m, mode) < INT16_LIMIT) & (n < INT16_LIMIT)
                & (m < INT16_LIMIT))

    def score_dtype(self, n: int, m: int, mode: str = "global") -> np.dtype:
        """int16 where every score of an ``n x m`` alignment in ``mode`` fits,
        else int32."""
        if self.fits_int16(n, m, mode):
            return np.dtype(np.int16)
        if self._bound_with_gap(n, m, mode) < INT32_LIMIT:
            return np.dtype(np.int32)
        raise OptionError(f"scores of a {n} x {m} alignment could overflow 32 bits")

    def encode(self, sequence: str | bytes) -> np.ndarray:
        """Residue codes (uint8) of a sequence already validated for the alphabet."""
        raw = sequence.encode("ascii") if isinstance(sequence, str) else sequence
        return self.lookup[np.frombuffer(raw, dtype=np.uint8)]

    def score(self, x: str, y: str) -> int:
        """The substitution score of two letters."""
        return int(self.matrix[self.encode(x)[0], self.encode(y)[0]])


def _integer(name: str, value) -> int:
    """``value`` as an int where it is a whole number (``2`` or ``2.0``): scores
    are integers, and a fraction is refused, not truncated."""
    try:
        whole = int(value)
        exact = whole == value
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact or isinstance(value, bool):
        raise OptionError(f"{name} must be a whole number, got {value!r}")
    return whole


def _u_as_t(scores: np.ndarray, letters: str, name: str) -> tuple[np.ndarray, str]:
    """A DNA matrix without its U, which DNA reads as T: a U scored as T is
    dropped (T's scores stand for it), one scored otherwise refused."""
    if "U" not in letters:
        return scores, letters
    u, t = letters.index("U"), letters.index("T")
    if not (np.array_equal(scores[u], scores[t]) and scores[u, u] == scores[t, t]):
        raise OptionError(f"matrix {name} scores U apart from T: DNA reads U as T (give U "
                          f"T's scores, or no U)")
    keep = [k for k in range(len(letters)) if k != u]
    return scores[np.ix_(keep, keep)], letters.replace("U", "")


def _only_letters_of(letters: str, accepted: str, name: str, kind: str) -> None:
    """Refuse a matrix that scores letters no sequence of ``kind`` holds (a
    protein matrix given for DNA would score N as asparagine)."""
    other = [c for c in letters if c not in accepted]
    if other:
        raise OptionError(f"matrix {name} scores {', '.join(map(repr, other))}, which no "
                          f"{kind} sequence holds: is it a matrix for "
                          f"{'DNA' if kind == 'protein' else 'protein'}?")


def _lookup(letters: str, accepted: str, fallback: dict[str, str], name: str) -> np.ndarray:
    """Map every accepted letter (either case) to its matrix code."""
    table = np.zeros(256, dtype=np.uint8)
    index = {c: k for k, c in enumerate(letters)}
    for c in accepted:
        if c in index:
            code = index[c]
        elif fallback.get(c) in index:
            code = index[fallback[c]]
        else:
            stand_in = f" nor for {fallback[c]!r}, its stand-in" if c in fallback else ""
            raise OptionError(f"matrix {name} has no score for {c!r}{stand_in}")
        table[ord(c)] = table[ord(c.lower())] = code
    return table
