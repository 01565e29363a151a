"""Compile and cache pairalign's kernels ahead of the first real run.

A new installation compiles numba's functions (and, on a GPU, the CUDA
modules) at its first runs, several seconds each time a path is first taken,
and caches them beside the package (numba's ``__pycache__``, or
``NUMBA_CACHE_DIR``; CuPy's kernel cache). :func:`warm` takes every path of
the command line once on a few small sequences, so that a container image or
a shared installation can carry the caches: ``pairalign warm`` once after
``pip install``.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .kernels.conventions import MODES

#: Sequences long enough that their scores need 32 bits (the kernels' other
#: width) in every mode: DNA of equal length takes 16 bits to 7,994 bp in
#: local mode (``Scoring.score_bound``), proteins to 1,452 residues.
LONG_PROTEIN = 3_200
LONG_READ = 8_200


@dataclass(frozen=True)
class WarmReport:
    """What :func:`warm` ran and what it cost.

    Attributes
    ----------
    backend : str
        The backend the runs took (``"cpu"`` or ``"gpu"``).
    commands : int
        Command lines run.
    compiled : int
        numba functions compiled (0 where its cache held them all: a second
        :func:`warm` compiles none).
    seconds : float
        Wall time.
    """

    backend: str
    commands: int
    compiled: int
    seconds: float


def _fasta(path: Path, seqs: list[str], prefix: str) -> Path:
    path.write_text("".join(f">{prefix}{k}\n{s}\n" for k, s in enumerate(seqs)))
    return path


def _inputs(folder: Path) -> tuple[Path, Path]:
    """Proteins (one long enough for 32-bit scores) and DNA reads that overlap."""
    rng = np.random.default_rng(0)
    amino = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)
    lengths = [LONG_PROTEIN, LONG_PROTEIN - 7] + list(rng.integers(20, 400, 22))
    proteins = [rng.choice(amino, int(n)).tobytes().decode() for n in lengths]
    genome = rng.choice(np.frombuffer(b"ACGT", np.uint8), LONG_READ + 4_000).tobytes().decode()
    reads = [genome[k:k + n] for k, n in ((0, LONG_READ), (1_500, LONG_READ), (300, 900),
                                           (1_000, 1_200), (2_000, 700))]
    return (_fasta(folder / "proteins.fa", proteins, "p"),
            _fasta(folder / "reads.fa", reads, "r"))


def _commands(proteins: Path, reads: Path, out: Path) -> list[list[str]]:
    """The command lines whose paths compile different kernels or writers."""
    tsv = str(out / "out.tsv")
    p = str(proteins)
    commands = []
    for mode in MODES:
        commands += [["all-vs-all", p, "-o", tsv, "--mode", mode],
                     ["all-vs-all", p, "-o", tsv, "--mode", mode, "--no-traceback"]]
    commands += [
        ["all-vs-all", p, "-o", tsv, "--no-cigar", "--min-score", "1"],
        ["all-vs-all", p, "-o", tsv, "--cigar-m", "--min-identity", "0.1"],
        ["all-vs-all", p, "-o", str(out / "out.npy"), "--format", "npy"],
        ["all-vs-all", str(reads), "-o", tsv],
        ["search", p, p, "-o", tsv, "--top", "2"],
        ["search", p, p, "-o", tsv, "--format", "tsv"],
        ["overlap", str(reads), "-o", str(out / "out.paf"), "--min-overlap", "50"],
    ]
    for distance in ("identity", "kimura", "score"):
        commands.append(["tree", p, "-o", str(out / "tree.nwk"), "--distance", distance,
                         "--distances", str(out / "tree.phy")])
    return commands


def warm(backend: str = "auto") -> WarmReport:
    """Run every path of the command line once on small inputs, so that
    numba's functions (and, on a GPU, the CUDA modules and the GPU's window
    planner) are compiled and cached for later runs.

    Parameters
    ----------
    backend : {"auto", "cpu", "gpu"}
        As the command line's ``--backend``.

    Returns
    -------
    WarmReport

    Examples
    --------
    >>> from pairalign.warm import warm
    >>> warm("cpu").commands  # doctest: +SKIP
    16
    """
    from numba.core import event

    from .backends import backend_name
    from .cli import main

    name = backend_name(backend)
    t = time.perf_counter()
    with event.install_recorder("numba:compile") as recorder, \
            tempfile.TemporaryDirectory(prefix="pairalign-warm-") as tmp:
        folder = Path(tmp)
        proteins, reads = _inputs(folder)
        commands = _commands(proteins, reads, folder)
        for args in commands:
            main.main(args + ["--backend", name, "-q"], prog_name="pairalign",
                      standalone_mode=False)
        if name == "gpu":
            from .kernels import gpu_backend

            gpu_backend.GPUBackend.load_planner(gpu_backend.PLAN_IN_NUMBA_WINDOWS)
    compiled = sum(1 for _, ev in recorder.buffer if ev.is_end)
    return WarmReport(name, len(commands), compiled, time.perf_counter() - t)
