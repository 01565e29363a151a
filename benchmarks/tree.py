"""Guide tree of adeno_fiber.faa against FAMSA's UPGMA tree: Robinson-Foulds distance.

    python benchmarks/tree.py [--method upgma|nj] [--distance identity|kimura|score]
                              [--mode global] [--threads 2]

Builds pairalign's guide tree for ``shared/data/adeno_fiber.faa`` and prints the
Robinson-Foulds distance (scikit-bio ``TreeNode.compare_rfd``, unrooted
bipartitions; raw count and proportion of all bipartitions of both trees) to
``shared/data/adeno_fiber.upgma.nwk`` (FAMSA's UPGMA tree), and the time taken.
"""

from __future__ import annotations

import argparse
import io
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = next((d for d in (ROOT.parent / "shared" / "data", ROOT / "shared" / "data")
             if d.is_dir()), ROOT.parent / "shared" / "data")


def famsa_tree(path: Path):
    """FAMSA's Newick, read with tip names verbatim (no underscore -> space).

    FAMSA writes ids unquoted, one of which holds a ';' (``P1;1knb``), which
    ends a tree for scikit-bio: such names are quoted before parsing.
    """
    from skbio import TreeNode

    text = re.sub(r"(?<=[(,])([^(),:']+)(?=:)",
                  lambda m: f"'{m.group(1)}'" if ";" in m.group(1) else m.group(1),
                  path.read_text().strip())
    return TreeNode.read(io.StringIO(text + "\n"), format="newick",
                         convert_underscores=False)


def main() -> None:
    from skbio import TreeNode

    from pairalign.pipelines.tree import guide_tree, newick_string

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="upgma", choices=["upgma", "nj"])
    ap.add_argument("--distance", default="identity", choices=["identity", "kimura", "score"])
    ap.add_argument("--mode", default="global", choices=["global", "semiglobal", "local"])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args()

    ref = famsa_tree(DATA / "adeno_fiber.upgma.nwk")
    t0 = time.perf_counter()
    dm, tree = guide_tree(DATA / "adeno_fiber.faa", method=args.method,
                          distance=args.distance, mode=args.mode, threads=args.threads,
                          backend=args.backend)
    elapsed = time.perf_counter() - t0
    ours = TreeNode.read(io.StringIO(newick_string(tree)), format="newick",
                         convert_underscores=False)
    assert {t.name for t in ours.tips()} == {t.name for t in ref.tips()}, "tip names differ"
    raw = ours.compare_rfd(ref, rooted=False)
    prop = ours.compare_rfd(ref, proportion=True, rooted=False)
    print(f"{len(dm.ids)} sequences, {args.method}, {args.distance} distance, "
          f"{args.mode} alignment: {elapsed:.2f} s (numba compilation included)")
    print(f"Robinson-Foulds distance to FAMSA's UPGMA tree: {raw:g} "
          f"(proportion {prop:.4f})")


if __name__ == "__main__":
    main()
