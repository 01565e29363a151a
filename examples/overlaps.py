"""Read overlaps from Python: both strands, classified, written as PAF.

    python examples/overlaps.py [READS] [--n N] [-o overlaps.paf]

Finds the overlaps between the first N reads (default 40) of READS (default
``reads_cdiph40.fa`` beside this script: the first 40 reads of the shared data
set's ``reads_cdiph.fa``), prints a summary and a few records, and writes them
as PAF.
"""

import argparse
from collections import Counter
from pathlib import Path

from pairalign import load
from pairalign.pipelines import find_overlaps, write_paf
from pairalign.sequences import records_from_python

HERE = Path(__file__).resolve().parent

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("reads", nargs="?", default=str(HERE / "reads_cdiph40.fa"))
ap.add_argument("--n", type=int, default=40)
ap.add_argument("-o", "--output", default="overlaps.paf")
args = ap.parse_args()

reads = load(args.reads)
reads = records_from_python(reads.sequences[:args.n], ids=reads.ids[:args.n], alphabet="dna")
overlaps = find_overlaps(reads, min_overlap=100, min_identity=0.8)
print(f"{len(reads)} reads, {len(overlaps)} overlaps:",
      dict(Counter((o.kind, o.strand) for o in overlaps)))
for o in overlaps[:5]:
    print(f"  {o.query} {o.query_start}-{o.query_end} {o.strand} {o.target} "
          f"{o.target_start}-{o.target_end}: {o.kind}, {o.overlap_length} bp, "
          f"identity {o.identity:.3f}")
write_paf(args.output, overlaps)
print(f"PAF: {args.output}")
