"""CPU model of the GPU's bounded local traceback (``gpu_backend.BOUNDED_TRACEBACK``):
does the traceback of each pair's box alone give the reference's alignment, and
how many cells do the reverse pass and the boxes take?

    python benchmarks/bounded_model.py [--cells 1e9] [--seed 3]

For every pair of each workload, from the CPU backend's score-only results
(score and end cell, the first best in row-major order of the kernels'
orientation): the reverse pass (the DP backwards from the end cell, anchored
there, states of score <= 0 dead; stripes of ``--rows`` reversed rows as
``bound_starts`` runs it) gives the least row and column where an alignment of
the score that ends there starts; a plain local fill with traceback of the box
from there to the end cell is walked with the reference's tie rules (a model
of ``pairalign.kernels.cpu``, checked against it on the whole pairs first).
Prints, per workload, the pairs whose box alignment differs from the
reference's (the script exits 1 if any does) and the cells of the prefix, the
reverse pass and the boxes as shares of all cells.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from numba import njit

from workloads import PROTEOME, sampled_proteins  # noqa: E402

import pairalign  # noqa: E402
from pairalign.job import SortedSet  # noqa: E402
from pairalign.kernels.gpu_backend import BOUND_CELLS, BOX_WIDE_STEPS  # noqa: E402

NEG = -(1 << 40)


@njit(cache=True)
def reverse_pass(q, t, W, go, ge, ei, ej, opt, rows, cap):
    """``bound_starts`` of align.cu: returns (i0, j0, cells computed); past
    ``cap`` cells the box is the whole prefix, as the kernel's."""
    n, m = ei, ej
    bh = np.full(m + 2, NEG, np.int64)  # the row above the stripe: H, F by column
    bf = np.full(m + 2, NEG, np.int64)
    lo, hi = 0, 0
    imax, jmax, cells = 0, 0, 0
    hl = np.empty(rows, np.int64)
    el = np.empty(rows, np.int64)
    for i0 in range(0, n, rows):
        for r in range(rows):
            hl[r] = NEG
            el[r] = NEG
        diag0 = 0 if lo == 0 else NEG  # the anchor H'(0, 0) = 0
        nlo, nhi = m + 1, -1
        j = max(lo, 1)
        while j <= m:
            hup = bh[j] if j <= hi else NEG
            fup = bf[j] if j <= hi else NEG
            diag = diag0
            diag0 = hup
            c = NEG
            for r in range(rows):
                i = i0 + r + 1
                d = diag + W[q[ei - i], t[ej - j]] if i <= n else NEG
                e = max(el[r] - ge, hl[r] - go)
                f = max(fup - ge, hup - go)
                h = max(d, e, f)
                if h <= 0 or i > n:
                    h = NEG
                diag = hl[r]
                hl[r], el[r] = h, e
                hup, fup = h, f
                c = max(c, h)
            cells += rows
            if cells > cap:
                return 1, 1, cells
            if c == opt:
                for r in range(rows):
                    if hl[r] == opt:
                        imax = max(imax, i0 + r + 1)
                        jmax = max(jmax, j)
            bh[j] = hup
            bf[j] = fup if hup > NEG else NEG
            if hup > NEG:
                nlo = min(nlo, j)
                nhi = j
            if c == NEG and j > hi:
                break
            j += 1
        if nhi < 0:
            break
        lo, hi = nlo, nhi
    return ei - imax + 1, ej - jmax + 1, cells


@njit(cache=True)
def local_walk(q, t, W, go, ge):
    """Local fill with traceback and its walk, the reference's tie rules: H from
    the diagonal, then E, then F, stopping at 0; E and F open before they
    extend; the end cell the first best in row-major order. Returns score, the
    0-based begins and exclusive ends, and the operations (0 M, 1 I, 2 D)."""
    n, m = len(q), len(t)
    H = np.zeros((n + 1, m + 1), np.int64)
    E = np.full((n + 1, m + 1), NEG, np.int64)
    F = np.full((n + 1, m + 1), NEG, np.int64)
    tb = np.zeros((n + 1, m + 1), np.int64)
    best, bi, bj = 0, 0, 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d = H[i - 1, j - 1] + W[q[i - 1], t[j - 1]]
            ee, eo = E[i, j - 1] - ge, H[i, j - 1] - go
            fe, fo = F[i - 1, j] - ge, H[i - 1, j] - go
            ev, fv = max(ee, eo), max(fe, fo)
            h = max(d, ev, fv)
            org = 0 if h <= 0 else (1 if h == d else (2 if h == ev else 3))
            tb[i, j] = org | (4 if ee > eo else 0) | (8 if fe > fo else 0)
            h = max(h, 0)
            H[i, j], E[i, j], F[i, j] = h, ev, fv
            if h > best:
                best, bi, bj = h, i, j
    ops = np.empty(n + m, np.int64)
    k, i, j, state = 0, bi, bj, 0
    while i > 0 and j > 0:
        c = tb[i, j]
        if state == 0:
            o = c & 3
            if o == 0:
                break
            if o == 1:
                ops[k] = 0
                k += 1
                i -= 1
                j -= 1
            else:
                state = 1 if o == 2 else 2
        elif state == 1:
            ops[k] = 2
            k += 1
            state = 1 if (c >> 2) & 1 else 0
            j -= 1
        else:
            ops[k] = 1
            k += 1
            state = 2 if (c >> 3) & 1 else 0
            i -= 1
    return best, i, bi, j, bj, ops[:k][::-1].copy()


def runs(ops) -> str:
    out, prev, count = [], -1, 0
    for o in list(ops) + [-1]:
        if o == prev:
            count += 1
            continue
        if prev >= 0:
            out.append(f"{count}{'MID'[prev]}")
        prev, count = o, 1
    return "".join(out)


def check(label: str, seqs: list[str], rows: int, cap: int, wide_steps: int,
          **scoring) -> int:
    """Box alignments against the CPU backend's, pair by pair; returns the
    number that differ. Also the boxes' cells in wide boxes (a warp each on
    the GPU: at least ``wide_steps`` column steps of 8 rows) and in the
    prefixes of pairs whose reverse pass passed ``cap`` cells."""
    ref = pairalign.align_all(seqs, mode="local", backend="cpu", **scoring)
    sc = ref.scoring
    W = sc.matrix.astype(np.int64)
    order = SortedSet.encode(list(seqs), sc).order
    pos = np.empty(len(order), np.int64)
    pos[order] = np.arange(len(order))
    enc = [np.asarray(sc.encode(s), np.int64) for s in seqs]
    p = ref.pairs
    bad_full = bad = 0
    cells = prefix = reverse = box = wide = capped = ncapped = 0
    for k in range(len(p)):
        a, b = int(p.query[k]), int(p.target[k])
        flip = pos[a] > pos[b]  # the kernels' query is the longer (earlier sorted)
        q, t = (enc[b], enc[a]) if flip else (enc[a], enc[b])
        code, length = p.ops(k)
        ends = (p.target_begin[k], p.target_end[k], p.query_begin[k], p.query_end[k])
        if not flip:
            ends = ends[2:] + ends[:2]
        want = (int(p.score[k]), *map(int, ends),
                runs(np.repeat([{1: 2, 2: 1}.get(c, c) if flip else c for c in code], length)))
        cells += len(q) * len(t)
        s, qb, qe, tb, te, ops = local_walk(q, t, W, sc.gap_open, sc.gap_extend)
        bad_full += (s, qb, qe, tb, te, runs(ops)) != want
        score, ei, ej = want[0], want[2], want[4]
        if score <= 0:
            continue
        i0, j0, c = reverse_pass(q, t, W, sc.gap_open, sc.gap_extend, ei, ej, score, rows,
                                 cap)
        prefix += ei * ej
        reverse += c
        box_rows, box_cols = ei - i0 + 1, ej - j0 + 1
        box += box_rows * box_cols
        wide += box_rows * box_cols if -(-box_rows // 8) * box_cols >= wide_steps else 0
        if c > cap:
            ncapped += 1
            capped += box_rows * box_cols
        s, qb, qe, tb, te, ops = local_walk(q[i0 - 1:ei], t[j0 - 1:ej], W, sc.gap_open,
                                            sc.gap_extend)
        got = (s, qb + i0 - 1, qe + i0 - 1, tb + j0 - 1, te + j0 - 1, runs(ops))
        bad += got != want
    print(f"{label:34} pairs {len(p):7}  model/reference differ {bad_full}  "
          f"box/reference differ {bad}  prefix {prefix / cells:.3f}  "
          f"reverse pass {reverse / cells:.4f}  boxes {box / cells:.4f} (wide "
          f"{wide / max(box, 1):.2f}, {ncapped} capped pairs' prefixes "
          f"{capped / max(box, 1):.2f})", flush=True)
    return bad + bad_full


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=1e9)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--rows", type=int, default=16, help="reversed rows a stripe")
    ap.add_argument("--cap", type=int, default=BOUND_CELLS,
                    help="a reverse pass's cells past which the box is the prefix")
    ap.add_argument("--wide-steps", type=int, default=BOX_WIDE_STEPS,
                    help="column steps of 8 rows from which a box is wide (a warp)")
    args = ap.parse_args()
    box = (args.rows, args.cap, args.wide_steps)
    rng = np.random.default_rng(args.seed)
    sampled = sampled_proteins(args.cells, seed=args.seed)
    proteome = pairalign.read_sequences(PROTEOME).sequences
    rand = lambda letters, n, hi: ["".join(rng.choice(list(letters), rng.integers(1, hi)))  # noqa: E731
                                   for _ in range(n)]
    dna = rand("ACGT", 80, 200)
    bad = sum([
        check("sampled, BLOSUM62 11/1", sampled, *box),
        check("sampled, BLOSUM62 5/2", sampled[:120], *box, gap_open=5, gap_extend=2),
        check("proteome sample, BLOSUM62 11/1",
              [proteome[i] for i in rng.choice(len(proteome), 250, replace=False)], *box),
        check("two letters, 1/-1 3/1", rand("AG", 80, 90), *box, alphabet="dna",
              match=1, mismatch=-1, gap_open=3, gap_extend=1),
        check("DNA, 2/-3 5/2", dna, *box, alphabet="dna"),
        check("DNA, 1/-1 2/1", dna, *box, alphabet="dna", match=1, mismatch=-1,
              gap_open=2, gap_extend=1),
    ])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
