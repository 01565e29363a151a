"""Distance matrices and guide trees from all-vs-all alignments.

Distances (``kind``), for each pair ``i, j`` of an all-vs-all result:

``identity`` (default)
    ``1 - identities / length``: the fraction of alignment columns (gap columns
    included) that are not identical residues. Needs traceback.
``kimura``
    Kimura's protein correction of that distance: with ``p = 1 - identity``,
    ``d = -ln(1 - p - 0.2 p^2)``. The log argument reaches 0 at
    ``p ~ 0.854``; there, and wherever ``d`` would exceed it, ``d`` is capped at
    :data:`KIMURA_MAX` (5.0, reached at ``p ~ 0.85``), so the distance stays
    finite and non-decreasing in ``p``.
``score``
    ``1 - S_ij / min(S_ii, S_jj)``, floored at 0, where ``S_ij`` is the pair's
    alignment score and ``S_ii`` the score of sequence ``i`` aligned with itself
    without gaps: the sum of the diagonal matrix scores of its residues (the
    global self-alignment score under any matrix whose diagonal dominates its
    rows, BLOSUM62 and the DNA match/mismatch matrix included). Identical
    sequences are at 0; a negative ``S_ij`` (possible in global mode) gives a
    distance above 1. Where ``min(S_ii, S_jj)`` is 0 or less (a sequence of N
    or X alone scores nothing against itself), there is no scale to measure
    ``S_ij`` against: the distance is 0 for identical sequences and 1 for any
    others. A matrix row whose diagonal is not its largest score (BLOSUM62's
    X: X-X -1, X-S 0) lets ``S_ij`` pass ``S_ii``, and the floor puts such
    sequences (X-masked stretches against residues) at 0. Works without
    traceback.

The diagonal is 0 and the matrix symmetric. Guide trees are built by
scikit-bio (:func:`skbio.tree.upgma`, :func:`skbio.tree.nj`) from the
distances, and written as Newick with the input ids verbatim as tip names (so
tools such as Clustal Omega's ``--guidetree-in`` match them to the FASTA ids).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import OptionError
from ..output import write_all, writing_to

if TYPE_CHECKING:
    import skbio

    from ..api import SequencesLike
    from ..output import PathOrHandle
    from ..results import AlignmentResult

#: Cap of the Kimura protein distance (where the log argument is <= 0 or the
#: distance would exceed it).
KIMURA_MAX = 5.0

DISTANCES = ("identity", "kimura", "score")
METHODS = ("upgma", "nj")

#: Characters that a Newick name cannot hold unquoted (an unquoted ``_`` is read
#: as a space; Clustal Omega reads quoted names as they are).
_NEWICK_SPECIAL = set("()[]':;,_ \t\n")


def _identity_distances(result) -> np.ndarray:
    p = result.pairs
    if not result.traceback or (len(p) and (p.length < 0).any()):
        raise OptionError("distance needs alignments (traceback): use kind='score' "
                          "or keep traceback on")
    # (length - identities) / length: exact for exact fractions, unlike 1 - x / y
    # (length - identities) / length: exact for exact fractions, unlike 1 - x / y;
    # an empty (local) alignment is as distant as can be
    return np.where(p.length > 0, (p.length - p.identities) / np.maximum(p.length, 1), 1.0)


def _self_scores(result) -> np.ndarray:
    sc = result.scoring
    diag = np.diagonal(sc.matrix).astype(np.int64)
    return np.array([int(diag[sc.encode(s)].sum()) for s in result.sequences], np.int64)


def distance_matrix(result: AlignmentResult,
                    kind: Literal["identity", "kimura", "score"] = "identity"
                    ) -> skbio.DistanceMatrix:
    """A :class:`skbio.DistanceMatrix` from an all-vs-all :class:`AlignmentResult`.

    See the module documentation for the definitions of ``kind``.

    Examples
    --------
    >>> import pairalign
    >>> from pairalign.pipelines import distance_matrix
    >>> res = pairalign.align_all(["MKVLA", "MKVIA", "MRVLA"], mode="global")
    >>> distance_matrix(res)[0, 1]
    np.float64(0.2)
    """
    from skbio import DistanceMatrix

    _check_kind(kind)
    if not result.all_vs_all:
        raise OptionError("a distance matrix needs an all-vs-all result")
    out = np.zeros((len(result.ids), len(result.ids)), np.float64)
    _put_distances(out, result, kind, _self_scores(result) if kind == "score" else None)
    return DistanceMatrix(out, ids=list(result.ids))


def _check_kind(kind: str) -> None:
    if kind not in DISTANCES:
        raise OptionError(f"unknown distance {kind!r}: expected one of {', '.join(DISTANCES)}")


def _put_distances(out: np.ndarray, result, kind: str, self_scores) -> None:
    """The distances of ``result``'s pairs into the square matrix ``out``, at
    both of each pair's places (``self_scores``: for ``score`` distances)."""
    p = result.pairs
    if kind == "score":
        least = np.minimum(self_scores[p.query], self_scores[p.target]).astype(np.float64)
        d = np.maximum((least - p.score) / np.maximum(least, 1.0), 0.0)
        scaleless = np.flatnonzero(least <= 0)
        if scaleless.size:  # no scale to measure the score against: same or not
            seqs = result.sequences
            d[scaleless] = [0.0 if seqs[q] == seqs[t] else 1.0 for q, t in
                            zip(p.query[scaleless], p.target[scaleless])]
    else:
        d = _identity_distances(result)
        if kind == "kimura":
            arg = 1.0 - d - 0.2 * d * d
            with np.errstate(divide="ignore", invalid="ignore"):
                k = 0.0 - np.log(np.where(arg > 0, arg, 1.0))  # not -0.0 at p = 0
            d = np.where(arg > 0, np.minimum(k, KIMURA_MAX), KIMURA_MAX)
    out[p.query, p.target] = d
    out[p.target, p.query] = d


def tree_from_distances(dm: skbio.DistanceMatrix,
                        method: Literal["upgma", "nj"] = "upgma") -> skbio.TreeNode:
    """A :class:`skbio.TreeNode` by scikit-bio's UPGMA or neighbour joining."""
    from skbio.tree import nj, upgma

    if method not in METHODS:
        raise OptionError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
    if dm.shape[0] < 2:
        raise OptionError("a guide tree needs at least 2 sequences")
    if dm.shape[0] < 3:  # scikit-bio's methods need 3; two tips make one edge
        from skbio import TreeNode
        a, b = dm.ids
        half = float(dm[0, 1]) / 2
        return TreeNode(children=[TreeNode(a, length=half), TreeNode(b, length=half)])
    if method == "upgma":
        return upgma(dm)
    # nj's tree is unrooted (three children at the top); MSA tools such as Clustal
    # Omega want a rooted guide tree: root it at the midpoint of its longest path
    return root_at_midpoint(nj(dm))


def root_at_midpoint(tree: skbio.TreeNode) -> skbio.TreeNode:
    """``tree`` rooted on a new node at the midpoint of its longest tip-to-tip
    path: a binary root, whatever the lengths.

    scikit-bio's ``root_at_midpoint`` (0.7) makes the node at the midpoint the
    root where the midpoint falls on a node, a root of three children that
    Clustal Omega refuses ("User tree must be rooted"), and can climb past
    the root by rounding and fail. Here the walk from the path's farther tip
    stops at the edge below the two tips' common ancestor at the latest (the
    midpoint lies on that side), and the root goes on the edge that holds it.
    """
    from skbio import TreeNode

    longest, (a, b) = tree.maxdist()
    half = longest / 2.0
    top = tree.lca([a, b]) if a is not b else a
    node = a if a.distance(top) >= b.distance(top) else b
    climbed = 0.0
    while node is not top and node.parent is not top and \
            climbed + (node.length or 0.0) < half:
        climbed += node.length or 0.0
        node = node.parent
    if node is top:  # a single tip (no edge above it to cut): any edge will do
        node = next(iter(tree.children))
    root = TreeNode()
    node.insert(root, min(max(half - climbed, 0.0), node.length or 0.0))
    root.unrooted_move(branch_attrs={"length", "support"})
    return root


def guide_tree(sequences: SequencesLike, method: Literal["upgma", "nj"] = "upgma",
               distance: Literal["identity", "kimura", "score"] = "identity",
               **align_options: Any) -> tuple[skbio.DistanceMatrix, skbio.TreeNode]:
    """Distances and a guide tree for the sequences.

    The pairs are not held: each window's distances go into the matrix as
    the window finishes (:func:`pairalign.iter_all` with ``ordered=False``),
    so that memory holds the n x n matrix and the windows in flight.

    Parameters
    ----------
    sequences : path or sequences
        As for :func:`pairalign.align_all`.
    method : {"upgma", "nj"}
        UPGMA (rooted), or neighbour joining rooted at the midpoint.
    distance : {"identity", "kimura", "score"}
    **align_options
        Passed to :func:`pairalign.iter_all` (``mode`` defaults to ``"global"``;
        ``cigar`` to False, as no distance needs the CIGARs), but for
        ``keep`` and ``ordered``: a tree needs every pair's distance, in any
        order.

    Returns
    -------
    (skbio.DistanceMatrix, skbio.TreeNode)

    Raises
    ------
    pairalign.InputError
        Where the sequences do not read.
    pairalign.OptionError
        For a bad option, ``keep`` or ``ordered`` among them.

    Examples
    --------
    >>> from pairalign.pipelines import guide_tree
    >>> dm, tree = guide_tree(["MKVLAW", "MKVIAW", "PRQLAY"])
    >>> sorted(t.name for t in tree.tips())
    ['seq1', 'seq2', 'seq3']
    """
    from ..api import iter_all, load

    _check_kind(distance)
    for key in ("keep", "ordered"):
        if key in align_options:
            raise OptionError(f"a guide tree takes every pair's distance, in any order: "
                              f"{key} is not an option of guide_tree")
    align_options.setdefault("mode", "global")
    if distance == "score":
        align_options.setdefault("traceback", False)
    else:  # identities and lengths: the alignments' operations are not needed
        align_options.setdefault("cigar", False)
    recs = load(sequences, align_options.pop("alphabet", None))
    out = np.zeros((len(recs), len(recs)), np.float64)
    self_scores = None
    for part in iter_all(recs, ordered=False, **align_options):
        if distance == "score" and self_scores is None:
            self_scores = _self_scores(part)
        _put_distances(out, part, distance, self_scores)
    from skbio import DistanceMatrix  # after the run: its peak memory without scikit-bio's

    dm = DistanceMatrix(out, ids=list(recs.ids))
    return dm, tree_from_distances(dm, method)


def _newick_name(name: str) -> str:
    if any(c in _NEWICK_SPECIAL for c in name):
        return "'" + name.replace("'", "''") + "'"
    return name


def _fmt_length(x: float) -> str:
    return f"{max(float(x), 0.0) + 0.0:.6g}"  # + 0.0: -0.0 prints as 0


def newick_string(tree: skbio.TreeNode) -> str:
    """Newick text of a tree, tip names verbatim (quoted only where they hold
    Newick's special characters), branch lengths with 6 significant digits
    (negative lengths written as 0)."""
    parts: list[str] = []

    def emit(node) -> None:
        # iterative would be safer for huge trees; recursion depth is the tree height
        if node.children:
            parts.append("(")
            for k, child in enumerate(node.children):
                if k:
                    parts.append(",")
                emit(child)
            parts.append(")")
        if node.name is not None and (not node.children or node.name):
            parts.append(_newick_name(str(node.name)))
        if node.length is not None and node.parent is not None:
            parts.append(":" + _fmt_length(node.length))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * tree.count() + 1000))
    try:
        emit(tree)
    finally:
        sys.setrecursionlimit(limit)
    return "".join(parts) + ";\n"


def write_newick(handle_or_path: PathOrHandle, tree: skbio.TreeNode) -> None:
    """The tree in Newick, to a binary handle or a path (written atomically;
    ``"-"`` for standard output)."""
    with writing_to(handle_or_path) as handle:
        write_all(handle, newick_string(tree).encode())


def write_distances(handle_or_path: PathOrHandle, dm: skbio.DistanceMatrix,
                    fmt: Literal["phylip", "lsmat"] = "phylip") -> None:
    """The distance matrix, to a binary handle or a path (written atomically):
    ``phylip`` (scikit-bio's ``phylip_dm``: relaxed PHYLIP, ids of any length,
    square layout) or ``lsmat`` (tab-separated with a header row)."""
    buf = io.StringIO()
    if fmt == "phylip":
        dm.write(buf, format="phylip_dm", layout="square")
    elif fmt == "lsmat":
        dm.write(buf, format="lsmat")
    else:
        raise OptionError(f"unknown distance format {fmt!r}: expected phylip or lsmat")
    with writing_to(handle_or_path) as handle:
        write_all(handle, buf.getvalue().encode())
