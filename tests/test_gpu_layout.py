"""The GPU backend's host-side code on the CPU, no device needed: a window's
launch plan (order and buffer sizes, expanded by the NumPy twin of the device
kernel ``layout_pairs``) and downloads through the staging buffer (CuPy's copy
calls done on host memory)."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairalign.kernels import gpu_backend
from pairalign.kernels.gpu_backend import GPUBackend
from pairalign.kernels.gpu_layout import JobLengths, expand, plan_window
from pairalign.kernels.layout_jit import plan_window_jit
from pairalign.scheduler.windows import Window, make_window, window_pairs


STEPS = 2048


def lengths_sorted(rng, count, longest):
    """Sequence lengths as a job holds them: longest first."""
    return np.sort(rng.integers(1, longest, count))[::-1].astype(np.int64)


def fits_below(limit):
    """A 16-bit fit that holds for every target shorter than ``limit + 1``
    (the kernels' rule is monotone in the same way)."""
    return lambda n, m: np.asarray(m) <= limit


def same_plans(plan, other):
    """Two LayoutPlans equal field by field (arrays by dtype and values)."""
    for field in dataclasses.fields(plan):
        x, y = getattr(plan, field.name), getattr(other, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), field.name
        else:
            assert type(x) is type(y) and x == y, field.name
    return True


def expanded(rows_len, cols_len, w, traceback, steps=STEPS, fits16=None, score_bytes=2,
             col_base=0, per_warp=1, stripes=1, query=0, block=1):
    """A window's plan and its expansion; numba's planner gives the same plan."""
    lengths = JobLengths.of(rows_len, cols_len)
    options = dict(traceback=traceback, wide_steps=steps, fits16=fits16,
                   score_bytes=score_bytes, couples_per_warp=per_warp,
                   couple_stripes=stripes, query_band=query, query_block=block)
    plan = plan_window(lengths, w, **options)
    assert same_plans(plan, plan_window_jit(lengths, w, **options))
    return plan, expand(plan, lengths, col_base, traceback)


def check_plan(plan, lay, rows_len, cols_len, w, traceback, steps, fits16, col_base=0,
               per_warp=1, stripes=1, query=0, block=1):
    """Every pair once, in the launch order of gpu_layout's docstring, with
    buffers that neither overlap nor fall short of what the kernels write.
    ``query``: rows of a query couple's band (0: no query couples);
    ``block``: warps a block that share a query couple's profile."""
    r, c = lay["rows"].astype(np.int64), lay["cols"].astype(np.int64) - col_base
    n, m = rows_len[r], cols_len[c]
    # every pair of the window once
    rr, cc = np.meshgrid(np.arange(w.r0, w.r1), np.arange(w.c0, w.c1), indexing="ij")
    keep = rr < cc if w.triangle else np.ones(rr.shape, bool)
    want = np.sort(rr[keep] * 100000 + cc[keep])
    assert plan.npairs == want.size and np.array_equal(np.sort(r * 100000 + c), want)
    nwide, npack = plan.nwide, plan.npack
    is_wide = ((n + 7) // 8 * m >= steps) if steps is not None else np.zeros(n.size, bool)
    assert is_wide[:nwide].all() and not is_wide[nwide:].any()
    # couples: two neighbouring targets of one row, both fit, the longer first
    assert npack % 2 == 0
    if fits16 is None:
        assert npack == 0
    fit = np.asarray(fits16(n, m), bool) if fits16 is not None else np.zeros(n.size, bool)
    cw = plan.couple_warps.astype(np.int64)
    nq = 2 * int(cw[plan.query_warps])  # query couples' pairs, first
    if not query:
        assert nq == 0
    # query couples: rows 2k and 2k + 1 of the window against one target, and
    # every target both pack is in one
    a, b = slice(0, nq, 2), slice(1, nq, 2)
    assert fit[:nq].all() and (r[b] == r[a] + 1).all() and (c[a] == c[b]).all()
    assert ((r[a] - w.r0) % 2 == 0).all()
    if query and fits16 is not None:
        packs = is_wide & fit
        for x in range(w.r0, w.r1 - 1, 2):
            both = set(c[(r == x) & packs].tolist()) & set(c[(r == x + 1) & packs].tolist())
            if -(-rows_len[x] // query) != -(-rows_len[x + 1] // query):
                both = set()  # the shorter query would run the longer one's extra band
            assert set(c[a][r[a] == x].tolist()) == both
    # couples: two neighbouring targets of one row, both fit, the longer first
    a, b = slice(nq, npack, 2), slice(nq + 1, npack, 2)
    assert fit[:npack].all() and (r[a] == r[b]).all() and (c[b] == c[a] + 1).all()
    assert (m[a] >= m[b]).all()
    # the packed kernels' warps: the couples in order, up to per_warp a warp, all
    # of one row (or row couple) and kind; a warp with fewer is its row's last
    a, b = slice(0, npack, 2), slice(1, npack, 2)
    assert cw[0] == 0 and cw[-1] == npack // 2
    size = np.diff(cw)
    held = size > 0
    assert held[plan.query_warps:].all() and (size <= per_warp).all()
    # query couples' warps in whole blocks of one row couple, empty ones last
    if block == 1:
        assert held.all()
    assert plan.query_warps % block == 0
    for b0 in range(0, plan.query_warps, block):
        part = held[b0:b0 + block]
        assert part[0] and not (part[1:] & ~part[:-1]).any()
        rows = r[2 * cw[b0:b0 + block][part]]
        assert (rows == rows[0]).all()
        if b0 + block < plan.query_warps and not part.all():  # padding ends a row couple
            assert r[2 * cw[b0 + block]] != rows[0]
    warp_of = np.repeat(np.arange(size.size), size)
    kind = np.arange(npack // 2) < nq // 2  # a query couple
    assert np.array_equal(r[a], r[2 * cw[warp_of]])
    assert np.array_equal(kind, kind[cw[warp_of]])
    assert (kind[cw[:-1][held]] == (np.arange(size.size) < plan.query_warps)[held]).all()
    # (a short warp that only padding follows to the end has no next couple)
    short = np.flatnonzero(held[:-1] & (size[:-1] < per_warp) & (cw[1:-1] < npack // 2))
    first = cw[short + 1], cw[short]
    assert ((r[2 * first[0]] != r[2 * first[1]]) | (kind[first[0]] != kind[first[1]])).all()
    # the other wide pairs row-major, at most one that fits a row (no partner)
    key = r * 100000 + c
    assert (np.diff(key[npack:nwide]) > 0).all()
    others = slice(npack, nwide)
    if fits16 is not None:
        # a row leaves at most one fitting wide pair without a partner (two
        # with query couples: one on each side of the targets it shares)
        alone = 2 if query else 1
        assert np.bincount(r[others][fit[others]], minlength=w.r1).max(initial=0) <= alone
        per_row = np.bincount(r[:nwide][fit[:nwide]], minlength=w.r1)
        assert (np.bincount(r[:npack], minlength=w.r1) >= per_row - alone).all()
    # narrow: each row's first pairs in whole warps of 32, then the rest by length
    nr, nc = r[nwide:], c[nwide:]
    grouped = []
    for row in np.unique(nr):
        cols = np.sort(nc[nr == row])
        grouped += [(row, x) for x in cols[:cols.size - cols.size % 32]]
    g = len(grouped)
    assert list(zip(nr[:g].tolist(), nc[:g].tolist())) == [tuple(map(int, x)) for x in grouped]
    rest = np.stack([-m[nwide + g:], -n[nwide + g:]], 1)
    assert (np.diff(rest[:, 0]) >= 0).all()
    assert all(tuple(x) <= tuple(y) for x, y in zip(rest[:-1], rest[1:]))
    # buffers: each pair's (or warp's) share, back to back
    off, boff = lay["off"], lay["boff"]
    f = 4 // plan.score_bytes
    lanes = np.where(np.arange(nwide) < npack, 32 // per_warp, 32)
    per_band = lanes * np.where(np.arange(nwide) < npack, stripes, 1)  # stripes a band
    # a query couple's pairs take the bands of the longer query, its first
    n_bands = n[:nwide].copy()
    n_bands[1:nq:2] = n[0:nq:2]
    bands = ((n_bands + 7) // 8 + per_band - 1) // per_band
    tb = bands * (m[:nwide] + lanes - 1) * per_band if traceback else 0 * n[:nwide]
    assert np.array_equal(np.diff(off[:nwide + 1]), tb)
    bnd = m[:nwide] + 1
    bnd[a] = f * (m[a] + 1)
    bnd[b] = 0
    assert np.array_equal(np.diff(boff[:nwide + 1]), bnd)
    nwarps = -(-(plan.npairs - nwide) // 32)
    pad = nwarps * 32 - (plan.npairs - nwide)
    wn = np.append(n[nwide:], np.zeros(pad, np.int64)).reshape(nwarps, 32).max(axis=1)
    wm = np.append(m[nwide:], np.zeros(pad, np.int64)).reshape(nwarps, 32).max(axis=1)
    assert np.array_equal(plan.warp_m, wm)
    assert np.array_equal(np.diff(off[nwide:]), (wn + 7) // 8 * wm * 32 if traceback else 0 * wm)
    assert np.array_equal(np.diff(boff[nwide:]), (wm + 1) * 32)
    assert off[0] == 0 and boff[0] == 0
    assert off[-1] == plan.tb_words and boff[-1] == plan.bnd
    if traceback:
        op = lay["op_off"]
        assert op[0] == 0 and np.array_equal(np.diff(op), n + m) and op[-1] == plan.ops
    else:
        assert lay["op_off"] is None and plan.ops == 0
    # the device arrays carved for the window hold all of it
    arrays = gpu_backend.window_arrays(plan, traceback)
    assert arrays["off"][0] == len(off) and arrays["boff"][0] == len(boff)
    assert arrays["rows"][0] == arrays["cols"][0] == plan.npairs
    assert arrays["words"][0] >= plan.tb_words and arrays["bnd_h"][0] == plan.bnd
    assert arrays["bnd_h"][1].itemsize == plan.score_bytes
    if traceback:
        assert arrays["op_off"][0] == len(lay["op_off"])
        assert arrays["code"][0] == arrays["len"][0] == plan.ops
    assert gpu_backend.window_bytes(plan, traceback) >= sum(
        count * dtype.itemsize for count, dtype in arrays.values())


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("triangle", [False, True])
@pytest.mark.parametrize("longest", [300, 900])
@pytest.mark.parametrize("traceback", [False, True])
@pytest.mark.parametrize("per_warp,stripes,query,block", [
    (1, 1, 0, 1), (4, 1, 0, 1), (4, 2, 0, 1), (8, 1, 128, 1), (4, 2, 32, 1), (8, 1, 128, 8),
    (2, 1, 32, 4)])
def test_plan_orders_pairs_and_sizes_buffers(seed, triangle, longest, traceback, per_warp,
                                             stripes, query, block):
    rng = np.random.default_rng(seed)
    count = 150
    rows_len = lengths_sorted(rng, count, longest)
    cols_len = rows_len if triangle else lengths_sorted(rng, count + 37, longest)
    r0, c0 = (16, 16) if triangle else (16, 5)
    w = Window(r0, r0 + 48, c0, c0 + 120 if not triangle else r0 + 120, triangle, 0, 0)
    # about 60% of the pairs narrow; all but the longest targets fit 16 bits
    steps = int(np.quantile((rows_len[w.r0:w.r1, None] + 7) // 8 * cols_len[w.c0:w.c1], 0.6))
    fits16 = fits_below(int(np.quantile(cols_len[w.c0:w.c1], 0.8)))
    plan, lay = expanded(rows_len, cols_len, w, traceback, steps, fits16,
                         score_bytes=2 if seed % 2 else 4, col_base=0 if triangle else count,
                         per_warp=per_warp, stripes=stripes, query=query, block=block)
    assert plan.npack and plan.nwide > plan.npack and plan.npairs > plan.nwide
    assert (plan.query_warps > 0) == bool(query)
    check_plan(plan, lay, rows_len, cols_len, w, traceback, steps, fits16,
               col_base=0 if triangle else count, per_warp=per_warp, stripes=stripes,
               query=query, block=block)


@pytest.mark.parametrize("steps", [None, 1, 1 << 40])
def test_plan_all_wide_or_all_narrow(steps):
    """No wide pairs (the warp kernels cannot hold the matrix, or none is
    long enough) and every pair wide: the same rules hold."""
    rng = np.random.default_rng(5)
    lengths = lengths_sorted(rng, 90, 700)
    w = Window(0, 90, 0, 90, True, 0, 0)
    plan, lay = expanded(lengths, lengths, w, True, steps=steps)
    assert plan.nwide == (plan.npairs if steps == 1 else 0)
    check_plan(plan, lay, lengths, lengths, w, True, steps, None)


def protein_job(mode, traceback, seed, longest, count):
    """A job of ``count`` random proteins of 5 to ``longest`` residues, and a
    GPU backend made without a device (planning needs none)."""
    rng = np.random.default_rng(seed)
    return (lengths_job(rng.integers(5, longest, count), traceback, mode, rng),
            GPUBackend.planner())


@pytest.mark.parametrize("traceback", [False, True])
def test_plan_of_a_job_sizes_windows_without_a_device(traceback):
    """The backend fits windows to memory from the plan alone (no CuPy), with
    the job's own 16-bit rule."""
    from pairalign.scheduler.windows import plan_windows

    # up to 3,500 residues: the longest pairs' scores need 32 bits
    job, be = protein_job("local", traceback, 2, 3500, 150)
    lengths = job.rows.lengths
    packed = unpacked = 0
    for w in plan_windows(lengths, None, 64):
        plan = be._plan(job, w)
        assert be.window_bytes(job, w) == gpu_backend.window_bytes(plan, traceback)
        lay = expand(plan, JobLengths.of(lengths, lengths), 0, traceback)
        steps = gpu_backend.WIDE_STEPS if traceback else gpu_backend.WIDE_STEPS_SCORE_ONLY
        rows, group = gpu_backend._pack_shape(traceback, job.mode)
        packs = gpu_backend.packs(job, JobLengths.of(lengths, lengths), w, traceback)
        check_plan(plan, lay, lengths, lengths, w, traceback, steps, packs,
                   per_warp=32 // group, stripes=rows // 8 if traceback else 1,
                   query=be._query_band(job), block=gpu_backend._query_block(traceback))
        assert plan.npairs == w.pairs
        packed += plan.npack
        unpacked += plan.nwide - plan.npack
    assert packed and unpacked


def lengths_job(lengths, traceback=False, mode="local", rng=None):
    """A protein job of random sequences of these lengths (residues drawn
    from ``rng``)."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(7) if rng is None else rng
    scoring = Scoring.create("protein")
    seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(k))) for k in lengths]
    return Job(mode, scoring, traceback, SortedSet.encode(seqs, scoring))


def packed_pairs(job, w, traceback=False):
    """The window's pairs the backend's plan packs, as (row length, column
    length), and the job's lengths."""
    lengths = JobLengths.of(job.rows.lengths, job.col_set.lengths)
    fits = gpu_backend.packs(job, lengths, w, traceback)
    r, c = window_pairs(w)
    n, m = lengths.rows[r], lengths.cols[c]
    return n, m, np.asarray(fits(n, m), bool)


@pytest.fixture(params=[False, True], ids=["score-only", "traceback"])
def tail_rule(request, monkeypatch):
    """Score-only and with traceback, PACK_TAIL_STEPS's rule on for both."""
    monkeypatch.setattr(gpu_backend, "PACK_TAIL_STEPS_TRACEBACK", 8192)
    return request.param


def test_few_long_pairs_do_not_pack(tail_rule, monkeypatch):
    """A window where the pairs of long packed steps are few (a protein of
    4,560 residues against ones of 950-1,450 beside 300 short ones, as the
    proteome's): score-only, those run unpacked and every other pair that
    fits 16 bits packs; with traceback, where they hold a small share of
    the window's cells, every pair that fits packs, and with the share
    rule off they run unpacked too. With PACK_TAIL_STEPS None, every pair
    that fits packs."""
    traceback = tail_rule
    rng = np.random.default_rng(3)
    lengths = np.concatenate([[4560], rng.integers(950, 1450, 6), rng.integers(50, 400, 300)])
    job = lengths_job(lengths, traceback)
    k = job.rows.lengths
    w = make_window(k, k, 0, len(k), 0, len(k), True)
    n, m, packed = packed_pairs(job, w, traceback)
    fits = job.scoring.fits_int16(n, m, job.mode)
    rows, group = gpu_backend._pack_shape(traceback, "local")
    long = -(-n // (rows * group)) * m > 8192
    assert (fits & long).sum() >= 6  # the 4,560 against each of the six fits
    if traceback:
        assert (n * m)[long].sum() < 0.1 * (n * m).sum()
        assert np.array_equal(packed, fits)
        monkeypatch.setattr(gpu_backend, "PACK_TAIL_SHARE_TRACEBACK", 0)
        packed = packed_pairs(job, w, traceback)[2]
    assert not (packed & long).any()
    assert np.array_equal(packed, fits & ~long)
    for name in ("PACK_TAIL_STEPS", "PACK_TAIL_STEPS_TRACEBACK"):
        monkeypatch.setattr(gpu_backend, name, None)
    assert np.array_equal(packed_pairs(job, w, traceback)[2], fits)


def test_many_long_pairs_pack(tail_rule):
    """A window of many pairs of long packed steps (300 proteins of 1,000-1,450
    residues, as reads of 2.5-3.9 kb are): every pair that fits 16 bits packs;
    a window of 4 of them against the rest, with too few such pairs, packs
    none of them."""
    traceback = tail_rule
    rng = np.random.default_rng(4)
    lengths = np.sort(rng.integers(1000, 1450, 300))[::-1]
    job = lengths_job(lengths, traceback)
    k = job.rows.lengths
    n, m, packed = packed_pairs(job, make_window(k, k, 0, 300, 0, 300, True), traceback)
    assert packed.all() and job.scoring.fits_int16(n, m, job.mode).all()
    small = make_window(k, k, 0, 4, 4, 300, False)
    n, m, packed = packed_pairs(job, small, traceback)
    assert not packed.any()


def test_long_reads_with_traceback_unpack():
    """With traceback, a window of long DNA reads alone (semiglobal, 4-7.9 kb,
    which take 16 bits by the mode's bound), as few as a traceback window
    holds: too few cells a step to pay for their packed steps, and no other
    pairs beside them, so none packs; as many as a score-only window holds,
    every one packs."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(11)
    scoring = Scoring.create("dna")
    lengths = np.sort(rng.integers(4000, 7900, 300))[::-1]
    seqs = ["".join(rng.choice(list("ACGT"), int(k))) for k in lengths]
    for traceback, (r1, c0), want in ((True, (4, 4), False), (False, (300, 0), True)):
        job = Job("semiglobal", scoring, traceback, SortedSet.encode(seqs, scoring))
        k = job.rows.lengths
        w = make_window(k, k, 0, r1, c0, 300, c0 == 0)
        n, m, packed = packed_pairs(job, w, traceback)
        assert job.scoring.fits_int16(n, m, "semiglobal").all()
        assert not job.scoring.fits_int16(n, m).all()  # v56's bound: not all
        assert packed.all() if want else not packed.any()


@pytest.mark.parametrize("reads, sms, want", [(200, 132, False), (400, 132, True),
                                              (200, 48, True)])
def test_long_reads_score_only_pack_where_they_fill_the_device(reads, sms, want):
    """Score-only, a window of reads of 5-12 kb packs its long pairs that fit
    16 bits only where they make PACK_MIN_WARPS_A_SM warps on each of the
    device's multiprocessors: 200 reads (13,000 such pairs, ~800 warps) too
    few for 132, not for 48; 400 reads enough. Those that do not pack are
    exactly the long ones that fit."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(12)
    scoring = Scoring.create("dna")
    lengths = rng.integers(5000, 12000, reads)
    seqs = ["".join(rng.choice(list("ACGT"), int(k))) for k in lengths]
    job = Job("semiglobal", scoring, False, SortedSet.encode(seqs, scoring))
    k = job.rows.lengths
    w = make_window(k, k, 0, reads, 0, reads, True)
    table = JobLengths.of(k, k)
    fits = gpu_backend.packs(job, table, w, False, multiprocessors=sms)
    r, c = window_pairs(w)
    n, m = k[r], k[c]
    packed = np.asarray(fits(n, m), bool)
    fit = job.scoring.fits_int16(n, m, "semiglobal")
    rows, group = gpu_backend._pack_shape(False, "semiglobal")
    long = -(-n // (rows * group)) * m > gpu_backend.PACK_TAIL_STEPS
    warps = (fit & long).sum() * group / 64
    assert (warps >= gpu_backend.PACK_MIN_WARPS_A_SM * sms) == want
    assert fit.sum() > 0.5 * len(fit)
    assert np.array_equal(packed, fit if want else fit & ~long)
    # the planner without a device counts an H100's
    default = np.asarray(gpu_backend.packs(job, table, w, False)(n, m), bool)
    assert np.array_equal(default, packed if sms == 132 else fit & ~long)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), longest=st.sampled_from([400, 1500, 4600]),
       count=st.integers(2, 120), traceback=st.booleans(), tail=st.sampled_from([64, 8192]))
def test_packs_is_a_subset_of_fits16_and_monotone(seed, longest, count, traceback, tail):
    """On random windows of random jobs, with the rule on (small and default
    tails): a pair packs only where its scores fit 16 bits, and once a target
    packs against a row every shorter one does (``first_fit``'s binary
    search rests on it)."""
    from pairalign.scheduler.windows import plan_windows

    rng = np.random.default_rng(seed)
    job = lengths_job(rng.integers(5, longest, count), traceback)
    k = job.rows.lengths
    lengths = JobLengths.of(k, k)
    keep = gpu_backend.PACK_TAIL_STEPS, gpu_backend.PACK_TAIL_STEPS_TRACEBACK
    gpu_backend.PACK_TAIL_STEPS = gpu_backend.PACK_TAIL_STEPS_TRACEBACK = tail
    try:
        for w in plan_windows(k, None, 16 * int(rng.integers(1, 5))):
            fits = gpu_backend.packs(job, lengths, w, traceback)
            n = np.repeat(k[w.r0:w.r1], w.c1 - w.c0)
            m = np.tile(k[w.c0:w.c1], w.r1 - w.r0)
            packed = np.asarray(fits(n, m), bool)
            assert not (packed & ~job.scoring.fits_int16(n, m, job.mode)).any()
            grid = packed.reshape(w.r1 - w.r0, w.c1 - w.c0)  # columns longest first
            assert (np.diff(grid.astype(np.int8), axis=1) >= 0).all()
    finally:
        gpu_backend.PACK_TAIL_STEPS, gpu_backend.PACK_TAIL_STEPS_TRACEBACK = keep


@pytest.mark.parametrize("mode", ["local", "global", "semiglobal"])
@pytest.mark.parametrize("traceback", [False, True])
def test_numbas_planner_plans_a_jobs_windows_as_numpy(monkeypatch, mode, traceback):
    """Once a run of enough windows has loaded it, the backend plans in
    numba, and every plan (operation slots of a score pass too) is NumPy's."""
    job, be = protein_job(mode, traceback, 3, 900, 150)
    monkeypatch.setitem(gpu_backend._PLANNER, "plan", plan_window)
    gpu_backend.GPUBackend.load_planner(gpu_backend.PLAN_IN_NUMBA_WINDOWS - 1)
    assert gpu_backend._PLANNER["plan"] is plan_window  # a short run: NumPy's
    # nothing to load for a short run, nor once loaded: the engine starts no thread
    assert gpu_backend.GPUBackend.planner_loader(gpu_backend.PLAN_IN_NUMBA_WINDOWS - 1) is None
    gpu_backend.GPUBackend.load_planner(gpu_backend.PLAN_IN_NUMBA_WINDOWS)
    assert gpu_backend._PLANNER["plan"] is plan_window_jit
    assert gpu_backend.GPUBackend.planner_loader(1 << 20) is None
    from pairalign.scheduler.windows import plan_windows
    for w in plan_windows(job.rows.lengths, None, 32):
        for tb, ops in ((traceback, None), (False, True)):
            jit = be._plan_for(job, w, tb, operations=ops)
            monkeypatch.setitem(gpu_backend._PLANNER, "plan", plan_window)
            assert same_plans(be._plan_for(job, w, tb, operations=ops), jit)
            monkeypatch.setitem(gpu_backend._PLANNER, "plan", plan_window_jit)


def test_planner_stays_numpys_where_numba_fails(monkeypatch):
    """A planner numba cannot make leaves NumPy's, once, with no error raised
    on the run's numba start thread."""
    from pairalign.kernels import layout_jit

    calls = []

    def fail():
        calls.append(1)
        raise RuntimeError("no compiler")

    monkeypatch.setattr(gpu_backend, "_PLANNER", {"plan": plan_window})
    monkeypatch.setattr(layout_jit, "load", fail)
    for _ in range(2):
        gpu_backend.GPUBackend.load_planner(1 << 20)
    assert gpu_backend._PLANNER["plan"] is plan_window and calls == [1]
    assert isinstance(gpu_backend._PLANNER["failed"], RuntimeError)


def test_planner_stays_numpys_where_switched_off(monkeypatch):
    """PLAN_IN_NUMBA off: nothing is loaded, and a loaded planner is not used."""
    job, be = protein_job("local", True, 4, 300, 40)
    w = Window(0, 40, 0, 40, True, 0, 0)
    calls = []
    monkeypatch.setitem(gpu_backend._PLANNER, "plan", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(gpu_backend, "PLAN_IN_NUMBA", False)
    gpu_backend.GPUBackend.load_planner(1 << 20)
    assert not calls and be._plan_for(job, w, True).npairs == 40 * 39 // 2 and not calls


def test_score_only_plan_with_operation_slots():
    """The bounded traceback's score pass (gpu_backend.BOUNDED_TRACEBACK): a
    score-only layout, no traceback words, with each pair's n + m operation
    slots one after the other in launch order (query couples included), the
    same pairs as the plan with traceback."""
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job("local", True, 3, 3500, 150)
    lengths = job.rows.lengths
    jl = JobLengths.of(lengths, lengths)
    couples = 0
    for w in plan_windows(lengths, None, 64):
        plan = be._plan_for(job, w, False, operations=True)
        lay = expand(plan, jl, 0, False, operations=True)
        assert plan.tb_words == 0 and plan.ops == lay["op_off"][-1]
        n, m = lengths[lay["rows"]], lengths[lay["cols"]]
        assert np.array_equal(np.diff(lay["op_off"]), n + m)
        full = expand(be._plan_for(job, w, True), jl, 0, True)
        pairs = lambda x: sorted(zip(x["rows"].tolist(), x["cols"].tolist()))  # noqa: E731
        assert pairs(lay) == pairs(full) and plan.ops == full["op_off"][-1]
        assert expand(plan, jl, 0, False)["op_off"] is None
        couples += plan.query_warps
    assert couples  # query couples among them


def test_slots_take_the_largest_window_the_device_holds(monkeypatch):
    """Every stream slot is taken at the job's largest window at once (grown
    window by window, the pool's retries waited on the device); parents too
    large for the device, whose plans fitting left behind, do not count."""
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job("global", True, 5, 900, 120)
    sizes = sorted(be.window_bytes(job, w) for w in plan_windows(job.rows.lengths, None, 32))
    assert len(set(sizes)) > 2
    monkeypatch.setattr(gpu_backend, "SLOT_WHOLE_BUDGET", 2.0)  # never the budget
    be.device_budget = lambda: sizes[-2] + 1  # the largest window was split
    assert be._job_slot_bytes(job) == sizes[-2]
    be._plans.clear()  # windows launched: the floor stays the job's
    assert be._job_slot_bytes(job) == sizes[-2]
    other, _ = protein_job("global", True, 6, 900, 10)
    assert be._job_slot_bytes(other) == 0  # no plans of its own: each window's size


def test_slots_take_the_budget_near_it():
    """A job whose largest window takes SLOT_WHOLE_BUDGET of the budget or
    more takes the whole budget a slot (the next job's slots find those
    blocks in CuPy's cache); one just below that share keeps its largest
    window's size."""
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job("global", True, 5, 900, 120)
    largest = max(be.window_bytes(job, w) for w in plan_windows(job.rows.lengths, None, 32))
    for budget, floor in ((int(largest / gpu_backend.SLOT_WHOLE_BUDGET), None),
                          (int(largest / 0.75), None),
                          (int(largest / gpu_backend.SLOT_WHOLE_BUDGET) + 8, largest)):
        be._slot_floor = (None, 0)
        be.device_budget = lambda b=budget: b
        assert be._job_slot_bytes(job) == (budget if floor is None else floor)


@pytest.mark.parametrize("mode", ["local", "global"])
@pytest.mark.parametrize("traceback", [False, True])
@pytest.mark.parametrize("seed,longest,width", [(7, 300, 32), (8, 900, 64), (9, 3500, 16)])
def test_window_bound_holds_the_window(mode, traceback, seed, longest, width):
    """The bound that fits windows without their plans is no smaller than
    the plan's size, triangle and square windows alike (most windows fit by
    it, so few are planned before the run)."""
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job(mode, traceback, seed, longest, 150)
    for w in plan_windows(job.rows.lengths, None, width):
        bound = be.window_bytes_bound(job, w)
        assert be.window_bytes(job, w) <= bound < 5 * be.window_bytes(job, w) + (1 << 20)


def test_slots_planned_from_windows_fitted_by_their_bound():
    """Windows fitted by their bound alone (no plans): the first launch plans
    the largest bounds and takes the largest window that fits."""
    from pairalign.engine import fit_window
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job("local", True, 5, 900, 120)
    windows = plan_windows(job.rows.lengths, None, 32)
    be.device_budget = lambda: 1 << 40
    for w in windows:
        assert fit_window(job, be, w, by_bound=True) == [(w, True)]
    assert not any(isinstance(p, gpu_backend.LayoutPlan) for p in be._plans.values())
    floor = be._job_slot_bytes(job)
    exact = {w: gpu_backend.window_bytes(be._plan(job, w), True) for w in windows}
    assert floor == max(exact.values())


@pytest.mark.parametrize("share", [2, 8])
def test_slots_hold_every_window_where_the_largest_are_split(share):
    """A job whose one window is over the device's budget (a ``share`` of
    it: the engine splits it by its bound, and its launches by their exact
    sizes): the stream slots are as large as the budget, so that no piece
    grows its slot (each growth waits for its stream and maps new memory;
    long reads' runs grew theirs at nearly every launch)."""
    from pairalign.engine import prepare_work, window_width
    from pairalign.scheduler.plan import DEFAULT_MAX_MEMORY
    from pairalign.scheduler.windows import plan_windows

    job, be = long_read_job(60, 5_000, 12_000, seed=1)
    (window,) = plan_windows(job.rows.lengths, None, window_width(job, be, DEFAULT_MAX_MEMORY))
    budget = be.window_bytes(job, window) // share
    be._plans = {}
    be.device_budget = lambda: budget
    work = prepare_work(job, [be])
    floor = be._job_slot_bytes(job)
    pieces = [w for ws in work.pieces for w in ws]
    assert len(pieces) >= share
    assert all(be.window_bytes(job, w) <= floor for w in pieces)
    assert floor == budget


@pytest.mark.parametrize("traceback", [True, False])
def test_windows_far_over_budget_split_by_their_bound(monkeypatch, traceback):
    """Windows whose size bound is over BOUND_SPLIT_FACTOR budgets are split
    without their exact size (no plan): the same pieces as splitting by the
    exact sizes, each within the budget by its exact size, the pairs all
    there once, with fewer plans made."""
    from pairalign import engine
    from pairalign.engine import fit_window
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job("local", traceback, 9, 1200, 300)
    windows = plan_windows(job.rows.lengths, None, 128)
    budget = max(be.window_bytes(job, w) for w in windows) // 12
    pieces, planned = {}, {}
    for factor in (float("inf"), engine.BOUND_SPLIT_FACTOR):
        monkeypatch.setattr(engine, "BOUND_SPLIT_FACTOR", factor)
        be._plans = {}
        calls = []
        exact = GPUBackend.window_bytes
        monkeypatch.setattr(GPUBackend, "window_bytes",
                            lambda self, job, w: calls.append(w) or exact(self, job, w))
        pieces[factor] = [x for w in windows
                          for x in fit_window(job, be, w, budget, by_bound=True)]
        planned[factor] = len(calls)
        monkeypatch.setattr(GPUBackend, "window_bytes", exact)
    new, old = pieces[engine.BOUND_SPLIT_FACTOR], pieces[float("inf")]
    assert new == old and len(new) > len(windows)
    assert sum(w.pairs for w, _ in new) == sum(w.pairs for w in windows)
    assert all(be.window_bytes(job, w) <= budget for w, fits in new if fits)
    assert planned[engine.BOUND_SPLIT_FACTOR] < planned[float("inf")]


def long_read_job(count: int, lo: int, hi: int, seed: int):
    """A semiglobal job with traceback of ``count`` DNA reads of ``lo`` to
    ``hi`` bp cut from one random genome, and a GPU backend made without a
    device."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(seed)
    genome = "".join(rng.choice(list("ACGT"), 40_000))
    reads = [genome[k:k + n] for k, n in zip(rng.integers(0, 40_000 - hi, count),
                                             rng.integers(lo, hi, count))]
    scoring = Scoring.create("dna")
    return (Job("semiglobal", scoring, True, SortedSet.encode(reads, scoring)),
            GPUBackend.planner())


def test_long_reads_fit_a_device_below_a_block():
    """Reads whose 16 x 16 pairs' traceback outgrows the device (here, a
    budget of 3 pairs' bytes): the default --max-memory, a host budget, lets
    the job start (it used to ask for a block's traceback on the host), and
    the block is halved below 16 x 16 down to windows that the device holds,
    each pair once, none left to the CPU."""
    from pairalign.engine import fit_window, window_width
    from pairalign.pairs import pair_bytes
    from pairalign.scheduler.plan import DEFAULT_MAX_MEMORY
    from pairalign.scheduler.windows import plan_windows

    job, be = long_read_job(12, 9_000, 20_000, seed=8)
    n = int(job.rows.lengths[0])
    assert be.task_memory(job) == pair_bytes(True, n, n) < DEFAULT_MAX_MEMORY
    width = window_width(job, be, DEFAULT_MAX_MEMORY)
    (block,) = plan_windows(job.rows.lengths, None, width)
    one = be.window_bytes(job, make_window(job.rows.lengths, job.rows.lengths, 0, 2, 0, 2, True))
    budget = 3 * one
    assert be.window_bytes(job, block) > budget
    pieces = fit_window(job, be, block, budget)
    assert all(fits for _, fits in pieces) and len(pieces) > 3
    assert all(be.window_bytes(job, w) <= budget for w, _ in pieces)
    got = sorted(p for w, _ in pieces for p in zip(*(a.tolist() for a in window_pairs(w))))
    assert got == sorted(zip(*(a.tolist() for a in window_pairs(block))))


@pytest.mark.parametrize("traceback", [True, False])
def test_windows_halved_to_fit_their_budget(monkeypatch, traceback):
    """With SPLIT_HALVES, windows fitted to a budget by their exact sizes
    (the layout's plans) are halved, not quartered: each piece within the
    budget, the pairs all there once, in fewer and fuller pieces."""
    from pairalign import engine
    from pairalign.engine import fit_window
    from pairalign.scheduler.windows import plan_windows

    job, be = protein_job("local", traceback, 9, 1200, 300)
    windows = plan_windows(job.rows.lengths, None, 128)
    budget = max(be.window_bytes(job, w) for w in windows) // 12
    pieces = {}
    for halves in (False, True):
        monkeypatch.setattr(engine, "SPLIT_HALVES", halves)
        pieces[halves] = [w for x in windows for w, fits in fit_window(job, be, x, budget)]
        assert all(be.window_bytes(job, w) <= budget for w in pieces[halves])
        assert sum(w.pairs for w in pieces[halves]) == sum(w.pairs for w in windows)
    assert len(windows) < len(pieces[True]) < len(pieces[False])
    fill = {h: np.median([be.window_bytes(job, w) for w in ws]) for h, ws in pieces.items()}
    assert fill[True] > fill[False]


class _DeviceArray:
    """A host array that looks like a CuPy one to ``_download`` (``data.ptr``)."""

    def __init__(self, a: np.ndarray) -> None:
        self.host = np.ascontiguousarray(a)
        self.shape, self.dtype, self.nbytes = a.shape, a.dtype, a.nbytes
        self.data = type("Pointer", (), {"ptr": self.host.ctypes.data})()


def fake_cupy(syncs: list | None = None):
    """The CuPy calls ``_download`` makes, on host memory: copies at once,
    and events whose waits are counted in ``syncs``."""
    import ctypes
    from types import SimpleNamespace

    class Event:
        def __init__(self, block=False, disable_timing=False):
            pass

        def record(self, stream=None):
            pass

        def synchronize(self):
            if syncs is not None:
                syncs.append(1)

    runtime = SimpleNamespace(memcpyDeviceToHost=2, memcpyHostToDevice=1,
                              memcpyAsync=lambda dst, src, n, kind, stream: ctypes.memmove(dst, src, n))
    return SimpleNamespace(ascontiguousarray=lambda a: a,
                           cuda=SimpleNamespace(runtime=runtime, Event=Event))


def downloading_backend(syncs: list | None = None, fill: int = 0) -> GPUBackend:
    """A GPUBackend made without a device whose ``_download`` runs on host
    memory (:func:`fake_cupy`), its staging buffers filled with ``fill``."""
    from types import SimpleNamespace

    be = object.__new__(GPUBackend)
    be.cp, be.timings, be._pinned, be._copiers = fake_cupy(syncs), {}, {}, None
    be._timings_lock = threading.Lock()
    be._empty_pinned = lambda n: np.full(n, fill, np.uint8)
    be._host_stream = lambda: SimpleNamespace(ptr=0)
    return be


@pytest.mark.parametrize("piece", [5, 4 << 20])
@pytest.mark.parametrize("staging", [2, 7, 64, 4099, 1 << 20])
def test_download_through_staging_pieces(monkeypatch, staging, piece):
    """Arrays of several types, empty ones among them, pass through the two
    halves of a staging buffer smaller or larger than they are, cut
    mid-element, and are copied out of it in pieces on threads or whole:
    each comes back whole, one wait for each half filled."""
    monkeypatch.setattr(gpu_backend, "STAGING_BYTES", staging)
    monkeypatch.setattr(gpu_backend, "COPY_PIECE", piece)
    syncs = []
    be = downloading_backend(syncs, fill=0xAB)
    rng = np.random.default_rng(staging)
    arrays = [rng.integers(-2**31, 2**31, 1000).astype(np.int32), np.zeros(0, np.int64),
              rng.integers(0, 255, 333).astype(np.uint8), np.arange(1001, dtype=np.int64)]
    got = be._download([_DeviceArray(a) for a in arrays])
    for a, g in zip(arrays, got):
        assert g.dtype == a.dtype and np.array_equal(g, a)
    assert len(syncs) == max(1, -(-sum(a.nbytes for a in arrays) // (staging // 2)))
    assert be._pinned[0].nbytes == staging


def test_download_into_the_callers_arrays(monkeypatch):
    """``out``: the arrays come back in the caller's own (a view of a larger
    one too); arrays of another shape, type or layout are refused."""
    monkeypatch.setattr(gpu_backend, "STAGING_BYTES", 64)
    be = downloading_backend()
    code = np.arange(300, dtype=np.uint8)
    length = np.arange(300, dtype=np.int32) * 7
    big_code, big_len = np.zeros(1000, np.uint8), np.zeros(1000, np.int32)
    out = (big_code[:300], big_len[:300])
    got = be._download([_DeviceArray(code), _DeviceArray(length)], out=out)
    assert got[0] is out[0] and got[1] is out[1]
    assert np.array_equal(big_code[:300], code) and np.array_equal(big_len[:300], length)
    assert not big_code[300:].any() and not big_len[300:].any()
    for bad in ((big_code[:299], big_len[:300]), (big_len[:300], big_code[:300]),
                (big_code[:600:2], big_len[:300])):
        with pytest.raises(ValueError, match="other shapes, types or layouts"):
            be._download([_DeviceArray(code), _DeviceArray(length)], out=bad)


@pytest.mark.parametrize("staging", [2, 7, 64, 4099, 1 << 20])
def test_upload_through_staging_halves(monkeypatch, staging):
    """Host arrays of several types, empty ones among them, go up through the
    two halves of a staging buffer smaller or larger than they are, cut
    mid-element, copied in on threads: each device array holds its host
    array, and every half's copy was waited for before it was refilled."""
    monkeypatch.setattr(gpu_backend, "STAGING_BYTES", staging)
    monkeypatch.setattr(gpu_backend, "COPY_PIECE", 5)
    syncs = []
    be = downloading_backend(syncs, fill=0xAB)
    be.cp.empty = lambda shape, dtype: _DeviceArray(np.full(shape, 0x5A, dtype))
    rng = np.random.default_rng(staging)
    arrays = [rng.integers(-2**31, 2**31, 1000).astype(np.int32), np.zeros(0, np.int64),
              rng.integers(0, 255, 333).astype(np.uint8), np.arange(1001, dtype=np.int64)[::2]]
    got = be._upload_staged(arrays, be._host_stream())
    for a, g in zip(arrays, got):
        assert g.dtype == a.dtype and g.shape == a.shape and np.array_equal(g.host, a)
    halves = -(-sum(a.nbytes for a in arrays) // (staging // 2))
    assert len(syncs) == max(0, halves - 2) + min(halves, 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=6), st.integers(1, 16))
def test_staged_pieces_fill_the_halves_in_turn(sizes, half):
    """Every byte of every array lands once, in order, in a half that
    alternates 0, 1, 0, ...; each half but the last is filled to its end
    from its start, and no half is yielded without bytes."""
    got = list(gpu_backend._staged_pieces(sizes, half))
    assert [k for k, _ in got] == [i % 2 for i in range(len(got))]
    seen = [[] for _ in sizes]
    for h, (k, pieces) in enumerate(got):
        assert pieces
        spots = [(at, n) for _, _, at, n in pieces]
        assert spots[0][0] == k * half
        for (at, n), (nxt, _) in zip(spots, spots[1:]):
            assert at + n == nxt
        end = spots[-1][0] + spots[-1][1]
        assert end <= (k + 1) * half and (h == len(got) - 1 or end == (k + 1) * half)
        for i, done, _, n in pieces:
            assert n > 0
            seen[i].append((done, n))
    for size, cuts in zip(sizes, seen):
        assert sum(n for _, n in cuts) == size
        assert all(d == sum(n for _, n in cuts[:j]) for j, (d, _) in enumerate(cuts))


def test_download_needs_a_staging_buffer_of_two_halves(monkeypatch):
    """A staging buffer of one byte has no halves: a clear error, not a hang."""
    monkeypatch.setattr(gpu_backend, "STAGING_BYTES", 1)
    be = downloading_backend()
    with pytest.raises(ValueError, match="STAGING_BYTES"):
        be._download([_DeviceArray(np.arange(3))])


def test_covered_is_the_union_of_spans():
    """The GPU-busy figure: overlapping windows count once, gaps not at all."""
    from pairalign.kernels.gpu_backend import _covered

    spans = np.array([[3.0, 4.0], [0.0, 1.0], [0.5, 2.0], [3.5, 3.7], [5.0, 5.0]])
    assert _covered(spans) == pytest.approx(3.0)
    assert _covered(np.array([[1.0, 2.5]])) == pytest.approx(1.5)


def test_plan_refuses_unsorted_lengths():
    """The plan's runs (and its 16-bit checks) need lengths longest first."""
    lengths = np.array([5, 9, 3], np.int64)
    with pytest.raises(ValueError, match="sorted longest first"):
        JobLengths.of(lengths, lengths)
    with pytest.raises(ValueError, match="sorted longest first"):
        JobLengths.of(np.sort(lengths)[::-1], lengths)


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(1, 400), min_size=2, max_size=70),
       cols=st.one_of(st.none(), st.lists(st.integers(1, 400), min_size=1, max_size=70)),
       corner=st.tuples(st.integers(0, 69), st.integers(0, 69), st.integers(1, 70),
                        st.integers(1, 70)),
       steps=st.one_of(st.none(), st.integers(1, 3000)), fit=st.integers(0, 400),
       traceback=st.booleans(), score_bytes=st.sampled_from([2, 4]),
       per_warp=st.sampled_from([1, 2, 4, 8]), stripes=st.sampled_from([1, 2]),
       query=st.sampled_from([0, 1, 8, 128]), block=st.sampled_from([1, 8]))
def test_plan_holds_for_any_window(lengths, cols, corner, steps, fit, traceback, score_bytes,
                                   per_warp, stripes, query, block):
    """Ties, lengths of 1, rows with no pairs, windows of one row or column,
    every pair wide or none: the same rules as above."""
    rows_len = np.sort(np.array(lengths, np.int64))[::-1]
    cols_len = rows_len if cols is None else np.sort(np.array(cols, np.int64))[::-1]
    r0, c0, h, wd = corner
    r0, c0 = min(r0, len(rows_len) - 1), min(c0, len(cols_len) - 1)
    w = Window(r0, min(r0 + h, len(rows_len)), c0, min(c0 + wd, len(cols_len)), cols is None,
               0, 0)
    fits16 = fits_below(fit)
    plan, lay = expanded(rows_len, cols_len, w, traceback, steps, fits16, score_bytes,
                         col_base=0 if cols is None else len(rows_len), per_warp=per_warp,
                         stripes=stripes, query=query, block=block)
    check_plan(plan, lay, rows_len, cols_len, w, traceback, steps, fits16,
               col_base=0 if cols is None else len(rows_len), per_warp=per_warp,
               stripes=stripes, query=query, block=block)


@pytest.mark.parametrize("rows", [8, 16, 32])
def test_checkpointed_modes_and_the_walks_shared_memory(monkeypatch, rows):
    """CHECKPOINT_TRACEBACK_MODES compiles to a bit a mode (none at 8 rows a
    lane, whose words from above fill the room), and walk_ckpt's blocks of
    words fit static shared memory (48 KB, the 4 KB matrix beside them) at
    every spacing of checkpoints, or the setting is refused by name."""
    from pairalign.kernels.conventions import MODES

    monkeypatch.setattr(gpu_backend, "PACK_ROWS_TRACEBACK", rows)
    for modes in [(), ("local",), ("global", "semiglobal", "local")]:
        monkeypatch.setattr(gpu_backend, "CHECKPOINT_TRACEBACK_MODES", modes)
        want = sum(1 << MODES[m] for m in modes) if rows >= 16 else 0
        assert f"CKPT={want}" in gpu_backend.module_defines()
    for columns in (16, 32, 64, 128):
        monkeypatch.setattr(gpu_backend, "CHECKPOINT_COLUMNS", columns)
        if columns * rows // 2 * 32 > 40960:  # not even a warp's blocks fit
            with pytest.raises(ValueError, match="CHECKPOINT_COLUMNS"):
                gpu_backend._walk_checkpoint_threads()
            continue
        threads = gpu_backend._walk_checkpoint_threads()
        assert threads >= 32 and threads & (threads - 1) == 0
        assert threads * columns * (rows // 8) * 4 + 32 * 32 * 4 <= 48 * 1024


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_checkpoint_step_chunk_is_checked(monkeypatch, chunk, lanes):
    """CHECKPOINT_STEP_CHUNK compiles to CKPT_CHUNK where it is a store of 4,
    8 or 16 bytes within a group's lanes, and is refused by name otherwise
    (instead of a static assert failing in NVRTC)."""
    monkeypatch.setattr(gpu_backend, "CHECKPOINT_STEP_CHUNK", chunk)
    monkeypatch.setattr(gpu_backend, "PACK_GROUP_TRACEBACK", lanes)
    if chunk in (1, 2, 4) and chunk <= lanes:
        assert f"CKPT_CHUNK={chunk}" in gpu_backend.module_defines()
    else:
        with pytest.raises(ValueError, match="CHECKPOINT_STEP_CHUNK"):
            gpu_backend.module_defines()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 3000), m=st.integers(1, 3000), lanes=st.sampled_from([4, 8, 16, 32]),
       rows=st.sampled_from([16, 32]), columns=st.sampled_from([16, 32, 64]),
       chunk=st.sampled_from([1, 2, 4]))
def test_checkpoints_fit_the_room_of_the_bits(n, m, lanes, rows, columns, chunk):
    """A checkpointed pair's words (align.cu, CKPT) in each band of the room
    the plan gives its bits (band_words): a word a lane and step, the steps
    rounded up to whole chunks (CKPT_CHUNK), then a checkpoint of each lane's
    rows every `columns` columns; a short last band of 8-row stripes the same
    in a whole band's room."""
    from pairalign.kernels.gpu_layout import band_words

    stripes = rows // 8
    room = band_words(n, m, 1, lanes, stripes)
    bands = room // (lanes * stripes * (m + lanes - 1))
    per_band = room // bands
    for r in {rows, 8}:  # full bands, and a short last band at 8 rows a lane
        steps = -(-(m + lanes - 1) // chunk) * chunk
        used = steps * lanes + (m // columns) * lanes * r
        assert used <= per_band


@pytest.mark.parametrize("longest, widths", [(300, {np.int16}), (6000, {np.int16, np.int32})])
def test_modules_compiled_ahead_are_those_of_the_jobs_mode_and_widths(monkeypatch, longest,
                                                                      widths):
    """``prepare`` starts compiling the job's mode's kernels for the score
    widths of its shortest and its longest pairs, each once, and ``_module``
    takes what was compiled ahead instead of compiling again."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    scoring = Scoring.create("protein")
    seqs = ["ACDEFGHIKL" * 2, "W" * longest]
    job = Job("semiglobal", scoring, False, SortedSet.encode(seqs, scoring))
    be = GPUBackend.planner()
    be._modules, be._compiling = {}, {}
    compiled = []

    def compile_(self, key):
        compiled.append(key)
        return ("module", key)

    monkeypatch.setattr(GPUBackend, "_compile", compile_)
    be._compile_ahead(job)
    be._compile_ahead(job)  # under way already: not started again
    for ahead in list(be._compiling.values()):
        ahead.result(timeout=10)
    assert sorted(k[0] for k in compiled) == sorted(np.dtype(w) for w in widths)
    assert {k[1] for k in compiled} == {job.mode_code}
    for key in compiled:
        assert be._module(key[0], job.mode_code) == ("module", key)
    be._compile_ahead(job)  # compiled: nothing started
    assert len(compiled) == len(widths) and not be._compiling


@pytest.mark.parametrize("host_arena", [True, False])
def test_a_slot_grows_only_past_its_block_and_each_growth_is_counted(monkeypatch, host_arena):
    """A stream slot's block is replaced only by a larger one, each growth
    counted (``slot_grown``; a worker whose slots are reserved at the job's
    start has none), and, from the host stream's arena, only once its stream
    has finished with the old block."""
    from types import SimpleNamespace

    monkeypatch.setattr(gpu_backend, "SLOTS_IN_HOST_ARENA", host_arena)
    be = GPUBackend.planner()
    be._slots, be.timings, be._timings_lock = {}, {}, threading.Lock()
    taken, synced = [], []
    monkeypatch.setattr(GPUBackend, "_slot_block",
                        lambda self, n, stream: taken.append(n) or np.empty(n, np.uint8))
    stream = SimpleNamespace(ptr=7, synchronize=lambda: synced.append(len(taken)))
    for n in (100, 50, 100, 300, 200, 301):
        assert be._slot(stream, n).nbytes >= n
    assert taken == [100, 300, 301]
    assert be.timings["slot_grown"] == 2
    assert synced == ([1, 2] if host_arena else [])


@pytest.mark.parametrize("reads, span, traceback, rows, want", [
    (12, (15_000, 25_000), True, 4, 16), (12, (15_000, 25_000), False, 12, 16),
    (40, (15_000, 25_000), True, 40, 8), (40, (1_500, 4_000), False, 40, 2)])
def test_a_plans_wide_warps_see_its_unpacked_pairs(reads, span, traceback, rows, want):
    """The warps a window's wide pairs take (plan_wide_warps) are
    wide_warps of the window's pairs that neither pack nor run on one thread,
    counted from the window's pairs apart from the plan: up to 16 warps for
    a few pairs of 15-25 kb (the blocks within the device's 132
    multiprocessors), 8 for more of them, 2 for reads of 1.5-4 kb (their
    shortest query's bands)."""
    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(5)
    scoring = Scoring.create("dna")
    seqs = ["".join(rng.choice(list("ACGT"), int(k))) for k in rng.integers(*span, reads)]
    job = Job("semiglobal", scoring, traceback, SortedSet.encode(seqs, scoring))
    k = job.rows.lengths
    w = make_window(k, k, 0, rows, 0, reads, True)
    plan = GPUBackend.planner()._plan_for(job, w, traceback)
    n, m, packed = packed_pairs(job, w, traceback)
    limit = gpu_backend.WIDE_STEPS if traceback else gpu_backend.WIDE_STEPS_SCORE_ONLY
    unpacked = (-(-n // 8) * m >= limit) & ~packed
    assert unpacked.sum() == plan.nwide - plan.npack > 0
    got = gpu_backend.plan_wide_warps(plan, JobLengths.of(k, k))
    assert got == gpu_backend.wide_warps(int(unpacked.sum()), n[unpacked], m[unpacked]) == want
