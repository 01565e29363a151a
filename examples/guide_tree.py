"""Guide tree from pairalign, fed to Clustal Omega for a multiple alignment.

    python examples/guide_tree.py [FASTA] [--out-dir DIR] [--n N]

Builds a UPGMA guide tree (identity distances from global alignments) for the
adenovirus fiber proteins of ``examples/adeno_fiber.faa`` (or FASTA), writes
``guide.nwk`` and ``distances.phylip``, then runs
``clustalo -i FASTA --guidetree-in guide.nwk -o msa.fa`` when Clustal Omega is
installed (Debian: ``apt-get install clustalo``). ``--n`` keeps the first N
sequences (a quick run).
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from pairalign import load
from pairalign.pipelines import guide_tree, write_distances, write_newick
from pairalign.sequences import records_from_python

HERE = Path(__file__).resolve().parent

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("fasta", nargs="?", default=str(HERE / "adeno_fiber.faa"))
ap.add_argument("--out-dir", default=".")
ap.add_argument("--n", type=int, default=None)
ap.add_argument("--method", default="upgma", choices=["upgma", "nj"])
args = ap.parse_args()

out = Path(args.out_dir)
out.mkdir(parents=True, exist_ok=True)
records = load(args.fasta)
fasta = Path(args.fasta)
if args.n is not None:
    records = records_from_python(records.sequences[:args.n], ids=records.ids[:args.n])
    fasta = out / "input.fa"
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in zip(records.ids, records.sequences)))

dm, tree = guide_tree(records, method=args.method)  # global alignment, identity distance
write_newick(out / "guide.nwk", tree)
write_distances(out / "distances.phylip", dm)
print(f"{len(dm.ids)} sequences: {out / 'guide.nwk'}, {out / 'distances.phylip'}")

if shutil.which("clustalo") is None:
    print("clustalo not found: skipping the multiple alignment", file=sys.stderr)
    sys.exit(0)
subprocess.run(["clustalo", "-i", str(fasta), "--guidetree-in", str(out / "guide.nwk"),
                "-o", str(out / "msa.fa"), "--force"], check=True)
n_aligned = sum(line.startswith(">") for line in open(out / "msa.fa"))
print(f"Clustal Omega aligned {n_aligned} sequences with the guide tree: {out / 'msa.fa'}")
