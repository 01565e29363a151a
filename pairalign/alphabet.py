"""The letters pairalign accepts for protein and DNA, and alphabet detection."""

from __future__ import annotations

from typing import Literal

import numpy as np

Alphabet = Literal["protein", "dna"]
ALPHABETS: tuple[str, ...] = ("protein", "dna")

#: Letters accepted in protein sequences (upper case; lower case is folded).
#: The 20 amino acids, the ambiguity codes B, Z, J, X, selenocysteine U,
#: pyrrolysine O and the stop ``*``.
PROTEIN_LETTERS = "ACDEFGHIKLMNPQRSTVWYBZJXUO*"

#: Letters accepted in DNA sequences: the IUPAC nucleotide codes (U read as T).
DNA_LETTERS = "ACGTURYKMSWBDHVN"

_CORE_DNA = "ACGTUN"


def _letter_mask(letters: str) -> np.ndarray:
    mask = np.zeros(256, dtype=bool)
    for c in letters:
        mask[ord(c)] = True
        mask[ord(c.lower())] = True
    return mask


PROTEIN_MASK = _letter_mask(PROTEIN_LETTERS)
DNA_MASK = _letter_mask(DNA_LETTERS)
_CORE_DNA_MASK = _letter_mask(_CORE_DNA)


def mask_bytes(mask: np.ndarray) -> bytes:
    """The bytes a 256-entry mask allows, as ``bytes.translate`` deletes them."""
    return np.flatnonzero(mask).astype(np.uint8).tobytes()


_DNA_BYTES = mask_bytes(DNA_MASK)
_CORE_DNA_BYTES = mask_bytes(_CORE_DNA_MASK)


def allowed_mask(alphabet: Alphabet) -> np.ndarray:
    """Boolean table over byte values: which bytes the alphabet accepts."""
    if alphabet == "protein":
        return PROTEIN_MASK
    if alphabet == "dna":
        return DNA_MASK
    raise ValueError(f"unknown alphabet {alphabet!r}: expected one of {', '.join(ALPHABETS)}")


def detect_alphabet(residues: np.ndarray) -> Alphabet:
    """Guess the alphabet of a set of sequences from their residue counts.

    DNA when every byte is an IUPAC nucleotide code and at least 90% of them
    are A, C, G, T, U or N; protein otherwise.

    Parameters
    ----------
    residues : numpy.ndarray
        The bytes (``uint8``) of all sequences, concatenated.

    Returns
    -------
    str
        ``"dna"`` or ``"protein"``.
    """
    if residues.size == 0:
        return "protein"
    # bytes.translate deletes a table's bytes at memory speed: what is left
    # of the residues without the DNA codes (or without the core ones)
    text = np.ascontiguousarray(residues, dtype=np.uint8).tobytes()
    if text.translate(None, _DNA_BYTES):
        return "protein"
    core = residues.size - len(text.translate(None, _CORE_DNA_BYTES))
    return "dna" if core >= 0.9 * residues.size else "protein"
