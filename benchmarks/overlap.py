"""Overlap recall and precision on simulated reads with known origins.

    python benchmarks/overlap.py [--max-start 25000 | --n 200 | --all]
                                 [--min-overlap 100] [--min-identity 0.8]
                                 [--threads 2] [--backend auto]

Reads: ``shared/data/reads_cdiph.fa`` (1,000 reads of 300-1,500 bp from
positions 0-120,000 of a C. diphtheriae chromosome, both strands, 2% errors);
truth: ``reads_cdiph.truth.tsv`` (genome interval and strand of each read).
Two reads truly overlap when their genome intervals overlap. Printed:

- recall: of the true overlaps of at least ``--recall-min`` bp (150), the
  fraction reported by :func:`pairalign.pipelines.find_overlaps`;
- precision: of the reported overlaps, the fraction that are true (any length);
- strand agreement: of the reported true overlaps, the fraction whose strand
  (``+`` when both reads come from the same genome strand) is right;
- the time (numba compilation included) and cells aligned (both strands).

The subset is deterministic: the reads whose true start is below
``--max-start`` (default 25,000), or the first ``--n`` reads, or ``--all``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = next((d for d in (ROOT.parent / "shared" / "data", ROOT / "shared" / "data")
             if d.is_dir()), ROOT.parent / "shared" / "data")


def read_truth(path: Path) -> dict[str, tuple[int, int, str]]:
    with open(path) as fh:
        return {r["id"]: (int(r["start"]), int(r["end"]), r["strand"])
                for r in csv.DictReader(fh, delimiter="\t")}


def true_overlaps(ids: list[str], truth, min_len: int) -> set[tuple[str, str]]:
    """Pairs (in input order) whose genome intervals overlap by >= min_len bp."""
    s = np.array([truth[i][0] for i in ids])
    e = np.array([truth[i][1] for i in ids])
    ov = np.minimum(e[:, None], e[None, :]) - np.maximum(s[:, None], s[None, :])
    a, b = np.nonzero(np.triu(ov >= max(min_len, 1), k=1))
    return {(ids[i], ids[j]) for i, j in zip(a.tolist(), b.tolist())}


def evaluate(overlaps, ids, truth, recall_min: int = 150) -> dict:
    order = {x: k for k, x in enumerate(ids)}
    reported = {}
    for o in overlaps:
        key = (o.query, o.target) if order[o.query] < order[o.target] else (o.target, o.query)
        reported[key] = o
    true_any = true_overlaps(ids, truth, 1)
    true_long = true_overlaps(ids, truth, recall_min)
    tp = [k for k in reported if k in true_any]
    strand_ok = sum((truth[a][2] == truth[b][2]) == (reported[(a, b)].strand == "+")
                    for a, b in tp)
    return {
        "reads": len(ids), "reported": len(reported), "true_long": len(true_long),
        "recall": len(true_long & set(reported)) / len(true_long) if true_long else 1.0,
        "precision": len(tp) / len(reported) if reported else 1.0,
        "strand": strand_ok / len(tp) if tp else 1.0,
        "missed": sorted(true_long - set(reported)),
        "false": sorted(k for k in reported if k not in true_any),
    }


def select(records, truth, max_start=None, n=None):
    from pairalign.sequences import records_from_python

    keep = list(range(len(records)))
    if max_start is not None:
        keep = [k for k in keep if truth[records.ids[k]][0] < max_start]
    if n is not None:
        keep = keep[:n]
    return records_from_python([records.sequences[k] for k in keep],
                               ids=[records.ids[k] for k in keep], alphabet="dna")


def main() -> None:
    from pairalign import read_sequences
    from pairalign.pipelines.overlap import find_overlaps

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-start", type=int, default=None)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--min-overlap", type=int, default=100)
    ap.add_argument("--min-identity", type=float, default=0.8)
    ap.add_argument("--recall-min", type=int, default=150)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args()
    if not args.all and args.max_start is None and args.n is None:
        args.max_start = 25_000

    truth = read_truth(DATA / "reads_cdiph.truth.tsv")
    recs = select(read_sequences(DATA / "reads_cdiph.fa"), truth,
                  None if args.all else args.max_start, None if args.all else args.n)
    lengths = recs.lengths.astype(np.float64)
    n = len(lengths)
    # cells of the pairs i < j on both strands (the reverse strand aligns about
    # 1/8 more: see pairalign.pipelines.overlap._reverse_pairs)
    cells = lengths.sum() ** 2 - (lengths ** 2).sum()
    t0 = time.perf_counter()
    overlaps = find_overlaps(recs, min_overlap=args.min_overlap,
                             min_identity=args.min_identity, threads=args.threads,
                             backend=args.backend)
    elapsed = time.perf_counter() - t0
    r = evaluate(overlaps, recs.ids, truth, args.recall_min)
    what = "all reads" if args.all else (f"reads with true start < {args.max_start}"
                                         if args.max_start is not None else f"first {args.n} reads")
    print(f"{n} reads ({what}), min_overlap {args.min_overlap}, min_identity "
          f"{args.min_identity}, backend {args.backend}: {elapsed:.1f} s, "
          f"{cells / 1e9:.1f} G cells, {cells / elapsed / 1e9:.2f} GCUPS")
    print(f"reported {r['reported']}, true overlaps >= {args.recall_min} bp: {r['true_long']}")
    print(f"recall {r['recall']:.4f}  precision {r['precision']:.4f}  "
          f"strand agreement {r['strand']:.4f}")
    if r["missed"]:
        print("missed (first 10):", r["missed"][:10])
    if r["false"]:
        print("false (first 10):", r["false"][:10])


if __name__ == "__main__":
    main()
