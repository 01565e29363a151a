"""How often a warp of the packed local kernel enters its end-cell slow path,
and how often it would under other floors: a CPU model (numba).

    python benchmarks/track_events.py [--warps 40] [--lengths 128,1024] [--sampled]

(``--sampled``: proteins of at most 3,000 residues of the sampled workload.)

``sass_counts.py`` counts the slow path on the device (v30: 62% of the
warp-steps at 128 residues, 3.6% at 1,024; on the sampled workload, v31,
32% in the 16-bit module's code and 15% in the 32-bit one's).
Here a warp is two queries and eight targets (query couples: 16 pairs, bands
of 4 lanes of 32 rows), all pairs run band by band, column by column, as the
kernel runs them (the lanes' one-column skew left out). A lane enters where
its column maximum c over its 32 rows reaches the floor; the warp enters a
step where any of its 64 lanes does. The floors:

- ``kernel``: c >= the pair's best so far B (at least 1): records and every
  tie (the kernel's shared floor, B - 1).
- ``ties that can win``: c > B, or c = B in a lane whose first row lies above
  the row of the cell that holds B (a tie below it never wins: the first
  row, then the first column, wins).
- ``ties in the band``: c > B, or c = B while the cell that holds B is in
  the current band (what a floor raised by one at each band's start gives).
- ``seeded``: as ``kernel`` but c >= T0 too, T0 the highest substitution
  score of a residue of the query against one of the target (a one-cell
  alignment: B reaches it, so no end cell is lost).
- ``seeded, ties in the band``: both.

Every floor must end each pair on the kernel's end cell (checked; a
mismatch stops the run). Printed per workload: warp-steps, and each
floor's share of them that enter, with the lanes' records and ties.

Then the F pre-tests (v45): a lane could skip its column maximum (one DPX
instruction a row pair, local's whole end-cell cost on the ALU pipe) where
F leaving its rows shows that none of them reaches the kernel's floor. F
below row i is at least H(r) - go - (i - r) ge for every row r above it in
the lane, so a row's H >= B forces F + go + (q - 1) ge >= B below the last
of q rows: exact as a pre-test. ``F pre-test, q rows``: the share of
warp-steps in which some lane passes it, tested below every q rows (32 /
q tests a lane); the warp computes its maxima in those.
"""

from __future__ import annotations

import argparse

import numba
import numpy as np

from workloads import sampled_proteins, uniform_proteins

from pairalign.scoring import Scoring

ROWS, LANES = 32, 4  # a lane's rows, a band's lanes (32 x 4: the score-only shape)
FLOORS = ("kernel", "ties that can win", "ties in the band", "seeded",
          "seeded, ties in the band")
PRETESTS = np.array([32, 16, 8], np.int64)  # rows below which F is tested


@numba.njit(cache=True)
def stripe_maxima(a, b, matrix, go, ge, rows, pretests):
    """Local H of query ``a`` against target ``b``; per stripe of ``rows``
    rows and column, the maximum (at least 0) and the first row (1-based)
    that holds it (0 where the maximum is 0), and for each q of
    ``pretests`` the highest F + go + (q - 1) ge below a block of q of its
    rows (the F pre-test's bound)."""
    n, m = a.size, b.size
    stripes = (n + rows - 1) // rows
    cmax = np.zeros((stripes, m + 1), np.int32)
    crow = np.zeros((stripes, m + 1), np.int32)
    fbound = np.full((pretests.size, stripes, m + 1), -(1 << 28), np.int32)
    h = np.zeros(n + 1, np.int32)
    e = np.full(n + 1, -(1 << 28), np.int32)
    col = np.zeros(n + 1, np.int32)
    for j in range(1, m + 1):
        f = -(1 << 28)
        col[0] = 0
        for i in range(1, n + 1):
            e[i] = max(e[i] - ge, h[i] - go)
            f = max(f - ge, col[i - 1] - go)
            col[i] = max(0, h[i - 1] + matrix[a[i - 1], b[j - 1]], e[i], f)
            for k in range(pretests.size):
                q = pretests[k]
                if i % q == 0 or i == n:
                    bound = max(f - ge, col[i] - go) + go + (q - 1) * ge
                    s = (i - 1) // rows
                    fbound[k, s, j] = max(fbound[k, s, j], bound)
        for i in range(1, n + 1):
            h[i] = col[i]
            s = (i - 1) // rows
            if col[i] > cmax[s, j]:
                cmax[s, j] = col[i]
                crow[s, j] = i
    return cmax, crow, fbound


@numba.njit(cache=True)
def pair_entries(cmax, crow, fbound, seed, nbands, enter, pre):
    """Mark in ``enter[f, band, j - 1]`` each (band, column) where a lane of
    this pair enters under floor f, and in ``pre[k, band, j - 1]`` where one
    passes F pre-test k under the kernel's floor; return each floor's end
    cell (best, row, column) and its records and ties."""
    stripes, m1 = cmax.shape
    m = m1 - 1
    nf = enter.shape[0]
    best = np.zeros(nf, np.int32)
    bi = np.zeros(nf, np.int32)
    bj = np.zeros(nf, np.int32)
    counts = np.zeros((nf, 2), np.int64)  # records, ties entered
    for band in range(nbands):
        for j in range(1, m + 1):
            for lane in range(LANES):
                s = band * LANES + lane
                if s >= stripes:
                    break
                c, first = cmax[s, j], crow[s, j]
                i0 = s * ROWS  # the lane's rows are i0 + 1 onwards
                for k in range(fbound.shape[0]):
                    if fbound[k, s, j] >= max(best[0], 1):
                        pre[k, band, j - 1] = True
                for f in range(nf):
                    b = best[f]
                    if f == 0:
                        go_in = c >= max(b, 1)
                    elif f == 1:
                        go_in = c > b or (c == b and c > 0 and i0 + 1 < bi[f])
                    elif f == 2:
                        go_in = c > b or (c == b and c > 0 and (bi[f] - 1) // (ROWS * LANES)
                                          == band)
                    elif f == 3:
                        go_in = c >= max(b, seed, 1)
                    else:
                        go_in = c >= seed and (c > b or (c == b and c > 0 and (bi[f] - 1)
                                                         // (ROWS * LANES) == band))
                    if not go_in:
                        continue
                    enter[f, band, j - 1] = True
                    if c > b:
                        counts[f, 0] += 1
                        best[f], bi[f], bj[f] = c, first, j
                    else:
                        counts[f, 1] += 1
                        if first < bi[f]:
                            bi[f], bj[f] = first, j
    return best, bi, bj, counts


def seed_of(a: np.ndarray, b: np.ndarray, matrix: np.ndarray) -> int:
    """The highest score of a residue of ``a`` against one of ``b``."""
    return int(matrix[np.ix_(np.unique(a), np.unique(b))].max())


def warp(queries, targets, matrix, go, ge) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """(warp-steps, steps entered per floor, records and ties per floor,
    steps passing each F pre-test) of one warp: two queries against the
    same eight targets."""
    n = max(q.size for q in queries)
    nbands = -(-n // (ROWS * LANES))
    m_warp = max(t.size for t in targets)
    enter = np.zeros((len(FLOORS), nbands, m_warp), np.bool_)
    pre = np.zeros((PRETESTS.size, nbands, m_warp), np.bool_)
    counts = np.zeros((len(FLOORS), 2), np.int64)
    for q in queries:
        for t in targets:
            cmax, crow, fbound = stripe_maxima(q, t, matrix, go, ge, ROWS, PRETESTS)
            best, bi, bj, c = pair_entries(cmax, crow, fbound, seed_of(q, t, matrix), nbands,
                                           enter, pre)
            ends = set(zip(best.tolist(), bi.tolist(), bj.tolist()))
            if len(ends) != 1:
                raise SystemExit(f"track_events.py: the floors end on different cells: {ends}")
            counts += c
    # a step of the warp runs its longest target's columns in every band
    return (nbands * m_warp, enter.reshape(len(FLOORS), -1).sum(axis=1), counts,
            pre.reshape(PRETESTS.size, -1).sum(axis=1))


def encode(seqs, sc) -> list[np.ndarray]:
    return [np.asarray(sc.encode(s), np.int64) for s in seqs]


def warps_of(seqs: list[np.ndarray], count: int, rng) -> list[tuple[list, list]]:
    """``count`` warps as the planner forms them: two queries of neighbouring
    lengths (rows r and r + 1) against eight targets of neighbouring lengths,
    none longer than the queries."""
    order = sorted(range(len(seqs)), key=lambda k: seqs[k].size)
    out = []
    for _ in range(count):
        r = int(rng.integers(9, len(order) - 1))
        k = int(rng.integers(0, r - 8))
        out.append(([seqs[order[r]], seqs[order[r + 1]]], [seqs[order[k + x]] for x in range(8)]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warps", type=int, default=40)
    ap.add_argument("--lengths", default="128,1024")
    ap.add_argument("--sampled", action="store_true", help="the sampled workload too")
    args = ap.parse_args()
    sc = Scoring.create("protein")
    matrix = np.asarray(sc.matrix, np.int32)
    rng = np.random.default_rng(7)
    workloads = [(f"length {n}", encode(uniform_proteins(rng, 1e9, n), sc))
                 for n in (int(x) for x in args.lengths.split(",") if x)]
    if args.sampled:
        # the longest proteins left out: a warp of them takes minutes here
        workloads.append(("sampled", [s for s in encode(sampled_proteins(1e11), sc)
                                      if s.size <= 3000]))
    print(f"{'workload':<12} {'floor':<26} {'warp-steps entered':>18} "
          f"{'lane records a step':>19} {'lane ties a step':>16}")
    for name, seqs in workloads:
        steps, entered, counts = 0, np.zeros(len(FLOORS)), np.zeros((len(FLOORS), 2))
        passed = np.zeros(PRETESTS.size)
        for queries, targets in warps_of(seqs, args.warps, rng):
            s, e, c, p = warp(queries, targets, matrix, sc.gap_open, sc.gap_extend)
            steps += s
            entered += e
            counts += c
            passed += p
        for f, floor in enumerate(FLOORS):
            print(f"{name:<12} {floor:<26} {entered[f] / steps:18.3f} "
                  f"{counts[f, 0] / steps:19.3f} {counts[f, 1] / steps:16.3f}")
        for k, q in enumerate(PRETESTS):
            print(f"{name:<12} {f'F pre-test, {q} rows':<26} {passed[k] / steps:18.3f}")


if __name__ == "__main__":
    main()
