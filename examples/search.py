"""Query-against-targets search with the best hits per query, as BLAST tabular.

    python examples/search.py [QUERIES] [TARGETS] [--top K] [-o hits.tsv]

Searches 5 proteins of ``examples/adeno_fiber.faa`` against the whole file by
default (local alignment, BLOSUM62, gaps 11/1) and keeps the best 3 targets per
query, printed and written in BLAST's outfmt 6 columns (evalue NaN; the
bitscore column holds the raw score).
"""

import argparse
import sys
from pathlib import Path

from pairalign import load
from pairalign.pipelines import search, write_blast6
from pairalign.sequences import records_from_python

HERE = Path(__file__).resolve().parent

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("queries", nargs="?", default=None)
ap.add_argument("targets", nargs="?", default=str(HERE / "adeno_fiber.faa"))
ap.add_argument("--top", type=int, default=3)
ap.add_argument("-o", "--output", default="hits.tsv")
args = ap.parse_args()

targets = load(args.targets)
if args.queries is None:  # every 50th target as a query
    queries = records_from_python(targets.sequences[::50], ids=targets.ids[::50])
else:
    queries = load(args.queries)

result, hits = search(queries, targets, top=args.top)
write_blast6(sys.stdout.buffer, result, hits)
write_blast6(args.output, result, hits)
print(f"{len(queries)} queries x {len(targets)} targets, {len(hits)} hits: {args.output}",
      file=sys.stderr)
