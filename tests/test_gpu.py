"""GPU backend against the CPU backend, pair by pair (skipped without a CUDA device)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import pairalign
from pairalign import engine
from pairalign.backends import gpu_available, gpu_count
from pairalign.kernels import gpu_backend
from pairalign.scoring import INT16_LIMIT, Scoring

from conftest import (AMINO, assert_letter_identities, assert_same_pairs, int16_edge,
                      int16_edge_sequences, int16_far_pairs, random_matrix, stable_seed,
                      stand_in_sequences, write_ncbi)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="CuPy sees no CUDA device")]

@pytest.fixture(autouse=True)
def no_cpu_fallback(monkeypatch):
    """A window that fails on the GPU would otherwise be retried on the CPU, and
    the comparison would pass on the CPU's results: here it fails the test."""
    monkeypatch.setattr(engine, "_default_fallback", lambda first: None)


def assert_same(a, b):
    assert_same_pairs(a.pairs, b.pairs)


def both(seqs, **kw):
    return (pairalign.align_all(seqs, backend="cpu", **kw),
            pairalign.align_all(seqs, backend="gpu", **kw))


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
def test_adeno_walked_apart_from_the_fill(data_dir, monkeypatch, mode):
    """With FUSED_WALK off, the walk kernel walks the packed pairs too (as
    before v39): the CPU's alignments."""
    monkeypatch.setattr(gpu_backend, "FUSED_WALK", False)
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode=mode, traceback=True)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local", "local bounded"])
@pytest.mark.parametrize("traceback", [True, False])
def test_adeno_all_pairs(data_dir, monkeypatch, mode, traceback):
    if mode == "local bounded":  # the bounded traceback (BOUNDED_TRACEBACK)
        if not traceback:
            pytest.skip("score-only runs have no traceback to bound")
        monkeypatch.setattr(gpu_backend, "BOUNDED_TRACEBACK", True)
        mode = "local"
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode=mode, traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local", "local bounded"])
@pytest.mark.parametrize("devices", [[0], None])
def test_alignments_without_cigars(data_dir, monkeypatch, mode, devices):
    """cigar=False on the GPU (one device, or every one): the CPU's pairs,
    begins, identities and lengths and no operations, and the GPU's full
    run's but the operations."""
    if mode == "local bounded":
        monkeypatch.setattr(gpu_backend, "BOUNDED_TRACEBACK", True)
        mode = "local"
    path = data_dir / "adeno_fiber.faa"
    kw = dict(mode=mode, window=32)
    cpu = pairalign.align_all(path, backend="cpu", cigar=False, **kw)
    gpu = pairalign.align_all(path, backend="gpu", devices=devices, cigar=False, **kw)
    full = pairalign.align_all(path, backend="gpu", devices=devices, **kw)
    assert_same(cpu, gpu)
    assert not gpu.cigar and len(gpu.pairs.op_code) == 0 and not gpu.pairs.op_offsets.any()
    for name in full.pairs.__dataclass_fields__:
        if not name.startswith("op_"):
            assert np.array_equal(getattr(full.pairs, name), getattr(gpu.pairs, name)), name


@pytest.mark.parametrize("extra", ["XU", "XUOJBZ*"])
@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_stand_ins_as_the_cpu(mode, traceback, extra):
    """Proteins holding U, O and J (codes of their own, X's scores): the CPU's
    pairs, with the warp kernels where the job's letters fit their profile
    (``XU``: 22 letters) and without (``XUOJBZ*``: all 27)."""
    seqs = stand_in_sequences(60, seed=5, extra=extra)
    cpu, gpu = both(seqs, mode=mode, traceback=traceback)
    assert gpu.scoring.active == len({c for s in seqs for c in s.upper()})
    assert gpu_backend._profile_fits(gpu.scoring.kernel_matrix) == (extra == "XU")
    assert_same(cpu, gpu)
    if traceback:
        assert_letter_identities(gpu)


def test_plan_of_stand_ins_calibrates_on_the_gpu(tmp_path, monkeypatch):
    """The plan of a job whose proteins hold stand-ins calibrates the cost
    model on the GPU (its synthetic job of the 20 amino acids through the
    job's scoring) and holds the job's pairs."""
    from pairalign.scheduler import cost

    monkeypatch.setenv("PAIRALIGN_CACHE_DIR", str(tmp_path / "cache"))
    cost.clear()
    seqs = stand_in_sequences(30, seed=9, extra="XUO")
    plan = pairalign.plan_all(seqs, backend="gpu")
    assert plan.pairs == 30 * 29 // 2
    assert any("calibrated now" in n for n in plan.notes), plan.notes


@pytest.mark.parametrize("budget_pairs", [None, 3])
def test_long_reads(monkeypatch, budget_pairs):
    """Reads of 6 to 9 kb with traceback at the default --max-memory (before
    v55 the GPU asked the host budget for a 16 x 16 block of their
    traceback, 4.6 GB, and refused), then with the device's budget cut to
    three pairs' bytes, so that blocks run as windows below 16 x 16 at any
    offset: the CPU's pairs, none of them run on the CPU."""
    reads = genome_reads(12, 30_000, 20_000, 10, 6_000, 9_000)
    if budget_pairs:
        from pairalign.job import Job, SortedSet
        from pairalign.scheduler.windows import make_window

        dna = Scoring.create("dna")
        job = Job("semiglobal", dna, True, SortedSet.encode(reads, dna))
        first = make_window(job.rows.lengths, job.rows.lengths, 0, 2, 0, 2, True)
        one = gpu_backend.GPUBackend.planner().window_bytes(job, first)
        monkeypatch.setattr(gpu_backend.GPUBackend, "device_budget",
                            lambda self: budget_pairs * one)
    cpu, gpu = both(reads, mode="semiglobal", traceback=True)
    assert_same(cpu, gpu)
    assert (cpu.pairs.score > 1_000).sum() > 5  # overlapping reads among them


def test_overlaps_are_the_cpus(data_dir):
    """Read overlaps on the GPU (both strands' windows filtered as they
    come: iter_all and iter_many, unordered): the CPU's table, to the
    CIGAR."""
    from pairalign.pipelines.overlap import overlap_table
    from pairalign.sequences import records_from_python

    recs = pairalign.read_sequences(data_dir / "reads_cdiph.fa")
    reads = records_from_python(recs.sequences[:80], ids=recs.ids[:80], alphabet="dna")
    cpu = overlap_table(reads, backend="cpu")
    gpu = overlap_table(reads, backend="gpu", window=32)
    assert len(cpu) > 0
    for name in ("query", "target", "query_start", "query_end", "target_start",
                 "target_end", "reverse", "contained", "matches", "aligned_length",
                 "score", "cigar_bytes", "cigar_offsets"):
        assert np.array_equal(getattr(cpu, name), getattr(gpu, name)), name


@pytest.mark.parametrize("distance", ["identity", "score"])
def test_guide_tree_distances(data_dir, distance):
    """guide_tree on the GPU (windows without CIGARs, or score-only, put in
    the matrix as they come): the CPU's distances, to the last bit."""
    from pairalign.pipelines import guide_tree

    path = data_dir / "adeno_fiber.faa"
    cpu, _ = guide_tree(path, distance=distance, backend="cpu")
    gpu, _ = guide_tree(path, distance=distance, backend="gpu", window=32)
    assert np.array_equal(cpu.data, gpu.data)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("narrow_only", [False, True])
@pytest.mark.parametrize("traceback", [True, False])
def test_proteome_subset_with_long(data_dir, monkeypatch, mode, narrow_only, traceback):
    if narrow_only:  # the longest pairs on one thread each, as the short ones
        monkeypatch.setattr(gpu_backend, "WIDE_STEPS", None)
        monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", None)
    recs = pairalign.read_sequences(data_dir / "proteome_HG003687.faa")
    rng = np.random.default_rng(7)
    order = np.argsort(-recs.lengths)
    pick = np.concatenate([order[:6], rng.choice(len(recs), 150, replace=False)])
    pick = np.unique(pick)
    seqs = [recs.sequences[k] for k in pick]
    cpu, gpu = both(seqs, mode=mode, traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
@pytest.mark.parametrize("packed", [True, False])
def test_every_pair_on_a_warp(monkeypatch, mode, traceback, packed):
    """The warp-per-pair kernel on every pair: bands of 1 to 32 stripes, partial
    last stripes and bands, targets shorter and longer than a band's 32 steps;
    also two pairs per warp in 16-bit halves (targets of unequal lengths side
    by side), with traceback and without."""
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", 0)
    monkeypatch.setattr(gpu_backend, "PACKED", packed)
    monkeypatch.setattr(gpu_backend, "PACKED_TRACEBACK", packed)
    cpu, gpu = both(warp_sequences(), mode=mode, traceback=traceback)
    assert_same(cpu, gpu)


def genome_reads(seed: int, genome: int, starts: int, count: int, lo: int,
                 hi: int) -> list[str]:
    """``count`` reads of ``lo`` to ``hi`` bp from the first ``starts`` bp of
    a random genome of ``genome`` bp, 5% of their bases replaced."""
    rng = np.random.default_rng(seed)
    bases = rng.choice(list("ACGT"), genome)
    reads = []
    for start, n in zip(rng.integers(0, starts, count), rng.integers(lo, hi, count)):
        read = bases[start:start + n].copy()
        hit = rng.random(read.size) < 0.05
        read[hit] = rng.choice(list("ACGT"), int(hit.sum()))
        reads.append("".join(read))
    return reads


def several_warps_reads() -> list[str]:
    """Reads of 1.5 to 5 kb: 6 to 20 bands of 256 rows, each a wavefront
    behind the band above when a pair takes several warps."""
    return genome_reads(21, 12_000, 7_000, 7, 1_500, 5_000)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
@pytest.mark.parametrize("warps", [2, 8, 16, 32])
def test_several_warps_a_wide_pair(monkeypatch, mode, traceback, warps):
    """Every pair on the wide kernel at 2 or 8 warps of a block a pair, or 2
    or 4 blocks a pair (BandChain, counts in shared or global memory): DNA
    reads of 1.5-5 kb (bands pipelined round after round; at 16 warps the
    pair's first warp waits on its last block) and, within a block,
    proteins of 1 to 700 residues (fewer bands than warps, targets shorter
    than the 64 columns a band loads ahead, BLOSUM62's profiles past 48 KB of
    shared memory): the CPU's pairs. (The proteins' 435 pairs over blocks
    would be more blocks than the device holds at once, which the rule
    never launches.)"""
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", 0)
    monkeypatch.setattr(gpu_backend, "PACKED", False)
    monkeypatch.setattr(gpu_backend, "PACKED_TRACEBACK", False)
    monkeypatch.setattr(gpu_backend, "WIDE_WARPS", warps)
    if warps <= 8:
        cpu, gpu = both(warp_sequences(), mode=mode, traceback=traceback)
        assert_same(cpu, gpu)
    cpu, gpu = both(several_warps_reads(), mode=mode, traceback=traceback)
    assert_same(cpu, gpu)
    assert (cpu.pairs.score > 1_000).sum() >= 3  # overlapping reads among them


@pytest.mark.parametrize("mode", ["global", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_several_warps_beside_narrow_pairs(monkeypatch, mode, traceback):
    """8 warps a wide pair in a window that also holds narrow pairs (those
    under WIDE_STEPS, whose launch's blocks are counted after the wide
    ones'): the CPU's pairs."""
    monkeypatch.setattr(gpu_backend, "WIDE_WARPS", 8)
    monkeypatch.setattr(gpu_backend, "PACKED", False)
    monkeypatch.setattr(gpu_backend, "PACKED_TRACEBACK", False)
    cpu, gpu = both(warp_sequences(), mode=mode, traceback=traceback)
    assert_same(cpu, gpu)


def warp_sequences():
    """Proteins of 1 to 700 residues, a third of them prefixes of one another:
    bands of 1 to 32 stripes, partial last stripes and bands, ties."""
    rng = np.random.default_rng(11)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWYX"))
    lengths = np.concatenate([[1, 2, 7, 8, 9, 33, 255, 256, 257, 600], rng.integers(1, 700, 20)])
    base = "".join(rng.choice(letters, 700))
    return [base[:n] if k % 3 == 0 else "".join(rng.choice(letters, n))
            for k, n in enumerate(lengths)]


def pack_every_pair(monkeypatch, rows, group, tb_rows, tb_group, threads=None,
                    tb_threads=None):
    """Every pair on the packed kernel (no wide threshold), at ``rows`` rows a
    lane in groups of ``group`` lanes (``tb_rows``, ``tb_group`` with
    traceback) in every mode, in blocks of ``threads`` (``tb_threads``) where
    given."""
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", 0)
    monkeypatch.setattr(gpu_backend, "PACK_SHAPES",
                        dict.fromkeys(("global", "semiglobal", "local"), (rows, group)))
    monkeypatch.setattr(gpu_backend, "PACK_ROWS_TRACEBACK", tb_rows)
    monkeypatch.setattr(gpu_backend, "PACK_GROUP_TRACEBACK", tb_group)
    for name, value in (("PACK_THREADS", threads), ("PACK_THREADS_TRACEBACK", tb_threads)):
        if value is not None:
            monkeypatch.setattr(gpu_backend, name, value)


@pytest.mark.parametrize("traceback", [True, False])
@pytest.mark.parametrize("rows,group,tb_rows,tb_group", [(32, 4, 16, 8), (16, 8, 8, 8),
                                                         (32, 4, 32, 4)])
def test_query_couples_in_every_mode_they_take(monkeypatch, traceback, rows, group, tb_rows,
                                               tb_group):
    """Every pair packed, query couples wherever two queries pack a target, in
    local and global mode with traceback and without, semiglobal without (the
    run's default takes them in fewer): queries of unequal lengths in one
    couple, rows past the shorter one's end, each with its own top pad."""
    pack_every_pair(monkeypatch, rows, group, tb_rows, tb_group)
    monkeypatch.setattr(gpu_backend, "QUERY_COUPLE_MODES", ("local", "global", "semiglobal"))
    monkeypatch.setattr(gpu_backend, "QUERY_COUPLE_MODES_TRACEBACK", ("local", "global"))
    from pairalign.job import Job, SortedSet

    seqs = warp_sequences()
    sc = pairalign.Scoring.create("protein")
    for mode in ("global", "local") if traceback else ("global", "local", "semiglobal"):
        assert gpu_backend.GPUBackend._query_band(
            Job(mode, sc, traceback, SortedSet.encode(seqs, sc)))
        cpu, gpu = both(seqs, mode=mode, traceback=traceback)
        assert_same(cpu, gpu)


@pytest.mark.parametrize("rows,group,tb_rows,tb_group,threads,tb_threads", [
    (8, 32, 8, 32, 256, 256), (8, 8, 16, 16, 256, 256), (16, 16, 8, 4, 256, 256),
    (16, 4, 16, 32, 256, 256), (32, 4, 16, 8, 256, 256), (32, 8, 8, 8, 256, 256),
    (16, 8, 32, 4, 128, 128), (32, 4, 32, 8, 64, 256), (32, 4, 32, 16, 256, 64)])
def test_packed_kernel_shapes(monkeypatch, rows, group, tb_rows, tb_group, threads,
                              tb_threads):
    """Every pair packed, in each shape the packed kernel takes: rows a lane,
    lanes a group without traceback and with (the couples' word layout), and
    threads a block."""
    pack_every_pair(monkeypatch, rows, group, tb_rows, tb_group, threads, tb_threads)
    seqs = warp_sequences()
    for mode in ("global", "semiglobal", "local"):
        for traceback in (True, False):
            cpu, gpu = both(seqs, mode=mode, traceback=traceback)
            assert_same(cpu, gpu)


def band_end_sequences(band: int, ends: tuple[int, ...]) -> list[str]:
    """Proteins whose lengths end at ``ends`` within the first three bands of
    ``band`` rows, a third of them prefixes of one sequence (ties of the local
    end cell), and two of repeats."""
    lengths = sorted({band * k + r for k in range(3) for r in ends})
    rng = np.random.default_rng(3)
    letters = np.array(list(AMINO))
    base = "".join(rng.choice(letters, max(lengths)))
    seqs = [base[:n] if k % 3 == 0 else "".join(rng.choice(letters, n))
            for k, n in enumerate(lengths)]
    return seqs + ["WCHW" * 40, "W" * (band + 9)]


@pytest.mark.parametrize("group", [4, 8])
def test_short_last_bands(monkeypatch, group):
    """Score-only at 32 rows a lane, a query's last band in stripes of 8 or 16
    rows where its rows fit (``fill_pack``): queries ending just inside and
    just past each of those bands, and at a full band, in every mode, target
    couples and query couples (semiglobal's top pad included), with repeats
    for ties of the local end cell."""
    pack_every_pair(monkeypatch, 32, group, 16, 8)
    monkeypatch.setattr(gpu_backend, "QUERY_COUPLE_MODES", ("local", "global", "semiglobal"))
    seqs = band_end_sequences(32 * group, (1, 8 * group - 1, 8 * group, 8 * group + 1,
                                           16 * group, 16 * group + 1, 32 * group - 1,
                                           32 * group))
    for mode in ("global", "semiglobal", "local"):
        cpu, gpu = both(seqs, mode=mode, traceback=False)
        assert_same(cpu, gpu)


@pytest.mark.parametrize("group", [4, 8])
def test_short_last_bands_traceback(monkeypatch, group):
    """With traceback at 16 rows a lane, a query's last band in stripes of 8
    rows where its rows fit (``fill_pack``), and the walk that finds their
    words: queries ending just inside and just past that band, and at a full
    band, in every mode, target couples and query couples (whose band follows
    the longer query: couples of unequal lengths on both sides of it)."""
    pack_every_pair(monkeypatch, 32, 4, 16, group)
    monkeypatch.setattr(gpu_backend, "QUERY_COUPLE_MODES_TRACEBACK", ("local", "global"))
    seqs = band_end_sequences(16 * group, (1, 8 * group - 1, 8 * group, 8 * group + 1,
                                           16 * group - 1, 16 * group))
    for mode in ("global", "semiglobal", "local"):
        cpu, gpu = both(seqs, mode=mode, traceback=True)
        assert_same(cpu, gpu)


@pytest.mark.parametrize("traceback", [True, False])
@pytest.mark.parametrize("rows,group,tb_rows,tb_group", [(32, 4, 16, 8), (8, 8, 8, 8),
                                                         (32, 4, 32, 4)])
def test_local_end_cell_ties(monkeypatch, traceback, rows, group, tb_rows, tb_group):
    """Local end cells where a column's maximum lies in many rows at once
    (repeats, homopolymers, a motif in several copies): the packed kernel
    finds each lane's first row by masks over chunks of 16 rows, then the
    first of equal cells (row, then column) across lanes, as the CPU does."""
    pack_every_pair(monkeypatch, rows, group, tb_rows, tb_group)
    rng = np.random.default_rng(5)
    letters = np.array(list(AMINO))
    motif = "WCHW"
    seqs = ["W" * 300, "W" * 17, "AC" * 150, "CA" * 91, "WWWWAWWWW" * 20,
            motif * 60, motif[::-1] * 33]
    for n in (40, 130, 257, 400):  # random sequences with the motif here and there
        s = list(rng.choice(letters, n))
        for at in rng.integers(0, n - len(motif), 4):
            s[at:at + len(motif)] = motif
        seqs.append("".join(s))
    cpu, gpu = both(seqs, mode="local", traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("pinned,staging,early", [(True, None, True), (True, 4099, True),
                                                   (False, None, True), (True, None, False)])
@pytest.mark.parametrize("traceback", [True, False])
def test_downloads_pinned_or_not(data_dir, monkeypatch, traceback, pinned, staging, early):
    """Results through the pinned staging buffer (whole, or a few kilobytes
    that every window's arrays pass through in many pieces, cut mid-element),
    or array by array, with each slot taking its next window before the
    host's download of its results or after: the same as the CPU's."""
    monkeypatch.setattr(gpu_backend, "PINNED_DOWNLOADS", pinned)
    monkeypatch.setattr(gpu_backend, "EARLY_SLOT_REUSE", early)
    if staging is not None:
        monkeypatch.setattr(gpu_backend, "STAGING_BYTES", staging)
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode="local", traceback=traceback,
                    window=32)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("device_offsets", [True, False])
@pytest.mark.parametrize("mode", ["local", "global"])
def test_operation_offsets_summed_on_the_device_or_the_host(data_dir, monkeypatch, mode,
                                                            device_offsets, kept):
    """A detached window's operation offsets summed on the device and
    downloaded with its results (DEVICE_OP_OFFSETS), or summed on the host
    from the downloaded counts and uploaded; its operations left on the
    device or downloaded with it: the CPU's alignments either way."""
    monkeypatch.setattr(gpu_backend, "DEVICE_OP_OFFSETS", device_offsets)
    monkeypatch.setattr(gpu_backend, "DEVICE_PLACEMENT", kept)
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode=mode, traceback=True, window=32)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("rows_p,rows_q", [(0, 0), (0x00FF, 0xF0F0)])
@pytest.mark.parametrize("mode", ["local", "global", "semiglobal"])
def test_traceback_planes_added_by_lop3_or_imad(data_dir, monkeypatch, mode, rows_p, rows_q):
    """The packed traceback's bit planes added by a LOP3 or by an IMAD, row
    by row (TRACEBACK_IMAD_ROWS_P and _Q; the default takes every row of P
    and every other row of Q): none, or a mix over both stripes of a lane
    and the short last band's 8 rows. The CPU's alignments either way."""
    monkeypatch.setattr(gpu_backend, "TRACEBACK_IMAD_ROWS_P", rows_p)
    monkeypatch.setattr(gpu_backend, "TRACEBACK_IMAD_ROWS_Q", rows_q)
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode=mode, traceback=True, window=32)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("mode", ["local", "local bounded", "global"])
@pytest.mark.parametrize("ahead,staging", [(2, None), (1, 4099)])
@pytest.mark.parametrize("traceback", [True, False])
def test_results_fetched_on_a_thread_of_their_own(data_dir, monkeypatch, traceback, ahead,
                                                  staging, mode):
    """FETCH_THREAD: each window's results downloaded on the backend's fetch
    thread while the launching thread detaches and launches the next ones
    (their operation counts downloaded meanwhile, through a staging buffer
    of their own; with a few kilobytes of staging, both threads' downloads
    in many pieces at once), one or two downloads ahead: the CPU's results,
    in order; the device's operations placed from them too (local)."""
    if mode == "local bounded":
        if not traceback:
            pytest.skip("score-only runs have no traceback to bound")
        monkeypatch.setattr(gpu_backend, "BOUNDED_TRACEBACK", True)
        mode = "local"
    monkeypatch.setattr(gpu_backend, "FETCH_THREAD", True)
    monkeypatch.setattr(gpu_backend, "FETCH_AHEAD", ahead)
    if staging is not None:
        monkeypatch.setattr(gpu_backend, "STAGING_BYTES", staging)
    fetched = []
    on_thread = gpu_backend.GPUBackend._fetch_on_thread

    def spy(self, job, done):
        fetched.append(threading.current_thread() is not threading.main_thread())
        return on_thread(self, job, done)

    monkeypatch.setattr(gpu_backend.GPUBackend, "_fetch_on_thread", spy)
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode=mode, traceback=traceback, window=32)
    assert_same(cpu, gpu)
    assert len(fetched) > 1 and all(fetched)


@pytest.mark.parametrize("first_done,fetch_thread", [(True, False), (False, False),
                                                     (True, True)])
@pytest.mark.parametrize("traceback", [True, False])
def test_slots_take_windows_as_their_own_end(monkeypatch, traceback, first_done, fetch_thread):
    """Four long proteins among short ones, windows of 32, on one device
    (on several, another device takes the short windows): the window of
    the long pairs runs long after the one beside it, whose slot takes
    window after window meanwhile (or, without ``FIRST_DONE_FIRST``, waits
    for the oldest); the results come out in order, the CPU's either way,
    and with the downloads on the fetch thread (FETCH_THREAD) too."""
    monkeypatch.setattr(gpu_backend, "FIRST_DONE_FIRST", first_done)
    monkeypatch.setattr(gpu_backend, "FETCH_THREAD", fetch_thread)
    rng = np.random.default_rng(11)
    letters = np.array(list(AMINO))
    lengths = [3000] * 4 + list(rng.integers(20, 60, 200))
    seqs = ["".join(rng.choice(letters, n)) for n in lengths]
    kw = dict(mode="local", traceback=traceback, window=32)
    # a first run compiles or loads the kernels while its first window runs
    pairalign.align_all(seqs[:40], backend="gpu", devices=[0], **kw)
    ahead = []  # per slot handed on: whether an older window was still running
    first = gpu_backend.GPUBackend._first_done

    def spy(self, running):
        h = first(self, running)
        ahead.append(h is not running[0])
        return h

    monkeypatch.setattr(gpu_backend.GPUBackend, "_first_done", spy)
    cpu = pairalign.align_all(seqs, backend="cpu", **kw)
    assert_same(cpu, pairalign.align_all(seqs, backend="gpu", devices=[0], **kw))
    assert any(ahead) == first_done


@pytest.mark.parametrize("mode", ["local", "global"])
@pytest.mark.parametrize("reserve", [True, False])
def test_slots_reserved_at_the_job_start(data_dir, monkeypatch, mode, reserve):
    """With the slots' blocks taken on a thread at the job's start (every job
    with traceback, RESERVE_LEAST_SLOTS 0) or not: the CPU's results, with
    windows of 64 (many a slot); reserved, every slot's block is the
    reserved budget and the thread's time is in the timings."""
    monkeypatch.setattr(gpu_backend, "RESERVE_SLOTS", reserve)
    monkeypatch.setattr(gpu_backend, "RESERVE_LEAST_SLOTS", 0)
    sizes = []
    memory = gpu_backend.GPUBackend._slot_memory

    def spy(self, stream, arrays, floor=0):
        sizes.append(floor)
        return memory(self, stream, arrays, floor)

    monkeypatch.setattr(gpu_backend.GPUBackend, "_slot_memory", spy)
    from pairalign.engine import run_job
    from pairalign.job import Job, SortedSet
    from pairalign.kernels.cpu_backend import CPUBackend

    recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
    sc = Scoring.create("protein")
    job = Job(mode, sc, True, SortedSet.encode(recs.sequences, sc))
    be = gpu_backend.GPUBackend()
    assert_same_pairs(run_job(job, be, width=64), run_job(job, CPUBackend(), width=64))
    assert len(sizes) > 2
    held = be._reservation
    if reserve:
        assert held is not None and held["ok"] and "reserve" in be.timings
        assert set(sizes) == {held["bytes"]}
        assert "slot_grown" not in be.timings  # every slot its whole budget at once
    else:
        assert held is None and "reserve" not in be.timings
        assert max(sizes) < be.device_budget()


@pytest.mark.parametrize("mode,traceback", [("local", False), ("global", False),
                                            ("semiglobal", False), ("local", True)])
@pytest.mark.parametrize("block", [True, False])
def test_query_couples_with_a_profile_a_block(monkeypatch, mode, traceback, block):
    """Query couples that share one profile a block (each row couple's warps
    padded to whole blocks by empty ones) or keep one a warp, score-only and
    (local) with traceback: the CPU's results, on windows whose row couples
    take any number of warps (diagonal ones too) and queries of one to six
    bands, the last one short (score-only: stripes of 8 or 16 rows)."""
    flag = "BLOCK_QUERY_PROFILE_TRACEBACK" if traceback else "BLOCK_QUERY_PROFILE"
    monkeypatch.setattr(gpu_backend, flag, block)
    rng = np.random.default_rng(21)
    letters = np.array(list(AMINO))
    seqs = ["".join(rng.choice(letters, n)) for n in rng.integers(40, 700, 260)]
    cpu, gpu = both(seqs, mode=mode, traceback=traceback, window=96)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("own_offsets", [True, False])
@pytest.mark.parametrize("mode", ["global", "local"])
@pytest.mark.parametrize("kept,share,reserve,room", [
    (True, 0.1, 0.05, True), (True, None, 0.05, True), (True, 1e-7, 0.05, True),
    (True, 0.1, 1.0, True), (True, 0.1, 0.05, False), (False, 0.1, 0.05, True)])
def test_operations_placed_on_the_device_or_the_host(data_dir, monkeypatch, mode, kept, share,
                                                     reserve, room, own_offsets):
    """Every window's operations left on the device and placed there at the
    end (a share of memory for them, or none), some of them (the share runs
    out), none (no memory may be taken: a reserve of all of it), or left
    there but placed on the host (no room to place them on the device:
    ``room`` False). Where every window's stayed, the device sums their
    offsets itself (``own_offsets``: PLACE_OFFSETS_ON_DEVICE) or takes the
    host's."""
    monkeypatch.setattr(gpu_backend, "DEVICE_PLACEMENT", kept)
    monkeypatch.setattr(gpu_backend, "DEVICE_OPS_SHARE", share)
    monkeypatch.setattr(gpu_backend, "DEVICE_OPS_RESERVE", reserve)
    monkeypatch.setattr(gpu_backend, "PLACE_OFFSETS_ON_DEVICE", own_offsets)
    # (offsets on the device, host entries brought up, whether the memory was there)
    asked = []
    can_place = gpu_backend.GPUBackend.can_place_ops

    def spy(self, total, npairs, offsets_on_device=False, extra=0):
        asked.append((offsets_on_device, extra > 0,
                      can_place(self, total, npairs, offsets_on_device, extra)))
        return room and asked[-1][2]

    monkeypatch.setattr(gpu_backend.GPUBackend, "can_place_ops", spy)
    kw = dict(mode=mode, traceback=True, window=32)
    path = data_dir / "adeno_fiber.faa"
    # one device: operations stay on a device only where one backend runs every window
    gpu = pairalign.align_all(path, backend="gpu", devices=[0], **kw)
    assert_same(pairalign.align_all(path, backend="cpu", **kw), gpu)
    # asked where any window's operations stayed (there was memory each time):
    # first with its own offsets, the host's entries with them where some
    # came to the host (pairs.HOST_OPS_TO_DEVICE); then (no room for those)
    # with the host's offsets, then without the host's entries
    if not kept or reserve >= 1:
        assert asked == []
        return
    assert asked and all(memory for *_, memory in asked)
    up = asked[0][1]
    want = ([(True, up)] if own_offsets else []) + [(False, up)] + ([(False, False)] if up else [])
    assert [(own, u) for own, u, _ in asked] == (want[:1] if room else want)
    if share != 1e-7:  # every window's operations stayed
        assert not up


@pytest.mark.parametrize("own_offsets", [True, False])
@pytest.mark.parametrize("mode", ["global", "local"])
def test_operations_downloaded_into_arrays_made_ahead(data_dir, monkeypatch, mode, own_offsets):
    """The job's operations downloaded into the arrays that the placement
    made ahead of its end (pairs.RESERVE_OPERATIONS, with the device's own
    offsets or the host's): the CPU's alignments."""
    from pairalign import pairs

    monkeypatch.setattr(pairs, "RESERVE_OPERATIONS", True)
    monkeypatch.setattr(pairs, "RESERVE_LEAST", 1)
    monkeypatch.setattr(pairs, "RESERVE_AFTER", 0.1)
    monkeypatch.setattr(pairs, "RESERVE_MARGIN", 10.0)  # whatever the first windows hold
    monkeypatch.setattr(gpu_backend, "PLACE_OFFSETS_ON_DEVICE", own_offsets)
    outs = []
    place_ops = gpu_backend.GPUBackend.place_ops
    monkeypatch.setattr(gpu_backend.GPUBackend, "place_ops",
                        lambda self, *a, out=None, **k: outs.append(out is not None)
                        or place_ops(self, *a, out=out, **k))
    cpu, gpu = both(data_dir / "adeno_fiber.faa", mode=mode, traceback=True, window=32)
    assert_same(cpu, gpu)
    assert outs == [True]


@pytest.mark.parametrize("own_offsets", [True, False])
def test_operations_the_device_fails_to_place_are_placed_on_the_host(data_dir, monkeypatch,
                                                                     own_offsets):
    """The device's placement of the operations it kept fails after it has
    run (summing the offsets itself or from the host's): they come to the
    host and are placed there, with a warning, and the alignments are the
    CPU's."""
    from pairalign.errors import DeviceErrorWarning

    monkeypatch.setattr(gpu_backend, "PLACE_OFFSETS_ON_DEVICE", own_offsets)
    place_ops, calls = gpu_backend.GPUBackend.place_ops, []

    def failing(self, *a, **k):
        calls.append(place_ops(self, *a, **k))
        raise RuntimeError("CUDA error: injected")

    monkeypatch.setattr(gpu_backend.GPUBackend, "place_ops", failing)
    with pytest.warns(DeviceErrorWarning, match="placing the alignments on the device failed"):
        cpu, gpu = both(data_dir / "adeno_fiber.faa", mode="local", traceback=True, window=32)
    assert_same(cpu, gpu)
    assert len(calls) == 1


@pytest.mark.skipif(gpu_count() < 2, reason="needs two CUDA devices")
@pytest.mark.parametrize("on_devices", [True, False])
@pytest.mark.parametrize("fetch_thread", [False, True])
@pytest.mark.parametrize("mode", ["global", "local"])
def test_several_devices_place_operations_on_one_or_on_the_host(data_dir, monkeypatch, mode,
                                                                 fetch_thread, on_devices):
    """Windows on two devices: with SEVERAL_DEVICE_OPS their operations stay
    on their devices, one device adopts the other's (copied device to
    device) and places them all; else they come to the host and are placed
    there (no device is asked to place them). The same pairs as one
    device's and the CPU's either way; with FETCH_THREAD, each device's
    fetch thread on that device."""
    from pairalign import engine, pairs

    monkeypatch.setattr(engine, "SEVERAL_DEVICE_OPS", on_devices)
    monkeypatch.setattr(gpu_backend, "FETCH_THREAD", fetch_thread)
    asked, adopted = [], []
    can_place = gpu_backend.GPUBackend.can_place_ops
    monkeypatch.setattr(gpu_backend.GPUBackend, "can_place_ops",
                        lambda self, *a, **k: asked.append(self.device.id)
                        or can_place(self, *a, **k))
    adopt = gpu_backend.GPUBackend.adopt_ops
    monkeypatch.setattr(gpu_backend.GPUBackend, "adopt_ops",
                        lambda self, entries: adopted.append(
                            (self.device.id, {e.owner.device.id for e in entries}))
                        or adopt(self, entries))
    kept = set()  # the devices whose windows left their operations there
    add = pairs.Placement.add
    monkeypatch.setattr(pairs.Placement, "add", lambda self, batch: kept.update(
        [batch.device_ops.owner.device.id] if getattr(batch, "device_ops", None) else [])
        or add(self, batch))
    kw = dict(mode=mode, traceback=True, window=32)
    path = data_dir / "adeno_fiber.faa"
    two = pairalign.align_all(path, backend="gpu", devices=[0, 1], **kw)
    if on_devices:
        assert kept  # (both, unless one device took every window)
        if len(kept) == 2:
            assert len(adopted) == 1 and adopted[0][1] == {1 - adopted[0][0]}
        assert set(asked) == ({adopted[0][0]} if adopted else kept)
    else:
        assert kept == set() and asked == adopted == []
    assert_same(pairalign.align_all(path, backend="cpu", **kw), two)
    assert_same(pairalign.align_all(path, backend="gpu", devices=[0], **kw), two)


@pytest.mark.skipif(gpu_count() < 2, reason="needs two CUDA devices")
@pytest.mark.parametrize("share,room", [(3e-6, True), (0.25, False), (3e-6, False)])
def test_several_devices_keep_some_operations_or_have_no_room_to_adopt(data_dir, monkeypatch,
                                                                         share, room):
    """Two devices whose share for kept operations runs out (``share``
    3e-6: a few windows of 32 each, the later ones' come to the host), or
    whose adopter has no room for the other's (``room`` False: they come to
    the host and are placed there with the host's): the CPU's pairs either
    way; where both kept some, the adopter asked once for its room with the
    other's bytes."""
    from pairalign import engine, pairs

    kw = dict(mode="local", traceback=True, window=32)
    path = data_dir / "adeno_fiber.faa"
    cpu = pairalign.align_all(path, backend="cpu", **kw)  # before the spies
    monkeypatch.setattr(engine, "SEVERAL_DEVICE_OPS", True)
    monkeypatch.setattr(gpu_backend, "DEVICE_OPS_SHARE", share)
    asked, adopted, owners = [], [], []  # asked: the adoption's question of room
    onto = pairs.Placement._onto_one_device

    def spy_onto(self):
        owners.append(len({id(ops.owner) for ops in self.device_ops}))
        asked.append(None)  # marks the adoption's question to come
        try:
            return onto(self)
        finally:
            if asked[-1] is None:
                asked.pop()

    can_place = gpu_backend.GPUBackend.can_place_ops

    def spy(self, total, npairs, offsets_on_device=False, extra=0):
        if asked and asked[-1] is None:
            asked[-1] = extra
            return room and can_place(self, total, npairs, offsets_on_device, extra)
        return can_place(self, total, npairs, offsets_on_device, extra)

    monkeypatch.setattr(pairs.Placement, "_onto_one_device", spy_onto)
    monkeypatch.setattr(gpu_backend.GPUBackend, "can_place_ops", spy)
    adopt = gpu_backend.GPUBackend.adopt_ops
    monkeypatch.setattr(gpu_backend.GPUBackend, "adopt_ops",
                        lambda self, entries: adopted.append(len(entries))
                        or adopt(self, entries))
    two = pairalign.align_all(path, backend="gpu", devices=[0, 1], **kw)
    assert_same(cpu, two)
    assert len(owners) == 1
    if owners[0] == 2:  # both devices kept some: the adopter was asked, once
        assert len(asked) == 1 and asked[0] > 0
        assert adopted == ([adopted[0]] if room else []) and (not room or adopted[0] > 0)
    else:
        assert asked == adopted == []


@pytest.mark.skipif(gpu_count() < 2, reason="needs two CUDA devices")
def test_the_second_device_alone_takes_its_slots_on_it(data_dir, monkeypatch):
    """A run on device 1 alone while device 0 is current, its slots taken
    ahead (``reserve``, every job with traceback): the CPU's pairs; the
    reservation taken, its budget from device 1's own free memory (device
    0's cached blocks, once counted in it, made it fail after an earlier
    test); the slots' streams and the host stream made on device 1
    (``reserve`` makes them before any window, outside the run's device
    context: on device 0 the run hung)."""
    import cupy as cp

    monkeypatch.setattr(gpu_backend, "RESERVE_LEAST_SLOTS", 0)
    made = []
    reserve = gpu_backend.GPUBackend.reserve
    monkeypatch.setattr(gpu_backend.GPUBackend, "reserve",
                        lambda self, job: made.append(self) or reserve(self, job))
    kw = dict(mode="local", traceback=True, window=32)
    path = data_dir / "adeno_fiber.faa"
    with cp.cuda.Device(0):
        one = pairalign.align_all(path, backend="gpu", devices=[1], **kw)
    assert_same(pairalign.align_all(path, backend="cpu", **kw), one)
    (be,) = made
    assert be._reservation is not None and be._reservation["ok"]
    assert {s.device_id for s in [*be._streams, be._host_stream()]} == {1}


def test_a_retired_gpus_kept_operations_come_to_the_host(data_dir, monkeypatch):
    """The GPU fails every window after its first four (an error other than
    out of memory: after three in a row its worker retires, its device taken
    for lost): the operations that its first windows left on the device come
    to the host (``DeviceOps.rescue``: the device still gives them), the CPU
    fallback runs the rest, and the pairs are the CPU's."""
    import warnings

    from pairalign.errors import CPUFallbackWarning, DeviceErrorWarning
    from pairalign.kernels.cpu_backend import CPUBackend
    from pairalign.pairs import DeviceOps

    monkeypatch.setattr(engine, "_default_fallback", lambda first: CPUBackend)  # wanted here
    kw = dict(mode="local", traceback=True, window=32)
    path = data_dir / "adeno_fiber.faa"
    cpu = pairalign.align_all(path, backend="cpu", **kw)
    good, ran, rescued = 4, [], []
    run_windows, run_window = gpu_backend.GPUBackend.run_windows, gpu_backend.GPUBackend.run_window

    def failing_windows(self, job, state, windows, depth=None):
        for batch in run_windows(self, job, state, windows, depth):
            if len(ran) >= good:
                raise RuntimeError("CUDA error: injected")
            ran.append(getattr(batch, "device_ops", None) is not None)
            yield batch

    def failing_window(self, job, state, w):
        if len(ran) >= good:
            raise RuntimeError("CUDA error: injected")
        batch = run_window(self, job, state, w)
        ran.append(getattr(batch, "device_ops", None) is not None)
        return batch

    rescue = DeviceOps.rescue
    monkeypatch.setattr(gpu_backend.GPUBackend, "run_windows", failing_windows)
    monkeypatch.setattr(gpu_backend.GPUBackend, "run_window", failing_window)
    monkeypatch.setattr(DeviceOps, "rescue", lambda self: rescued.append(rescue(self))
                        or rescued[-1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gpu = pairalign.align_all(path, backend="gpu", devices=[0], **kw)
    assert_same(cpu, gpu)
    assert {DeviceErrorWarning, CPUFallbackWarning} <= {w.category for w in caught}
    assert len(ran) == good and any(ran)
    assert rescued == [True] * sum(ran)


#: Run in a process of its own by the test below: a sticky error leaves the
#: device unusable for the rest of the process.
_LOSE_THE_DEVICE = r"""
import sys
import warnings

import cupy as cp
import numpy as np

import pairalign
from pairalign.api import _job, make_scoring
from pairalign.engine import run_job
from pairalign.errors import CPUFallbackWarning, DeviceErrorWarning
from pairalign.kernels import gpu_backend
from pairalign.pairs import DeviceOps

path, out, good = sys.argv[1], sys.argv[2], int(sys.argv[3])
trap = cp.RawKernel(r'extern "C" __global__ void lose() { asm("trap;"); }', "lose")
ran, probed, rescued = [], [], []
run_windows = gpu_backend.GPUBackend.run_windows
responds = gpu_backend.GPUBackend.responds
rescue = DeviceOps.rescue


def losing(self, job, state, windows, depth=None):
    for batch in run_windows(self, job, state, windows, depth):
        if len(ran) == good:  # the device is lost before this batch comes out
            with self.device:
                trap((1,), (1,), ())
                cp.cuda.runtime.deviceSynchronize()  # raises the sticky error
        ran.append(getattr(batch, "device_ops", None) is not None)
        yield batch


gpu_backend.GPUBackend.run_windows = losing
gpu_backend.GPUBackend.responds = lambda self: probed.append(responds(self)) or probed[-1]
DeviceOps.rescue = lambda self: rescued.append(rescue(self)) or rescued[-1]
recs = pairalign.read_sequences(path)
be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "gpu", None, [0])
timings = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pairs = run_job(job, be, width=32, timings=timings)
assert {DeviceErrorWarning, CPUFallbackWarning} <= {w.category for w in caught}, caught
(gpu,) = [w for w in timings["scheduler"]["workers"] if w["label"] == "gpu0"]
assert gpu["retired"] and gpu["failures"] == 1, gpu
assert len(ran) == good and any(ran), ran
assert probed == [False], probed
assert rescued == [False] * sum(ran), rescued
np.savez(out, **{f: getattr(pairs, f) for f in pairs.__dataclass_fields__})
print("lost and salvaged")
"""


def test_a_gpu_lost_to_a_sticky_error_retires_at_once(data_dir, tmp_path):
    """A kernel's trap leaves the device unusable (a sticky error) after its
    fourth window: the calls on it fail, the probe (``responds``) says the
    device is lost, and its worker retires at that first failure. The
    operations its windows left on the device cannot be copied (every
    ``rescue`` fails): those windows run again on the CPU, and the pairs are
    the CPU's. In a process of its own, as the lost device is for the rest of
    its process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from pairalign.api import _job, make_scoring
    from pairalign.engine import run_job
    from pairalign.pairs import PairBatch

    path = data_dir / "adeno_fiber.faa"
    script, out = tmp_path / "lose.py", tmp_path / "pairs.npz"
    script.write_text(_LOSE_THE_DEVICE)
    done = subprocess.run([sys.executable, str(script), str(path), str(out), "4"],
                          cwd=Path(__file__).resolve().parents[1], env=os.environ,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "lost and salvaged" in done.stdout, done.stderr[-3000:]
    with np.load(out) as saved:
        gpu = PairBatch(**{f: saved[f] for f in saved.files})
    recs = pairalign.read_sequences(path)
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    assert_same_pairs(gpu, run_job(job, be, width=32))


def test_streamed_results_spill_with_operations_on_the_device(data_dir):
    """Results held in place with their operations on the device until they
    outgrow the budget: the held windows and the later ones come to the host
    for the buckets, and the parts are the CPU's pairs in input order."""
    from pairalign.api import _job, make_scoring
    from pairalign.engine import run_job
    from pairalign.pairs import PairBatch
    from pairalign.streaming import PLACED_PAIR_BYTES, in_input_order

    recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
    scoring = make_scoring(recs.alphabet)
    cpu_be, job = _job(recs, None, "global", scoring, True, "cpu", None, None)
    ref = run_job(job, cpu_be)
    budget = int(ref.nbytes / 1.5)
    assert PLACED_PAIR_BYTES * len(ref) <= budget < ref.nbytes  # placed at first, then spilled
    gpu_be, gjob = _job(recs, None, "global", scoring, True, "gpu", None, None)
    parts = list(in_input_order(gjob, gpu_be, bucket_bytes=budget, width=32))
    assert len(parts) >= 2
    whole = PairBatch.concat(parts)
    assert_same_pairs(whole, ref)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_dna_genes(data_dir, mode, traceback):
    recs = pairalign.read_sequences(data_dir / "genes_CP040672.fna")
    cpu, gpu = both(recs.sequences[:40], mode=mode, traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("matrix,go,ge", [("BLOSUM45", 15, 2), ("PAM250", 10, 1),
                                          ("BLOSUM80", 0, 0), ("BLOSUM62", 40, 40)])
@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_random_lengths_and_scoring(mode, matrix, go, ge, traceback):
    """Ragged windows, several matrices and gaps; score-only, pairs whose scores
    fit 16 bits run two per warp beside those that do not (40/40 gaps)."""
    rng = np.random.default_rng(stable_seed(mode, matrix, go))
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWYX"))
    lengths = np.concatenate([[1, 1, 2, 3, 3000, 1500], rng.integers(1, 400, 31)])
    base = "".join(rng.choice(letters, 3000))
    seqs = []
    for k, n in enumerate(lengths):  # related and unrelated sequences mixed
        s = base[:n] if k % 3 == 0 else "".join(rng.choice(letters, n))
        seqs.append(s)
    # 37 sequences and window 16: ragged last blocks
    cpu, gpu = both(seqs, mode=mode, matrix=matrix, gap_open=go, gap_extend=ge, window=16,
                    traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("match,mismatch,go,ge", [(0, 0, 0, 0), (1, 0, 0, 0), (-2, -3, 2, 1),
                                                  (1, 1, 5, 5), (7, -9, 30, 1)])
@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_dna_scoring_at_its_edges(mode, match, mismatch, go, ge, traceback):
    """DNA scorings that a user may give and the matrices never hold: every
    alignment scoring 0 (ties everywhere, so every tie-break shows), matches
    free of cost, no positive score at all (local's empty alignments),
    mismatches rewarded, and scores large enough to take some pairs to 32
    bits. Repeats, N, lengths from 1 and a window of 16 (ragged blocks)."""
    rng = np.random.default_rng(stable_seed(match, mismatch, go, mode))
    lengths = np.concatenate([[1, 1, 2, 5, 2000], rng.integers(1, 300, 28)])
    repeat = "".join(rng.choice(list("AC"), 7)) * 200
    seqs = []
    for k, n in enumerate(lengths):
        if k % 4 == 0:
            seqs.append(repeat[k:k + n])
        else:
            seqs.append("".join(rng.choice(list("ACGTN"), n, p=[0.24] * 4 + [0.04])))
    cpu, gpu = both(seqs, mode=mode, alphabet="dna", match=match, mismatch=mismatch,
                    gap_open=go, gap_extend=ge, window=16, traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("letters,scale", [("ARNDCQEGHILKMFPSTWYVBZX*", 1),
                                            ("ARNDCQEGHILKMFPSTWYVBZX*UOJ", 1),
                                            ("ARNDCQEGHILKMFPSTWYVX", 40)])
@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_matrix_files_as_the_cpu(tmp_path, letters, scale, mode, traceback):
    """Matrices of a user's file: of BLOSUM62's 24 letters (the warp
    kernels' profile), of 27 with scores of their own for U, O and J (past
    it), and with scores past a byte (some pairs past 16 bits): the CPU's
    pairs, with a window of 16 (ragged blocks) and lengths from 1."""
    rng = np.random.default_rng(stable_seed(letters, scale, mode))
    path = write_ncbi(tmp_path / "m.txt", letters, random_matrix(rng, letters) * scale)
    lengths = np.concatenate([[1, 2, 17, 1500], rng.integers(1, 400, 36)])
    seqs = ["".join(rng.choice(list(letters.replace("*", "")), n)) for n in lengths]
    cpu, gpu = both(seqs, mode=mode, matrix=path, gap_open=9 * scale, gap_extend=2 * scale,
                    window=16, traceback=traceback)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("which", ["adeno", "genes", "random", "rectangle"])
def test_semiglobal_traceback_with_the_query_padded_on_top(data_dir, monkeypatch, which):
    """SEMIGLOBAL_TRACEBACK_TOP_PAD: the packed pairs' queries padded on top to
    whole stripes (the walk reads row i at row i + pad), on proteins, DNA,
    random lengths from 1 (ragged windows, short last bands) and a
    rectangle: the CPU's alignments."""
    monkeypatch.setattr(gpu_backend, "SEMIGLOBAL_TRACEBACK_TOP_PAD", True)
    kw = dict(mode="semiglobal", traceback=True)
    if which == "adeno":
        cpu, gpu = both(data_dir / "adeno_fiber.faa", **kw)
    elif which == "genes":
        cpu, gpu = both(pairalign.read_sequences(data_dir / "genes_CP040672.fna").sequences[:40],
                        **kw)
    elif which == "random":
        rng = np.random.default_rng(11)
        letters = np.array(list("ACDEFGHIKLMNPQRSTVWYX"))
        lengths = np.concatenate([[1, 2, 15, 16, 17, 2000], rng.integers(1, 700, 41)])
        cpu, gpu = both(["".join(rng.choice(letters, n)) for n in lengths], window=16,
                        matrix="BLOSUM45", gap_open=15, gap_extend=2, **kw)
    else:
        recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
        q, t = recs.sequences[:20], recs.sequences[20:90]
        cpu = pairalign.align_many(q, t, backend="cpu", **kw)
        gpu = pairalign.align_many(q, t, backend="gpu", **kw)
    assert_same(cpu, gpu)


def test_query_target_rectangle(data_dir):
    recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
    q, t = recs.sequences[:20], recs.sequences[20:90]
    cpu = pairalign.align_many(q, t, backend="cpu", mode="semiglobal")
    gpu = pairalign.align_many(q, t, backend="gpu", mode="semiglobal")
    assert_same(cpu, gpu)


@pytest.fixture(params=[None, 8192], ids=["all packed", "tail rule"])
def pack_tail(request, monkeypatch):
    """Every pair that fits 16 bits packed (PACK_TAIL_STEPS and
    PACK_TAIL_STEPS_TRACEBACK None), or packs' rule (the default: a window's
    few pairs of long packed steps, or with traceback its long pairs alone,
    run unpacked, in 16 bits)."""
    monkeypatch.setattr(gpu_backend, "PACK_TAIL_STEPS", request.param)
    monkeypatch.setattr(gpu_backend, "PACK_TAIL_STEPS_TRACEBACK", request.param)
    return request.param


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_packed_near_16_bit_limit(monkeypatch, pack_tail, mode, traceback):
    """Two pairs per warp in 16-bit halves with scores at the 16-bit bound from
    both sides (conftest's ``int16_edge_sequences``: poly-W's self score
    within 30 of it, a global score near its negative) beside shorter
    targets: exact, as on the CPU (with traceback, the origins come from
    differences of scores: 16 bits hold them)."""
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", 0)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
    scoring = Scoring.create("protein")
    seqs = int16_edge_sequences(scoring)
    cpu, gpu = both(seqs, mode=mode, traceback=traceback)
    assert gpu.scores[0, 1] == len(seqs[0]) * scoring.score("W", "W")
    assert_same(cpu, gpu)
    far, short = int16_far_pairs(scoring)
    kw = dict(mode=mode, traceback=traceback)
    cpu = pairalign.align_many(far, short, backend="cpu", **kw)
    gpu = pairalign.align_many(far, short, backend="gpu", **kw)
    if mode == "global":
        assert gpu.scores.min() < -(INT16_LIMIT - 100)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_packed_dna_at_16_bit_edge(monkeypatch, pack_tail, mode, traceback):
    """DNA reads (2/-3, gaps 5/2) of the longest length that takes 16 bits in
    the mode (3,994 bp global, 7,992 semiglobal, 7,994 local), identical,
    10% mutated and unrelated, and (alone) a read at the edge against reads
    of 20 bases, all two a warp in 16-bit halves: the CPU's results."""
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", 0)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
    scoring = Scoring.create("dna")
    w, far = int16_edge(scoring, mode=mode), int16_edge(scoring, 20, mode)
    rng = np.random.default_rng(9)
    read = rng.choice(list("ACGT"), w)
    mutated = np.where(rng.random(w) < 0.1, rng.choice(list("ACGT"), w), read)
    seqs = ["".join(read), "".join(read), "".join(mutated),
            "".join(rng.choice(list("ACGT"), w - 9))]
    short = ["".join(rng.choice(list("ACGT"), 20)) for _ in range(5)]
    cpu, gpu = both(seqs + short, mode=mode, traceback=traceback)
    assert gpu.scores[0, 1] == 2 * w
    assert_same(cpu, gpu)
    kw = dict(mode=mode, traceback=traceback)
    query = ["".join(rng.choice(list("ACGT"), far))]
    cpu = pairalign.align_many(query, short, backend="cpu", **kw)
    gpu = pairalign.align_many(query, short, backend="gpu", **kw)
    assert_same(cpu, gpu)


@pytest.mark.parametrize("mode", ["semiglobal", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_packed_short_beside_long(monkeypatch, pack_tail, mode, traceback):
    """Short pairs beside a 15,000-base neighbour in 16 bits (local and
    semiglobal bounds hold no gap term in n + m: 60,000 by v56's bound at
    gaps of 40/4), as target couples and as query couples, each padded to
    its neighbour's length. The CPU's results."""
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS_SCORE_ONLY", 0)
    monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
    rng = np.random.default_rng(12)
    read = "".join(rng.choice(list("ACGT"), 100))
    long = "".join(rng.choice(list("ACGT"), 7_000)) + read + "".join(
        rng.choice(list("ACGT"), 7_900))
    short = [read[:50], read[30:90], "".join(rng.choice(list("ACGT"), 70)), read,
             read[::-1]]
    kw = dict(mode=mode, traceback=traceback, gap_open=40, gap_extend=4)
    for queries, targets in (([read, read[5:]], [long] + short),
                             ([long] + short, [read, read[5:]])):
        cpu = pairalign.align_many(queries, targets, backend="cpu", **kw)
        gpu = pairalign.align_many(queries, targets, backend="gpu", **kw)
        assert gpu.scores.max() == 200
        assert_same(cpu, gpu)


@pytest.mark.parametrize("triangle", [True, False])
@pytest.mark.parametrize("traceback", [True, False])
def test_layout_kernel_expands_the_plan(triangle, traceback):
    """``layout_pairs`` on the device writes, entry for entry, what the NumPy
    twin of gpu_layout computes from the host's plan (query couples score-only,
    couples, wide pairs, whole warps and the rest; 16- and 32-bit windows)."""
    from pairalign.job import Job, SortedSet
    from pairalign.kernels.gpu_layout import JobLengths, expand
    from pairalign.scheduler.windows import plan_windows

    rng = np.random.default_rng(4)
    scoring = Scoring.create("protein")
    seqs = ["".join(rng.choice(list(AMINO), int(k)))
            for k in rng.integers(1, 3500, 170)]
    rows = SortedSet.encode(seqs[:100] if not triangle else seqs, scoring)
    cols = None if triangle else SortedSet.encode(seqs[100:], scoring)
    job = Job("local", scoring, traceback, rows, cols)
    be = gpu_backend.GPUBackend()
    state = be.prepare(job)
    col_len = job.col_set.lengths
    seen = set()
    for w in plan_windows(job.rows.lengths, None if triangle else col_len, 64):
        plan = be._plan(job, w)
        npairs = plan.npairs
        with be.device, be.cp.cuda.Stream(non_blocking=True) as stream:
            a = be._slot_memory(stream, gpu_backend.window_arrays(plan, traceback))
            mod = be._module(job.score_dtype(w), job.mode_code)
            lay = be._layout(job, state, plan, a, stream, mod)
            stream.synchronize()
        want = expand(plan, JobLengths.of(job.rows.lengths, col_len), state["col_base"],
                      traceback)
        got = {"rows": a["rows"], "cols": a["cols"], "off": lay["off"], "boff": lay["boff"],
               "op_off": lay["op_off"]}
        for k, v in want.items():
            if v is None:
                assert got[k] is None
            else:
                assert np.array_equal(got[k].get(), v), (w, k)
        assert np.array_equal(lay["warp_m"].get(), plan.warp_m)
        seen.add((plan.npack > 0, plan.nwide > plan.npack, npairs > plan.nwide,
                  job.score_dtype(w).itemsize, plan.query_warps > 0))
    kinds = {k for s in seen for k, on in zip(("packed", "wide", "narrow", "query"),
                                              s[:3] + s[4:]) if on}
    assert kinds == {"packed", "wide", "narrow", "query"}  # local: query couples both ways
    assert {s[3] for s in seen} == {2, 4}


def test_run_left_early_then_again(data_dir):
    """A run abandoned with windows in flight (its consumer gone) leaves the
    backend's streams and buffers fit for the next run: the same results as
    the CPU's."""
    from pairalign.engine import run_job
    from pairalign.job import Job, SortedSet
    from pairalign.kernels.cpu_backend import CPUBackend
    from pairalign.scheduler.windows import plan_windows

    recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
    sc = Scoring.create("protein")
    job = Job("local", sc, True, SortedSet.encode(recs.sequences, sc))
    be = gpu_backend.GPUBackend()
    state = be.prepare(job)
    windows = plan_windows(job.rows.lengths, None, 32)
    assert len(windows) > 2 * gpu_backend.DEPTH
    run = be.run_windows(job, state, windows)
    next(run)
    run.close()
    assert_same_pairs(run_job(job, be), run_job(job, CPUBackend()))


@pytest.mark.parametrize("mode, traceback", [("local", True), ("global", False)])
def test_dask_cluster_of_gpu_workers_gives_the_cpus_pairs(data_dir, mode, traceback):
    """Windows as Dask tasks on a LocalCluster of worker processes, one a GPU
    (up to two): every window runs on a worker's GPU, and the pairs are the
    CPU backend's."""
    distributed = pytest.importorskip("dask.distributed")
    from pairalign.api import _job, make_scoring
    from pairalign.engine import run_job

    recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
    cpu_be, job = _job(recs, None, mode, make_scoring(recs.alphabet), traceback, "cpu", None,
                       None)
    ref = run_job(job, cpu_be)
    timings: dict = {}
    with distributed.LocalCluster(n_workers=min(2, gpu_count()), threads_per_worker=1,
                                  processes=True, dashboard_address=":0",
                                  host="127.0.0.1") as cl, \
            distributed.Client(cl, timeout=60) as client:
        got = run_job(job, cpu_be, width=32, client=client, timings=timings)
    assert_same_pairs(got, ref)
    workers = timings["scheduler"]["workers"]
    assert sum(w["pairs"] for w in workers) == len(ref)
    assert workers and all("/gpu" in w["label"] for w in workers), workers


@pytest.mark.parametrize("mode", ["local", "global"])
@pytest.mark.parametrize("targets", [False, True])
def test_score_only_batches_sorted_by_rank(data_dir, monkeypatch, mode, targets):
    """With SORT_BY_RANK, each score-only window's batch comes sorted by rank
    in input order (all-vs-all or queries against targets), and the run's
    pairs are the CPU backend's."""
    from pairalign.api import _job, make_scoring
    from pairalign.engine import iter_windows, pair_rank, run_job

    monkeypatch.setattr(gpu_backend, "SORT_BY_RANK", True)
    recs = pairalign.read_sequences(data_dir / "adeno_fiber.faa")
    other = (pairalign.sequences.records_from_python(recs.sequences[:40], ids=recs.ids[:40])
             if targets else None)
    scoring = make_scoring(recs.alphabet)
    cpu_be, job = _job(recs, other, mode, scoring, False, "cpu", None, None)
    gpu_be, gjob = _job(recs, other, mode, scoring, False, "gpu", None, None)
    batches = list(iter_windows(gjob, gpu_be, width=32))
    assert len(batches) > 1
    for b in batches:
        assert (np.diff(pair_rank(gjob, b)) > 0).all()
    assert_same_pairs(run_job(gjob, gpu_be, width=32), run_job(job, cpu_be))


@pytest.mark.parametrize("case", ["adeno", "proteome", "short bands", "query couples", "random",
                                  "16-bit limit", "genes", "columns", "chunks of 1", "chunks of 2"])
def test_checkpointed_traceback(data_dir, monkeypatch, case):
    """CHECKPOINT_TRACEBACK_MODES: the packed kernel keeps checkpoints in place of
    traceback bits and the walk fills again the blocks its path crosses: the
    CPU's alignments in every mode, on homologs (long paths through many
    blocks), the proteome's longest proteins, queries ending around the short
    last band of 8-row stripes (target and query couples), random lengths
    with several matrices and gaps, scores near the 16-bit bound, DNA,
    checkpoints 16 columns apart (the default's 32 elsewhere), and the words
    from above stored a step and two steps a store (the default's four
    elsewhere) with lengths around the chunks' edges."""
    modes = ("global", "semiglobal", "local")
    monkeypatch.setattr(gpu_backend, "CHECKPOINT_TRACEBACK_MODES", modes)
    kw: dict = {}
    if case == "adeno":
        seqs = pairalign.read_sequences(data_dir / "adeno_fiber.faa").sequences
    elif case == "proteome":
        recs = pairalign.read_sequences(data_dir / "proteome_HG003687.faa")
        order = np.argsort(-recs.lengths)
        pick = np.unique(np.concatenate([order[:4], np.random.default_rng(5).choice(
            len(recs), 120, replace=False)]))
        seqs = [recs.sequences[k] for k in pick]
    elif case == "short bands":
        pack_every_pair(monkeypatch, 32, 4, 16, 8)
        monkeypatch.setattr(gpu_backend, "QUERY_COUPLE_MODES_TRACEBACK", ("local", "global"))
        seqs = band_end_sequences(128, (1, 63, 64, 65, 127, 128))
    elif case == "query couples":
        pack_every_pair(monkeypatch, 32, 4, 32, 4)
        monkeypatch.setattr(gpu_backend, "QUERY_COUPLE_MODES_TRACEBACK", ("local", "global"))
        seqs = warp_sequences()
    elif case == "random":
        rng = np.random.default_rng(13)
        letters = np.array(list("ACDEFGHIKLMNPQRSTVWYX"))
        lengths = np.concatenate([[1, 2, 3, 16, 17, 1500], rng.integers(1, 600, 31)])
        base = "".join(rng.choice(letters, 1500))
        seqs = [base[:n] if k % 3 == 0 else "".join(rng.choice(letters, n))
                for k, n in enumerate(lengths)]
        kw = dict(matrix="BLOSUM45", gap_open=15, gap_extend=2, window=16)
    elif case == "16-bit limit":
        monkeypatch.setattr(gpu_backend, "WIDE_STEPS", 0)
        seqs = int16_edge_sequences(Scoring.create("protein"))
    elif case == "genes":
        seqs = pairalign.read_sequences(data_dir / "genes_CP040672.fna").sequences[:40]
    elif case == "columns":
        monkeypatch.setattr(gpu_backend, "CHECKPOINT_COLUMNS", 16)
        seqs = pairalign.read_sequences(data_dir / "adeno_fiber.faa").sequences[:60]
    else:
        monkeypatch.setattr(gpu_backend, "CHECKPOINT_STEP_CHUNK", int(case.split()[-1]))
        rng = np.random.default_rng(17)
        base = pairalign.read_sequences(data_dir / "adeno_fiber.faa").sequences[0]
        seqs = [base[:n] for n in (1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 65)]
        seqs += [base[:n] for n in rng.integers(100, len(base), 40)]
    for mode in modes:
        cpu, gpu = both(seqs, mode=mode, traceback=True, **kw)
        assert_same(cpu, gpu)
