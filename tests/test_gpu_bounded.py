"""The GPU's bounded local traceback (``gpu_backend.BOUNDED_TRACEBACK``: a score
pass, a reverse pass to where the alignments start, a traceback of each pair's
box) against the CPU's full traceback, pair by pair (skipped without a CUDA
device)."""

from __future__ import annotations

import numpy as np
import pytest

import pairalign
from pairalign.backends import gpu_available
from pairalign.engine import run_job
from pairalign.job import Job, SortedSet
from pairalign.kernels import gpu_backend
from pairalign.kernels.cpu_backend import CPUBackend
from pairalign.scoring import Scoring

from conftest import AMINO, assert_same_pairs

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="CuPy sees no CUDA device")]


@pytest.fixture(autouse=True)
def bounded(monkeypatch):
    """The bounded traceback on (it is off by default), and no CPU fallback: a
    window that fails on the GPU would otherwise be retried on the CPU."""
    from pairalign import engine

    monkeypatch.setattr(gpu_backend, "BOUNDED_TRACEBACK", True)
    monkeypatch.setattr(engine, "_default_fallback", lambda first: None)


def compare(seqs, scoring, width=None):
    """Local alignments with traceback of all pairs of ``seqs`` on the GPU and
    the CPU, field by field; returns the GPU backend's timings."""
    job = Job("local", scoring, True, SortedSet.encode(seqs, scoring))
    be = gpu_backend.GPUBackend()
    assert_same_pairs(run_job(job, be, width=width), run_job(job, CPUBackend()))
    return be.timings


def random_seqs(rng, letters, n, lo, hi):
    return ["".join(rng.choice(list(letters), int(k))) for k in rng.integers(lo, hi, n)]


def mutated(rng, base, n, rate, letters):
    """Copies of ``base`` with ``rate`` substitutions, cut at random ends."""
    out = []
    for _ in range(n):
        s = np.array(list(base))
        hit = rng.random(s.size) < rate
        s[hit] = rng.choice(list(letters), int(hit.sum()))
        a, b = sorted(rng.integers(0, s.size, 2))
        out.append("".join(s[a:max(b, a + 1)]))
    return out


CASES = {
    # many equal scores: every tie rule of the walk and of the end cell is taken
    "two letters": (lambda rng: random_seqs(rng, "AG", 90, 1, 300),
                    dict(alphabet="dna", match=1, mismatch=-1, gap_open=2, gap_extend=1)),
    "dna": (lambda rng: random_seqs(rng, "ACGT", 80, 1, 400),
            dict(alphabet="dna", match=2, mismatch=-3, gap_open=5, gap_extend=2)),
    # cheap gaps: long alignments, large reverse passes and boxes
    "protein 5/2": (lambda rng: random_seqs(rng, AMINO, 60, 1, 700),
                    dict(alphabet="protein", gap_open=5, gap_extend=2)),
    # homologs: boxes nearly the whole pair, wide ones on warps
    "homologs": (lambda rng: mutated(rng, "".join(rng.choice(list(AMINO), 1500)), 24, 0.15,
                                     AMINO),
                 dict(alphabet="protein")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_alignments_as_the_cpu(monkeypatch, case):
    monkeypatch.setattr(gpu_backend, "BOUNDED_MAX_SHARE", 1e9)  # bounded throughout
    rng = np.random.default_rng(sorted(CASES).index(case))
    make, scoring = CASES[case]
    seqs = make(rng)
    t = compare(seqs, Scoring.create(**scoring), width=32)
    assert t.get("bound_cells", 0) > 0 and t.get("box_cells", 0) > 0
    assert "bounded_mismatch" not in t and "bounded_overflow" not in t


def test_proteome_subset_with_the_longest(data_dir, monkeypatch):
    """The proteome's longest proteins and a sample (16- and 32-bit windows),
    BLOSUM62, gaps 11/1: the benchmark's setting."""
    monkeypatch.setattr(gpu_backend, "BOUNDED_MAX_SHARE", 1e9)
    recs = pairalign.read_sequences(data_dir / "proteome_HG003687.faa")
    rng = np.random.default_rng(3)
    order = np.argsort(-recs.lengths)
    pick = np.unique(np.concatenate([order[:6], rng.choice(len(recs), 200, replace=False)]))
    t = compare([recs.sequences[k] for k in pick], Scoring.create("protein"))
    assert "bounded_mismatch" not in t and "bounded_overflow" not in t
    # the reverse pass and the boxes take a small share of the cells
    cells = t["cells"]
    assert t["bound_cells"] < 0.2 * cells and t["box_cells"] < 0.2 * cells


@pytest.mark.parametrize("wide", [None, 0])
def test_boxes_all_narrow_or_all_wide(monkeypatch, wide):
    """Every box on one thread (no wide threshold), or every box on a warp."""
    monkeypatch.setattr(gpu_backend, "BOUNDED_MAX_SHARE", 1e9)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", wide)
    monkeypatch.setattr(gpu_backend, "BOX_WIDE_STEPS", wide)
    rng = np.random.default_rng(5)
    seqs = random_seqs(rng, AMINO, 40, 1, 600) + mutated(rng, "".join(
        rng.choice(list(AMINO), 900)), 6, 0.1, AMINO)
    t = compare(seqs, Scoring.create("protein", gap_open=7, gap_extend=1), width=16)
    assert "bounded_mismatch" not in t


def test_reverse_pass_past_its_cap_takes_the_prefix(monkeypatch):
    """A reverse pass stopped at its cap leaves the pair's whole prefix as its
    box (wide ones on warps, narrow ones on threads): the same alignments."""
    monkeypatch.setattr(gpu_backend, "BOUNDED_MAX_SHARE", 1e9)
    monkeypatch.setattr(gpu_backend, "BOUND_CELLS", 64)
    rng = np.random.default_rng(12)
    seqs = random_seqs(rng, AMINO, 40, 1, 500) + mutated(rng, "".join(
        rng.choice(list(AMINO), 700)), 6, 0.1, AMINO)
    t = compare(seqs, Scoring.create("protein"), width=16)
    assert "bounded_mismatch" not in t
    assert t["box_cells"] > 0.2 * t["cells"]  # prefixes: about a third of the cells


def test_boxes_that_do_not_fit_run_again_in_full(monkeypatch):
    """A window whose boxes' words outgrow its memory runs again with the full
    traceback: the same alignments, the rerun counted."""
    monkeypatch.setattr(gpu_backend, "BOUNDED_MAX_SHARE", 1e9)
    real = gpu_backend.bounded_arrays

    def small(plan, slot_bytes, target_sum):
        arrays = real(plan, slot_bytes, target_sum)
        arrays["box_words"] = (16, np.dtype(np.uint32))
        return arrays

    monkeypatch.setattr(gpu_backend, "bounded_arrays", small)
    rng = np.random.default_rng(8)
    t = compare(random_seqs(rng, AMINO, 50, 50, 400), Scoring.create("protein"), width=16)
    assert t.get("bounded_overflow", 0) > 0


@pytest.fixture
def launched(monkeypatch):
    """Whether each window launched took the bounded traceback, in order."""
    seen = []
    real = gpu_backend.GPUBackend._launch

    def spy(self, job, state, w, stream, bounded=None):
        h = real(self, job, state, w, stream, bounded)
        seen.append(h["bounded"])
        return h

    monkeypatch.setattr(gpu_backend.GPUBackend, "_launch", spy)
    return seen


def test_homologs_go_back_to_the_full_traceback(launched):
    """Once the bounded windows of a job have spent more than the share, the
    rest take the full traceback (and give the same alignments)."""
    rng = np.random.default_rng(9)
    seqs = mutated(rng, "".join(rng.choice(list(AMINO), 800)), 40, 0.1, AMINO)
    compare(seqs, Scoring.create("protein"), width=16)
    assert launched[0] and not all(launched)
    # none bounded again after the first full one
    assert not any(launched[launched.index(False):])


@pytest.mark.parametrize("mode", ["global", "semiglobal"])
def test_other_modes_take_the_full_traceback(launched, mode):
    rng = np.random.default_rng(10)
    seqs = random_seqs(rng, AMINO, 30, 1, 300)
    cpu = pairalign.align_all(seqs, mode=mode, backend="cpu")
    gpu = pairalign.align_all(seqs, mode=mode, backend="gpu")
    assert_same_pairs(cpu.pairs, gpu.pairs)
    assert launched and not any(launched)
