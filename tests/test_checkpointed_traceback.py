"""The CPU's checkpointed traceback: a task whose whole traceback does not fit
its share of the budget keeps ``H`` and ``F`` every few rows and fills each
block of rows again as the walk needs it. Its alignments are the whole
traceback's, pair by pair; scores as parasail's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pairalign
from pairalign.errors import MemoryBudgetWarning
from pairalign.kernels import cpu, cpu_backend
from pairalign.kernels.cpu_backend import CPUBackend

from conftest import AMINO, assert_same_pairs, result_parasail_scores

pytest.importorskip("parasail")

MODES = ["global", "semiglobal", "local"]
CPU = {"backend": "cpu", "threads": 2}


class Checkpointed:
    """Runs in which every task whose checkpoints take less room than its whole
    traceback is checkpointed (blocks of ``rows`` rows); counts those tasks."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.tasks = 0
        align_tasks = cpu.align_tasks

        def counting(*args):
            self.tasks += int((args[8] > 0).sum())  # task_ck
            return align_tasks(*args)

        monkeypatch.setattr(cpu, "align_tasks", counting)

    def run(self, rows: int | None, fn, *args, **kw):
        fit = CPUBackend.fit_memory

        def fit_all(backend, job, budget):
            used = fit(backend, job, budget)
            backend.traceback_limit = 0
            return used

        with self.monkeypatch.context() as m:
            m.setattr(CPUBackend, "fit_memory", fit_all)
            m.setattr(cpu_backend, "CHECKPOINT_ROWS", rows)
            return fn(*args, **kw)


@pytest.fixture
def checkpointed(monkeypatch):
    return Checkpointed(monkeypatch)


@pytest.fixture(autouse=True)
def no_waves(monkeypatch):
    """Every pair on a task (long queries with few targets would run a pair
    at a time on all lanes, cpu_wave, with no checkpoints)."""
    monkeypatch.setattr(cpu_backend, "WAVE_MAX_TARGETS", None)


def _related(rng, letters: str, lengths) -> list[str]:
    """Sequences of ``lengths``, each a mutated piece of one ancestor (so that
    alignments hold long runs, gaps and mismatches), a few unrelated."""
    anc = rng.choice(list(letters), max(lengths) + 50)
    out = []
    for n in lengths:
        at = int(rng.integers(0, len(anc) - n + 1))
        s = anc[at:at + n].copy()
        sub = rng.random(n) < 0.15
        s[sub] = rng.choice(list(letters), int(sub.sum()))
        keep = rng.random(n) > 0.05
        s = s[keep] if keep.any() else s[:1]
        out.append("".join(s) if rng.random() > 0.15 else "".join(rng.choice(list(letters), n)))
    return out


def _same_as_whole(res, whole) -> None:
    assert_same_pairs(res.pairs, whole.pairs)
    assert np.array_equal(res.pairs.score.astype(np.int64), result_parasail_scores(res))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows", [9, 16, 50, None], ids=lambda r: f"rows{r}")
def test_checkpointed_equals_whole(mode, rows, checkpointed, check_result):
    """DNA of 1-420 bases (ragged lengths around the blocks' edges) and
    proteins: the same pairs, alignments and all, as the whole traceback."""
    rng = np.random.default_rng(31)
    dna = _related(rng, "ACGT", [1, 2, 8, 9, 10, 17, 18, 19, 49, 50, 51, 100, 101]
                   + rng.integers(1, 420, 30).tolist())
    prot = _related(rng, AMINO, rng.integers(1, 300, 24).tolist() + [9, 45, 46])
    for seqs in (dna, prot):
        whole = pairalign.align_all(seqs, mode=mode, **CPU)
        before = checkpointed.tasks
        res = checkpointed.run(rows, pairalign.align_all, seqs, mode=mode, **CPU)
        assert checkpointed.tasks > before
        _same_as_whole(res, whole)
        check_result(res)


@given(data=st.data())
@settings(deadline=None, max_examples=25,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_checkpointed_equals_whole_random(data, checkpointed):
    """Random queries against random targets, modes, gaps and blocks of 9-60
    rows: the whole traceback's pairs."""
    mode = data.draw(st.sampled_from(MODES))
    rows = data.draw(st.integers(9, 60))
    ge = data.draw(st.integers(1, 4))
    go = data.draw(st.integers(ge, 12))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    seqs = _related(rng, "ACGT", rng.integers(1, 250, 12).tolist())
    queries, targets = seqs[:4], seqs[4:]
    kw = dict(mode=mode, gap_open=go, gap_extend=ge, **CPU)
    whole = pairalign.align_many(queries, targets, **kw)
    res = checkpointed.run(rows, pairalign.align_many, queries, targets, **kw)
    _same_as_whole(res, whole)


def test_a_budget_below_the_whole_traceback_checkpoints(tmp_path):
    """A budget that holds no task's whole traceback but its checkpointed one
    runs every thread, with no warning, and gives the whole traceback's pairs
    (it used to refuse: "--max-memory ... is too small for the traceback")."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(5)
    reads = _related(rng, "ACGT", [2_000, 1_900, 1_700, 600])
    dna = Scoring.create("dna")
    job = Job("local", dna, True, SortedSet.encode(reads, dna))
    least = CPUBackend().task_memory(job)
    whole_tb, _, rows = CPUBackend()._longest_task(job)
    whole = whole_tb + rows
    assert least < whole // 4
    budget = 2 * least + least // 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryBudgetWarning)
        res = pairalign.align_all(reads, mode="local", max_memory=budget, **CPU)
        be = CPUBackend(threads=2)
        assert be.fit_memory(job, budget) <= budget
    assert be.threads == 2 and be.traceback_limit < whole
    _same_as_whole(res, pairalign.align_all(reads, mode="local", **CPU))


def test_two_long_reads_at_the_default_budget(check_result):
    """Two reads of 20 kb with traceback at the default --max-memory (4 GiB):
    their task's whole traceback takes 6 GB or more (64 lanes a task with
    AVX-512); checkpointed it runs. Score as parasail's, alignment rescored."""
    rng = np.random.default_rng(9)
    reads = _related(rng, "ACGT", [20_000, 20_000])
    res = pairalign.align_all(reads, mode="local", **CPU)
    assert np.array_equal(res.pairs.score.astype(np.int64), result_parasail_scores(res))
    assert res[0].length > 15_000
    check_result(res)


@pytest.mark.parametrize("cost, want", [(1.3, "checkpointed"), (2.5, "whole")])
def test_fewer_threads_whole_or_all_threads_checkpointed(cost, want, monkeypatch):
    """A budget that holds the longest task's whole traceback for one thread
    of two: at CHECKPOINT_COST 1.3 both threads run, the long tasks
    checkpointed; at 2.5 (checkpointing dearer than halving the threads) one
    thread runs them whole, with a warning. Checkpointed, a task whose whole
    traceback passes the longest task's checkpointed one is checkpointed; a
    smaller one is not."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    monkeypatch.setattr(cpu_backend, "CHECKPOINT_COST", cost)
    dna = Scoring.create("dna")
    reads = _related(np.random.default_rng(2), "ACGT", [1_500, 1_400, 300])
    job = Job("local", dna, True, SortedSet.encode(reads, dna))
    whole_tb, _, rows = CPUBackend()._longest_task(job)
    whole = whole_tb + rows
    be = CPUBackend(threads=2)
    if be.requested < 2:
        pytest.skip("needs two numba threads")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        used = be.fit_memory(job, whole + whole // 2)
    if want == "whole":
        assert be.threads == 1 and be.traceback_limit == cpu_backend.NO_CHECKPOINT
        assert used == whole == be.task_memory(job)
        assert [w.category for w in seen] == [MemoryBudgetWarning]
    else:
        assert be.threads == 2 and be.traceback_limit < whole and not seen
        assert used == 2 * be.task_memory(job) < whole
        n = np.array([1_500, 100])  # 100 rows: whole, under the longest checkpointed
        assert be._checkpoints(job, n, np.array([1_500, 1_500]), cpu.LANES[2], 2).tolist() \
            == [int(cpu_backend.checkpoint_rows(1_500, 2)), 0]


def test_no_warning_where_the_threads_outnumber_the_tasks():
    """Two reads are one task: a budget that holds one thread's task runs it
    with no word of the threads it leaves idle."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    dna = Scoring.create("dna")
    reads = _related(np.random.default_rng(4), "ACGT", [1_500, 1_400])
    job = Job("local", dna, True, SortedSet.encode(reads, dna))
    be = CPUBackend(threads=2)
    if be.requested < 2:
        pytest.skip("needs two numba threads")
    budget = be.task_memory(job) * 3 // 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryBudgetWarning)
        be.fit_memory(job, budget)
        res = pairalign.align_all(reads, mode="local", max_memory=budget, **CPU)
    assert be.threads == 1
    _same_as_whole(res, pairalign.align_all(reads, mode="local", **CPU))
