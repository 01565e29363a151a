"""The CPU's long pairs with few targets a query, one pair on all of a
thread's lanes (``cpu_wave``): the same pairs, alignments and all, as the
tasks of ``cpu`` give; scores as parasail's; alignments rescored."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pairalign
from pairalign.kernels import cpu, cpu_backend, cpu_wave
from pairalign.kernels.cpu_backend import CPUBackend

from conftest import AMINO, assert_same_pairs, result_parasail_scores
from test_checkpointed_traceback import _related

pytest.importorskip("parasail")

MODES = ["global", "semiglobal", "local"]
CPU = {"backend": "cpu", "threads": 2}
L = cpu.LANES[4]  # a wave's lanes


class Waves:
    """Runs with every query's pairs on the wave kernel (``every``) or none;
    counts the pairs it aligns."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.pairs = 0
        align_pairs = cpu_wave.align_pairs

        def counting(*args):
            self.pairs += len(args[4])  # p_row
            return align_pairs(*args)

        monkeypatch.setattr(cpu_wave, "align_pairs", counting)

    def run(self, every: bool, fn, *args, **kw):
        with self.monkeypatch.context() as m:
            m.setattr(cpu_backend, "WAVE_MAX_TARGETS", 1 << 30 if every else None)
            m.setattr(cpu_backend, "WAVE_MIN_TARGETS_TRACEBACK", 1 << 30)
            m.setattr(cpu_backend, "WAVE_MAX_TARGETS_TRACEBACK", 1 << 30)
            m.setattr(cpu_backend, "WAVE_MIN_ROWS", 1)
            return fn(*args, **kw)


@pytest.fixture
def waves(monkeypatch):
    return Waves(monkeypatch)


def _same_as_tasks(waves, fn, *args, **kw):
    tasks = waves.run(False, fn, *args, **kw)
    before = waves.pairs
    res = waves.run(True, fn, *args, **kw)
    assert waves.pairs - before == len(res.pairs)
    assert_same_pairs(res.pairs, tasks.pairs)
    assert np.array_equal(res.pairs.score.astype(np.int64), result_parasail_scores(res))
    return res


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("traceback", [True, False], ids=["traceback", "score-only"])
def test_wave_equals_tasks(mode, traceback, waves, check_result):
    """DNA whose lengths sit around multiples of the lanes (a lane's rows are
    even, the last lane's padded; queries shorter than the lanes) and
    proteins: the tasks' pairs, pair by pair."""
    rng = np.random.default_rng(41)
    edges = [1, 2, 3, L - 1, L, L + 1, 2 * L - 1, 2 * L, 2 * L + 1, 4 * L + 3]
    dna = _related(rng, "ACGT", edges + rng.integers(1, 500, 20).tolist())
    prot = _related(rng, AMINO, rng.integers(1, 400, 16).tolist() + [L + 1, 3 * L])
    for seqs in (dna, prot):
        res = _same_as_tasks(waves, pairalign.align_all, seqs, mode=mode,
                             traceback=traceback, **CPU)
        if traceback:
            check_result(res)


@given(data=st.data())
@settings(deadline=None, max_examples=25,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_wave_equals_tasks_random(data, waves):
    """Random queries against random targets, modes and gaps, with traceback
    and without: the tasks' pairs."""
    mode = data.draw(st.sampled_from(MODES))
    traceback = data.draw(st.booleans())
    ge = data.draw(st.integers(1, 4))
    go = data.draw(st.integers(ge, 12))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    seqs = _related(rng, "ACGT", rng.integers(1, 300, 9).tolist())
    kw = dict(mode=mode, gap_open=go, gap_extend=ge, traceback=traceback, **CPU)
    _same_as_tasks(waves, pairalign.align_many, seqs[:3], seqs[3:], **kw)


def test_which_queries_run_as_waves():
    """A query of at least WAVE_MIN_ROWS residues with at most
    ``wave_targets`` targets in the window (score-only 2 or 4; with traceback one
    a 1,000 residues, 2 to 8) runs on the wave kernel: with traceback where
    the pair's traceback there fits a thread's share of the budget."""
    from pairalign.job import Job, SortedSet
    from pairalign.scheduler.windows import first_columns, make_window
    from pairalign.scoring import Scoring

    dna = Scoring.create("dna")
    reads = _related(np.random.default_rng(3), "ACGT", [9_000, 8_500, 3_000, 2_900, 1_100, 900])
    for traceback in (True, False):
        job = Job("semiglobal", dna, traceback, SortedSet.encode(reads, dna))
        be = CPUBackend(threads=2)
        be.fit_memory(job, 1 << 30)
        k = job.rows.lengths
        w = make_window(k, k, 0, len(k), 0, len(k), True)
        lengths = np.diff(job.joined()[1])
        rows = be._wave_rows(job, lengths, 0, w, first_columns(w)[1])
        most = cpu_backend.wave_targets(k, traceback)
        targets = len(k) - 1 - np.arange(len(k))
        want = (targets >= 1) & (targets <= most) & (k >= cpu_backend.WAVE_MIN_ROWS)
        assert rows.tolist() == want.tolist() and rows.any() and not rows.all()
    # a thread's share of the budget below the wave's traceback: tasks
    job = Job("semiglobal", dna, True, SortedSet.encode(reads, dna))
    need = int(cpu_wave.traceback_bytes(k[rows], k[-1], L).min())
    be.task_memory = lambda job: need - 1
    assert not be._wave_rows(job, lengths, 0, w, first_columns(w)[1]).any()


@pytest.mark.parametrize("most", [2, 4], ids=["AVX2", "AVX-512"])
@pytest.mark.parametrize("threads, want", [(1, "rule"), (16, "all")])
def test_idle_threads_take_more_waves(threads, want, most, monkeypatch):
    """Score-only, reads of 8-9 kb, WAVE_MAX_TARGETS + 3 of them (as AVX2's
    lanes and AVX-512's set it): a task a query. With one thread only the
    queries of at most WAVE_MAX_TARGETS targets run as waves; with 16, the
    tasks leave threads idle and every query runs its pairs as waves (the
    window's time is the waves')."""
    from pairalign.job import Job, SortedSet
    from pairalign.scheduler.windows import first_columns, make_window
    from pairalign.scoring import Scoring

    monkeypatch.setattr(cpu_backend, "WAVE_MAX_TARGETS", most)
    monkeypatch.setattr(cpu_backend, "WAVE_RATE_RATIO", {True: 8, False: most})
    dna = Scoring.create("dna")
    lengths = np.linspace(9_000, 8_000, most + 3).astype(int).tolist()
    reads = _related(np.random.default_rng(3), "ACGT", lengths)
    job = Job("semiglobal", dna, False, SortedSet.encode(reads, dna))
    be = CPUBackend()
    be.fit_memory(job, 1 << 30)
    be.threads = threads
    k = job.rows.lengths
    w = make_window(k, k, 0, len(k), 0, len(k), True)
    rows = be._wave_rows(job, np.diff(job.joined()[1]), 0, w, first_columns(w)[1])
    targets = len(k) - 1 - np.arange(len(k))
    rule = (targets >= 1) & (targets <= most)
    assert rule.any() and not rule[:2].any()
    assert rows.tolist() == (rule if want == "rule" else targets >= 1).tolist()


def test_two_long_reads(waves, check_result):
    """Two reads of 20 kb with traceback at the default budget: one pair, on
    the wave kernel. Score as parasail's, alignment rescored."""
    rng = np.random.default_rng(9)
    reads = _related(rng, "ACGT", [20_000, 20_000])
    res = pairalign.align_all(reads, mode="semiglobal", **CPU)
    assert waves.pairs == 1
    assert np.array_equal(res.pairs.score.astype(np.int64), result_parasail_scores(res))
    assert res[0].length > 15_000
    check_result(res)
