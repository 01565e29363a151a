"""The scripts of examples/ run (on small inputs) and write what they promise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path



ROOT = Path(__file__).resolve().parents[1]


def run(script, *args, cwd):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_guide_tree_example(tmp_path):
    """The whole of examples/adeno_fiber.faa: Clustal Omega accepts our tree."""
    proc = run("guide_tree.py", "--out-dir", str(tmp_path), cwd=tmp_path)
    assert (tmp_path / "guide.nwk").read_text().strip().endswith(";")
    assert (tmp_path / "distances.phylip").read_text().split("\n")[0].strip() == "242"
    if shutil.which("clustalo"):
        assert "Clustal Omega aligned 242 sequences" in proc.stdout
        assert (tmp_path / "msa.fa").read_text().count(">") == 242


def test_overlaps_example(tmp_path):
    proc = run("overlaps.py", "--n", "30", "-o", str(tmp_path / "o.paf"), cwd=tmp_path)
    lines = (tmp_path / "o.paf").read_text().splitlines()
    assert lines and all(len(line.split("\t")) == 15 for line in lines)
    assert f"30 reads, {len(lines)} overlaps" in proc.stdout


def test_search_example(tmp_path):
    proc = run("search.py", "--top", "2", "-o", str(tmp_path / "hits.tsv"), cwd=tmp_path)
    lines = (tmp_path / "hits.tsv").read_text().splitlines()
    assert len(lines) == 10  # 5 queries x 2
    assert proc.stdout.splitlines() == lines
    # each query's best hit is itself
    assert all(f.split("\t")[0] == f.split("\t")[1] for f in lines[::2])
