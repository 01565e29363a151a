"""Run windows of pairs through the CUDA kernels (``align.cu``) with CuPy."""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..job import Job
from ..pairs import (DeviceOps, DevicePairBatch, PairBatch, _offsets, constant_column,
                     pair_bytes)
from ..scheduler.devices import is_out_of_memory
from ..scheduler.windows import BLOCK, Window, first_columns
from .conventions import MODES
from .gpu_layout import (COL, COUNT, KIND, ROW, STRIPE, WIDE, JobLengths, LayoutPlan,
                         band_words, first_fit, plan_window, stride2_prefix)

THREADS = 256
#: Windows in flight at once, each on its own stream (and its share of memory).
#: Two overlap the tail of one window with the next; more run their kernels
#: side by side, which took the GPU longer (proteome with traceback on the
#: H100, two runs: GPU busy 0.40-0.42 s at 2, 0.53 s at 3, 0.45-0.48 s at 4;
#: wall time within noise), and each holds its slot of memory.
DEPTH = 2
#: A slot takes its next window when its own window ends, whichever of the
#: windows in flight that is (results still come out in order); False: the
#: oldest window's slot, after that window ends (before v20). A window with
#: the job's longest pairs runs long after the one beside it, whose slot
#: idled until then: 1e12 cells with traceback on the H100, one run a process,
#: the GPU's span local 0.71-0.79 s against 0.76-0.86 s, global 0.86-0.89 s
#: against 0.92 s (benchmarks/NOTES.md, v20).
FIRST_DONE_FIRST = True
#: How long the host sleeps between looks at the windows in flight.
POLL_SECONDS = 100e-6
#: Pairs of at least this many column steps (8 rows each) on one thread are
#: "wide": one warp each. With all but the smallest pairs on warps, no launch
#: waits on its longest pairs, and the warp path is the faster per cell
#: (proteome all-vs-all in process on the H100: 2.36 to 1.13 s with traceback,
#: 0.79 to 0.41 s without; benchmarks/NOTES.md, v6). None: none wide. 2,048
#: until v35; at 512 (wide_sweep.py, 1e13 cells local on the H100) the fill
#: took 5.59 s against 6.02 with traceback and 2.60 against 2.76 without:
#: the narrow pairs ran at 200-1,000 GCUPS against the packed warps' ~4,300.
WIDE_STEPS: int | None = 1 << 9
#: The same for score-only runs.
WIDE_STEPS_SCORE_ONLY: int | None = 1 << 9
#: A wide pair (the unpacked warp kernel) takes several warps where they
#: help, each filling every so many of its bands (256 rows) a wavefront
#: behind the band above (the kernel's BandChain): as many as leave each warp
#: WIDE_BANDS_A_WARP bands of the launch's shortest wide query and
#: WIDE_LAG_COLUMNS columns of its shortest target (a band trails the one
#: above by 96-128 columns, so on short targets the warps mostly wait), up to
#: 8, the warps of one block. One warp a pair ran long reads with traceback
#: one warp a multiprocessor (their ~0.5 byte a cell on the device holds a
#: window to ~126 pairs of 20 kb). H100, semiglobal, 1, 2, 4 and 8 warps a
#: pair (NOTES.md, v60): 64 reads of 15-25 kb with traceback 5.53, 2.87,
#: 1.51, 1.19 s, score-only (2,016 pairs, one launch) 0.83, 0.71, 0.57, 0.54
#: s; 200 of 5-12 kb with traceback 2.99, 2.26, 1.80, 1.74 s. The proteome
#: score-only, whose 272 unpacked pairs of its 4,560-residue protein against
#: targets of at most 283 took 8 warps by their bands alone: GPU busy 0.083
#: against 0.074 s. A launch whose wide pairs, a warp each, make
#: WIDE_FULL_A_SM warps a multiprocessor (three blocks of 8) already fills the
#: device: one warp a pair (the 1e13-cell proteins' 19,456 pairs of 3,485 x
#: ~300 residues a window would take 2 and wait at their bands' starts).
WIDE_BANDS_A_WARP = 2
WIDE_LAG_COLUMNS = 128
WIDE_FULL_A_SM = 24
#: Past 8, a pair takes whole blocks of 8 warps (16 to WIDE_WARPS_MAX), their
#: band counts in global memory, published every 128 steps (a device-scope
#: fence each), so a band trails the one above by up to WIDE_LAG_COLUMNS_BLOCKS
#: columns; only where the launch's blocks stay within one a multiprocessor,
#: so that all of them are on the device at once (a pair's first warp waits
#: on its last). Sequences of 100 kb and more, a few pairs a window: 4 reads
#: of 150-200 kb on an H100 (6 pairs, 64 warps each) with traceback 1.92 s
#: against 12.35 s at 8 warps, score-only 0.77 s against 5.05 s (NOTES.md,
#: v60).
WIDE_WARPS_MAX = 64
WIDE_LAG_COLUMNS_BLOCKS = 256
#: None: that rule (wide_warps); an int forces it (tests).
WIDE_WARPS: int | None = None
#: Score-only pairs on warps whose scores fit 16 bits run two at a time (one
#: query, two targets) in the 16-bit halves of each register (``fill2``).
PACKED = True
#: The same with traceback.
PACKED_TRACEBACK = True
#: A packed pair runs on a group of 4 lanes (8 with traceback) at ~3x an
#: unpacked pair's rate, but its critical path, a step of 32 (16) rows at a
#: time, is ~8x an unpacked warp's (32 lanes of 8 rows). Its packed steps
#: (bands of a group's rows, times the target's length) past this many, a
#: few such pairs make a window's tail: the proteome's 124 pairs of 4,560 x
#: 950-1,452 residues that take 16 bits since v56 took its score-only GPU
#: time from 74 to 86-92 ms (H100, one process; NOTES.md, v56). So they pack
#: only in windows where they hold, besides, at least
#: PACK_TAIL_CELLS_A_STEP cells for each step of the longest of them: the
#: time packing saves on them (~0.5 ps a cell: 1,400 against 4,500 GCUPS)
#: then passes the tail it may add (~230 ns a step of a lone warp): 71-73
#: ms. None: every pair that fits 16 bits packs.
PACK_TAIL_STEPS: int | None = 8192
PACK_TAIL_CELLS_A_STEP = 470_000
#: Score-only, those pairs pack only where they make, besides, at least this
#: many packed warps a multiprocessor (a couple of them a group of lanes, a
#: warp 32 // group couples): a packed step is a chain of 32 rows, and with
#: fewer warps than ~3 a scheduler the device waits on it. Reads of 4-7.9 kb
#: and 5-12 kb, score-only, each window one launch (H100, GPU ms, every
#: fitting pair packed against none): 1,238 packed warps (9.4 a SM) 504
#: against 448, 824 (6.2) 1,070 against 908; 1,901 (14.4) 1,792 against
#: 1,983, 2,794 (21) 721 against 984 (NOTES.md, v59).
PACK_MIN_WARPS_A_SM = 12
#: The multiprocessors a plan made without a device (:meth:`GPUBackend.planner`)
#: counts: an H100's and an H200's.
PLAN_MULTIPROCESSORS = 132
#: The same with traceback, where the unpacked kernels are the slower: the
#: proteome's GPU time with traceback, 117-124 ms with every fitting pair
#: packed, was 131-139 ms with its pairs of 4,560 x 950-1,452 unpacked. So
#: with traceback, long pairs that hold less than PACK_TAIL_SHARE_TRACEBACK
#: of their window's cells pack whatever their count: the window's other
#: pairs run beside them. Where they are most of it, as reads of 4-7.9 kb
#: whose traceback holds a window to ~1,200 pairs (~150 packed warps), they
#: pack only past PACK_TAIL_CELLS_A_STEP_TRACEBACK cells a step: every one
#: packed, their windows took 3.63 s against 2.16 s unpacked (H100, v57).
PACK_TAIL_STEPS_TRACEBACK: int | None = 8192
PACK_TAIL_CELLS_A_STEP_TRACEBACK = 470_000
PACK_TAIL_SHARE_TRACEBACK = 0.5
#: Windows pack, besides, two queries (rows 2k and 2k + 1 of a window) against
#: each target both pack (query couples, the packed kernel's first warps):
#: both halves take one target residue a column, so each row's two scores are
#: one word of a joint profile, without the merge of a couple of targets (a
#: PRMT a row of every step). In the modes of QUERY_COUPLE_MODES (score-only)
#: and QUERY_COUPLE_MODES_TRACEBACK, where the joint profile fits two blocks a SM
#: (QUERY_PROFILE_BYTES), for two queries that take as many bands (a couple
#: runs the longer one's). H100, in process, with and without (NOTES.md, v13):
#: 1e13 cells score-only local 3.35 / 3.59 s, global 2.96 / 3.28 s; the
#: proteome score-only local 0.135 / 0.169 s; 1e12 cells with traceback local
#: 1.14 / 1.18 s, global's fill 0.72 s both (not taken). Semiglobal
#: score-only pads each query of a couple on top by its own amount (so that
#: its last row ends a stripe); with traceback the kernel has no semiglobal
#: query couples. Global with traceback, at 1e13 cells (v32): fill 5.974 s
#: with query couples against 5.867 without (not taken).
QUERY_COUPLES = True
QUERY_COUPLE_MODES: tuple[str, ...] = ("local", "global", "semiglobal")
QUERY_COUPLE_MODES_TRACEBACK: tuple[str, ...] = ("local",)
#: Largest joint profile a block (8 warps) of query couples: two blocks a SM on Hopper.
QUERY_PROFILE_BYTES = 112 << 10
#: Score-only, the warps of a block of the packed kernel take query couples of
#: one row couple (each row couple's warps padded to whole blocks by empty
#: ones: gpu_layout's ``query_block``) and share one profile, which the whole
#: block builds a band at a time, instead of a profile a warp: 8x fewer
#: builds, and the block's shared memory 98 KB to 25 KB (the target couples'
#: warps), which leaves the L1 the rest of the SM's 256 KB. At 1e13 cells on
#: the H100, GPU busy: local 2.585 to 2.554 s, global 2.287 to 2.270,
#: semiglobal 2.648 to 2.484 (benchmarks/NOTES.md, v29).
BLOCK_QUERY_PROFILE = True
#: The same for the packed traceback kernel's query couples (blocks of 4 warps,
#: local only). Local with traceback at 1e13 cells on the H100, GPU busy
#: 6.081 to 5.936 s, end to end 1,351 to 1,391 GCUPS (benchmarks/NOTES.md, v29).
BLOCK_QUERY_PROFILE_TRACEBACK = True
#: Score-only packed pairs, per mode: query rows a lane (8, 16 or 32) and lanes
#: a group (4, 8, 16 or 32), a couple (one query, two targets) a group, the
#: groups of a warp of one query. 32 x 4 shares a step's bookkeeping among
#: twice the rows of 16 x 8 in bands of the same height (1e12 cells on the
#: H100, GPU busy: local 0.391 to 0.356 s, global 0.343 to 0.318 s;
#: benchmarks/NOTES.md, v11).
PACK_SHAPES: dict[str, tuple[int, int]] = {"global": (32, 4), "semiglobal": (32, 4),
                                           "local": (32, 4)}
#: With traceback: rows a lane (8 or 16: a word a column a stripe of 8) and
#: lanes a group. 16 rows share a step's bookkeeping among twice the rows, in
#: bands of 128 (proteome on the H100, fill summed over windows: local 0.249
#: to 0.231 s, global 0.240 to 0.204 s, semiglobal 0.252 to 0.233 s;
#: benchmarks/NOTES.md, v12).
PACK_ROWS_TRACEBACK = 16
PACK_GROUP_TRACEBACK = 8
#: Threads a block of the packed kernel, score-only and with traceback (a
#: multiple of 32). With traceback, blocks of 128 (four a SM) instead of 256
#: (two), the same registers: a block's place on its SM waits for its slowest
#: warp, so smaller blocks leave less of it idle (1e12 cells on the H100, GPU
#: busy: global 0.80 to 0.75 s, semiglobal 0.77 to 0.70-0.72 s, local
#: unchanged at 0.65-0.66 s; 32 rows a lane in groups of 4 at 128, three
#: blocks a SM, ran as 16 rows does; benchmarks/NOTES.md, v19). Score-only,
#: 128 and 64 ran as 256 (1e13 cells, every mode).
PACK_THREADS = 256
PACK_THREADS_TRACEBACK = 128
#: Rows of a packed traceback stripe (bit r: row r of 16) whose bit planes
#: are added by an IMAD (FMA pipe) instead of a LOP3 (ALU pipe): bits 0-1
#: (P) and bits 2-3 (Q) of each cell (``align.cu``, ``in_plane``). All of
#: P's and half of Q's: the local step's ALU-pipe instructions 231 to 209
#: and FMA-pipe 153 to 173 (SASS). H100, 1e13 cells local, one process,
#: best of 2 and 3: fill 5.574 against 5.665 s and 5.593 against 5.636 s;
#: every row of both, 5.687 (benchmarks/NOTES.md, v37).
TRACEBACK_IMAD_ROWS_P = 0xFFFF
TRACEBACK_IMAD_ROWS_Q = 0x5555
#: Semiglobal with traceback, the packed pairs' queries padded on top to
#: whole stripes, as score-only, so that the last row's H is the stripe's
#: last (``align.cu``, ``TB_TOP_PAD``): without it the lane that holds row n
#: takes its H out of the stripe every column of the query's last band. The
#: step loop 648 to 564 instructions (SASS); H100, one process, best of 3:
#: fill at 1e12 cells 0.689 to 0.656 s, the proteome's 0.198 to 0.190 s
#: (benchmarks/NOTES.md, v37).
SEMIGLOBAL_TRACEBACK_TOP_PAD = True
#: A window's slot takes the next window once its results are copied out of
#: it on the device, before the host downloads them (``run_windows``);
#: False: after the download, as before v12.
EARLY_SLOT_REUSE = True
#: Results come back through a pinned staging buffer (asynchronous copies, one
#: wait each time it fills) instead of one synchronous copy per array (proteome
#: with traceback on the H100: downloads 0.29-0.33 to 0.26-0.27 s, wall within noise).
PINNED_DOWNLOADS = True
#: A detached window's results are downloaded (``_fetch``) on a thread of the
#: backend's own, on a stream of their own, so that the launching thread
#: notices the other slot's end and queues its next window meanwhile; False:
#: on the launching thread, between a launch and the next wait. Off: at 1e13
#: cells on the H100 it changed nothing (local with traceback 6.216 against
#: 6.221 s, score-only 2.320 against 2.294 s): the gaps between windows were
#: the detach's (benchmarks/NOTES.md, v36). With DEVICE_OP_OFFSETS, on an
#: H200 at 1e13 cells local with traceback, slower: 5.461 and 5.395 s against
#: 5.273 s, its downloads taking 1.87-2.24 s against 0.83 s (v37).
FETCH_THREAD = False
#: With FETCH_THREAD, the most detached windows whose downloads have not ended
#: (their results wait in device memory meanwhile); the launching thread
#: waits for the oldest before it detaches one more.
FETCH_AHEAD = 2
#: With traceback, a detached window's operation offsets (the prefix sums of
#: its pairs' operation counts) are summed on the device and downloaded with
#: its results: only their total comes to the host before the compaction is
#: queued. False: the counts downloaded, summed on the host and the offsets
#: uploaded, while the GPU waits where the other slot's window has ended too
#: (window_gaps.py, 1e13 cells local on the H100: 340 of the 417 ms of gaps
#: between windows, most of them among the last, smallest windows).
DEVICE_OP_OFFSETS = True
#: Bytes of the pinned buffer that downloads pass through, half by half (see
#: GPUBackend._staging and _download; at least 2).
STAGING_BYTES = 64 << 20
#: Threads that copy downloads out of the staging buffer, in pieces of
#: COPY_PIECE bytes. The copy is a first touch of new memory (page faults as
#: much as the copy; both GIL-free in NumPy), which on one thread held global
#: runs with traceback back (0.28 s of a 0.70 s run, 2e11 cells on the H100).
COPY_THREADS = 8
COPY_PIECE = 4 << 20
#: Time the copy-out's pieces on their own threads as well: the threads' CPU
#: seconds (``copy_cpu``), their pieces' wall seconds (``copy_wall``) and
#: minor page faults (``copy_faults``) in the backend's timings. Off: two
#: ``getrusage`` calls a piece (a benchmark's switch, see scaling.py).
COPY_RUSAGE = False
#: With traceback, a run that asks (``keep_ops_on_device``: the engine's
#: placement in input order) leaves each window's compacted operations on the
#: device, and they are placed there and downloaded once at the end
#: (``place_ops``), instead of each window's downloaded and all scattered on
#: the host after the last. A window's operations stay while all kept fit
#: DEVICE_OPS_SHARE of the memory free at the run's start (None: no cap) and
#: the device keeps DEVICE_OPS_RESERVE of its memory free after them. Global
#: runs with traceback make ~34 operations a pair (15.6 GB at 1e13 cells):
#: at 1e13 cells on the H100, a share of 0.25 ran 7% faster end to end than
#: 0.1 (8.98 against 9.62 s), its windows' operations downloaded and
#: scattered on the host the less. Without the cap (the slots take their
#: share first, the operations what they leave down to the reserve) that
#: run once did not end in 330 s (v26); now it takes 9.49 s: the cap stays
#: as a guard (NOTES.md, v26, v33).
DEVICE_PLACEMENT = True
#: Where every pair's operations were kept on the device, the offsets that
#: place them are summed there from the windows' counts (``counts_at_ranks``
#: and a cumsum) instead of uploaded after the host has summed them: the
#: placement and its download start at once and run beside the host's pass
#: over the counts (Placement.finish). The host's offsets still make the
#: batch's; the two totals are checked equal.
PLACE_OFFSETS_ON_DEVICE = True
DEVICE_OPS_SHARE: float | None = 0.25
DEVICE_OPS_RESERVE = 0.05
#: Score-only windows come to the host with their pairs sorted by rank in
#: input order (``pair_ranks`` and an argsort on the device, the columns
#: gathered in that order), so that a consumer that puts them in input order
#: stores them in rising order instead of all over its arrays. On a CPU of
#: two cores (40.5 M pairs in windows of 1,024, benchmarks/placement.py's
#: batches, the columns' pages touched beforehand) placing sorted batches
#: took 0.31-0.32 s as columns against 0.43 s unsorted and 0.37 s staged as
#: rows (plus 0.08-0.10 s to make the rows columns); with fresh arrays that
#: machine's times varied 4x from run to run (``placement.py --sorted``).
#: Off: on four H200s at 3e13 cells (``benchmarks/scaling.py --consumer
#: place,place-sorted,place-sorted-columns``) the argsort cost one GPU
#: 0.05-0.3 s, and four GPUs ran within the spread of the staged default
#: (sorted as columns 1.86-1.93 s against 1.90-1.99 s; NOTES.md, v36).
SORT_BY_RANK = False
#: Local alignments with traceback from a score pass and a traceback of each
#: pair's box alone (``align.cu``, "Bounded local traceback"): the score-only
#: kernels give each pair's score and end cell; ``bound_starts`` runs the DP
#: backwards from the end cell over the cells where an alignment of that score
#: can still pass (a band along it) and finds the least row and column where
#: one starts; ``fill_box`` and ``walk_box`` fill and walk that box only. The
#: same alignments as the full traceback (the proof is in ``align.cu``; the
#: CPU model in benchmarks/NOTES.md, v21): on the sampled proteins the reverse
#: pass and the boxes are 3-4% of the cells each, against the full fill with
#: traceback at about twice the score-only fill's time a cell. Off: on the
#: H100 it only draws level at 1e12 cells (0.77 s against 0.74 s, local, in
#: one process) and loses on the proteome (0.26 s against 0.21 s); its
#: reverse pass and box fill run at 200-300 GCUPS, one pair a thread, against
#: the packed kernels' 1,300-3,700 (NOTES.md, v21). At 1e13 cells, four
#: in-process A/Bs from level to 6% faster (v22-v23): still off.
BOUNDED_TRACEBACK = False
#: A job's windows go back to the full traceback once its bounded ones have
#: spent, in the reverse pass and the boxes together, more than this share of
#: their cells (sets of homologs: adenovirus fibers take ~1.4 times the cells).
BOUNDED_MAX_SHARE = 0.25
#: A pair's reverse pass that takes more than this many cells (a band as long
#: as a pair of homologs, on one thread) stops, and the pair's box is its whole
#: prefix (filled by a warp where it is wide). On the sampled proteins 0.26% of
#: the pairs (4.6% of the reverse pass's cells); uncapped, one such pair of
#: 1.4 M cells held its window's pass for tens of milliseconds.
BOUND_CELLS = 1 << 15
#: Reversed rows a stripe of the reverse pass holds in registers (8 or 16).
BOUND_ROWS = 16
#: Column steps (8 rows each) from which a box is filled by a warp, not a
#: thread (none where WIDE_STEPS is None). It was 1 << 13 until v23, which a
#: cap at WIDE_STEPS made 1 << 11 all the same: v21's A/B of 2 K, 8 K and 32 K
#: steps ran one setting three times (NOTES.md, v23). The cap went when
#: WIDE_STEPS fell to 512 (v35): on warps, boxes of 512-2,047 steps took more
#: words than their window had room for on two-letter sequences
#: (``bounded_overflow``: the window ran again with the full traceback).
BOX_WIDE_STEPS: int | None = 1 << 11
#: Pairs a lane of the reverse pass takes on average (lanes take the next pair
#: as they finish one: fewer lanes than pairs, so that a lane with a short
#: pass takes another while its neighbours finish theirs).
BOUND_PAIRS_PER_LANE = 4
#: The bounded traceback's passes after a window's score pass (the reverse
#: pass, the boxes' layout and fill) on a stream of the highest priority
#: beside the window's own: they run few blocks, one pair a thread, which at
#: the window stream's priority could wait behind every block of the other
#: window's score pass (the work distributor serves kernels of equal
#: priority in launch order). A few %: at 1e13 cells on the H100 the GPU's
#: time with these passes and no score pass running went 2.35 to 2.15 s (of
#: a 5.5 s span), the run 6.73 to 6.58 s (NOTES.md, v24).
BOUNDED_PRIORITY = True
#: Extra preprocessor definitions for ``align.cu`` (in-process A/B of kernel
#: variants: benchmarks/kernel_ab.py).
DEFINES: tuple[str, ...] = ()
#: Another kernel source in place of ``align.cu`` (in-process A/B of two
#: versions of the file: benchmarks/kernel_ab.py's ``SOURCE=path``).
SOURCE: str | None = None
#: Widest window: 1M pairs. Windows of one job overlap each other's downloads
#: and decoding (DEPTH in flight); with wider ones a job of a few thousand
#: sequences is one window and the host waits alone at its end (1e12 cells,
#: H100, in process: 0.78 s at 4,096, 0.70 s at 2,048, 0.58 s at 1,024 and 512).
MAX_WIDTH = 1024
#: Widest window where several GPUs share a job whose windows of this width
#: are at least SEVERAL_MIN_WINDOWS a worker: each window costs the host the
#: same to launch, collect and place, and with four GPUs in one process that
#: work, not the GPUs, bounded the run (4 H200s, score-only local, 1e13
#: cells: 0.64-0.69 s at 2,048 against 0.71-0.74 at 1,024; 3e13 cells: 1.81
#: against 2.03 s, 3.80x one GPU against 3.40x; two GPUs and one GPU level;
#: a job of 2,128 proteins on one GPU 0.13 s at 2,048 against 0.10: NOTES.md,
#: v33).
MAX_WIDTH_SEVERAL = 2048
SEVERAL_MIN_WINDOWS = 4
#: The same with traceback: windows of 2,048 did not fit the device's budget
#: (the bits, or the checkpoints and walks), the engine split them at launch
#: or after out-of-memory failures, and two GPUs ran slower than one (two
#: H200s, local at 1e13 cells, placed: 5.63 s then 3.88 s, 6-10 failures,
#: 28 windows planned and 223 run, against 4.99 s on one GPU; NOTES.md, v50).
MAX_WIDTH_SEVERAL_TRACEBACK = MAX_WIDTH
#: With traceback, the packed kernel's groups walk their own pairs once their
#: fill is done, and the walk kernel takes the other pairs alone (align.cu,
#: FUSED_WALK): the walk kernel's blocks, beside the next window's fill, kept
#: it to one block a SM where they ran (two of fill2's hold the registers).
#: At 1e13 cells on the H100, one process, best of two, results equal: local
#: 5.764 to 5.418 s (GPU span 5.458 to 5.122 s), semiglobal 6.264 to 6.159 s,
#: global level (8.522 against 8.537 s: its walks are long, and cost as much
#: in the fill's blocks). benchmarks/NOTES.md, v39.
FUSED_WALK = True
#: The modes whose packed traceback fill is checkpointed: it makes no
#: traceback bits and keeps, in their room, what each lane took in from above
#: and, every CHECKPOINT_COLUMNS columns, its stripe's H and E; the walk
#: (``walk_ckpt``, lanes taking pairs as they go) fills again the few blocks
#: of one stripe and CHECKPOINT_COLUMNS columns that a path goes through,
#: with the fill's own step (align.cu, CKPT). The alignments are the same,
#: bit for bit: the same step on the same values. What the bits' fill costs
#: is its stores, not its bits (H100, 1e12 cells: local 0.516 s of GPU with
#: the words stored, 0.323 s made and not stored). H100, 1e13 cells local,
#: one process, best of two, results equal: 5.532 to 5.254 s (GPU busy
#: 5.129 to 4.771 s); at 1e12 global its walks (long paths) cost more than
#: it saves (0.653 against 0.723 s). On for local since the GPU tests passed
#: with it (v41: H100, best of three, 5.390 to 5.147 s end to end), and for
#: semiglobal, whose walks are nearly as short (66 steps a pair against
#: local's 45, checkpoint_model.py; H100 at 1e13 cells, best of two, 6.324
#: to 5.869 s end to end, GPU busy 5.869 to 5.312 s, results equal).
CHECKPOINT_TRACEBACK_MODES: tuple[str, ...] = ("local", "semiglobal")
#: Columns between a checkpointed fill's checkpoints: 16 at least (the
#: checkpoints of 16 rows a lane then fill the room the bits had); 32 stores
#: a quarter less than 16 (1e12 cells local, GPU busy 0.520 against 0.543 s)
#: and 64 ran level with 32.
CHECKPOINT_COLUMNS = 32
#: Steps of a lane's words from above (checkpointed fill) stored together,
#: side by side: 1, 2 or 4 (one store of 4, 8 or 16 bytes). The fill's stores
#: cost more by their count than by their bytes (1e12 cells local, GPU busy
#: with the walks skipped: 0.453 s with a store a step, 0.370 with nearly
#: none, 0.385 with a quarter of them). H100, 1e13 cells local, one process,
#: best of two, results equal: 5.103 s end to end with 1, 4.709 with 2, 4.561
#: with 4 (GPU busy 4.733, 4.377, 4.232 s). benchmarks/NOTES.md, v41.
CHECKPOINT_STEP_CHUNK = 4
#: Threads a block of the checkpointed walk (``walk_ckpt``): each holds the
#: words of its block of CHECKPOINT_COLUMNS columns in shared memory.
WALK_CHECKPOINT_THREADS = 128
#: Windows fitted by their bound that a job's first launch plans, largest
#: bound first, to size the stream slots (see GPUBackend._job_slot_bytes).
SLOT_PLANS = 4
#: A large job's stream slots take their device memory on a thread from the
#: job's start (GPUBackend.reserve), while the host plans its windows: the
#: first launch had waited for it, and where CuPy's pool held an earlier
#: job's blocks, for their release too (``cudaFree`` waits for the device):
#: 0.27 s of the first run of 1e13 cells with traceback after other sizes.
RESERVE_SLOTS = True
#: ... for a job whose windows, by their bound, need at least this many
#: slots' budgets: each slot then takes the whole budget (1e12 cells: the
#: largest window 0.94 of it, 1e13: 0.997), and a smaller job keeps slots of
#: its largest window's size (the proteome's 0.91, at 2.9 budgets a slot).
RESERVE_LEAST_SLOTS = 8
#: A job whose largest window takes at least this share of the device budget
#: takes the whole budget a slot (the proteome's 0.91 on the H100): CuPy's
#: pool caches the slots' blocks at the job's end, and the next job's slots
#: of the budget find them there. A slot of 0.91 budgets did not hold the
#: next one, whose first window waited for the pool to release every cached
#: block (``cudaFree``): 0.23 s of a 1e13-cell run after the proteome's.
SLOT_WHOLE_BUDGET = 0.5
#: The stream slots' blocks come from the host stream's arena of CuPy's pool
#: (which keeps freed blocks per stream), where a job's placement on the
#: device takes its arrays after the windows: the slots' blocks, cached by
#: then, serve it, and the next job's slots find them again. In the slot
#: streams' arenas the placement found no room (global with traceback: 15.6
#: GB of operations), so CuPy released every cached block (``cudaFree``),
#: the slots' too, and the next job's slots waited for that again: 0.18-0.24
#: s of each job's first launch after another job's.
SLOTS_IN_HOST_ARENA = True
#: A budget at most this share above the largest slot block taken is taken
#: at that block's size: between jobs the device's free memory moves by a few
#: hundred MB (CUDA's own memory, arrays in use), and a budget a byte larger
#: than the cached blocks would find none of them.
SLOT_BUDGET_SLACK = 0.02
#: Windows are planned in numba (``layout_jit.plan_window_jit``: the same
#: plans, the GIL released) once a run of at least PLAN_IN_NUMBA_WINDOWS
#: windows has loaded it on its numba start thread
#: (:meth:`GPUBackend.load_planner`); until then, and without it, in NumPy.
#: Four GPUs with traceback are bound by their threads' GIL-held Python a
#: window, a third of it planning (NOTES.md, v53); on the CPU (two cores),
#: 3e13 cells' windows of 1,024 took 0.9-1.5 ms a plan in NumPy against
#: 0.23-0.43 ms (0.10-0.17 ms of it without the GIL). Four H200s, 3e13
#: cells with traceback, processes alternating: 4.59, 4.49, 5.37, 4.44 s
#: against 5.23, 4.42, 5.47, 4.84 s off (means 4.72 and 4.99); after one and
#: two GPUs in one process, 4.13 s (3.07x one GPU; v54's 4.69 s without it,
#: another machine). The planner compiles in ~8 s (once: numba caches it)
#: and loads in ~0.03 s: a short run, which would end before the
#: compilation does, leaves it alone.
PLAN_IN_NUMBA = True
PLAN_IN_NUMBA_WINDOWS = 64
NEG = {np.dtype(np.int16): -16384, np.dtype(np.int32): -(1 << 30)}
_CTYPE = {np.dtype(np.int16): "short", np.dtype(np.int32): "int"}


#: The planner of every GPUBackend: plan_window, or numba's once loaded.
_PLANNER = {"plan": plan_window}


def _load_planner() -> None:
    """numba's planner as every GPUBackend's (:meth:`GPUBackend.load_planner`)."""
    try:
        from .layout_jit import load

        _PLANNER["plan"] = load()
    except Exception as exc:
        _PLANNER["failed"] = exc


def _profile_fits(matrix: np.ndarray) -> bool:
    """Whether the warp kernels' query profile holds this matrix: signed bytes,
    8 warps x 32 lanes x 8 bytes per letter, 48 KB of shared memory at 24
    letters (the packed kernel with traceback has a pad letter more and opts
    in past 48 KB; without, a warp's four groups share 8 lanes' profile)."""
    return matrix.shape[0] <= 24 and int(matrix.min()) >= -127 and int(matrix.max()) <= 127


def _query_profile_bytes(letters: int, rows: int, group: int, warps: int = 8) -> int:
    """Shared memory of a block of ``warps`` warps of query couples: a joint
    profile per warp, 4 bytes a row, letter and lane of a group."""
    return warps * letters * group * rows * 4


def _query_block(traceback: bool) -> int:
    """Warps a block of the packed kernel whose query couples share one
    profile (BLOCK_QUERY_PROFILE, with traceback BLOCK_QUERY_PROFILE_TRACEBACK),
    or 1 (a profile a warp)."""
    on = BLOCK_QUERY_PROFILE_TRACEBACK if traceback else BLOCK_QUERY_PROFILE
    return _pack_threads(traceback) // 32 if on else 1


def _pack_shared_bytes(letters: int, rows: int, group: int, traceback: bool,
                       query: bool) -> int:
    """Shared memory of a block of the packed kernel: a profile a warp (joint,
    4 bytes a row, where the launch has query couples), or with block
    profiles the larger of one joint profile and the target couples' warps'."""
    warps = _pack_threads(traceback) // 32
    couples = warps * (letters + 1) * group * rows
    if not query:
        return couples
    if _query_block(traceback) > 1:
        return max(_query_profile_bytes(letters, rows, group, 1), couples)
    return _query_profile_bytes(letters, rows, group, warps)


def _pack_threads(traceback: bool) -> int:
    """Threads a block of the packed kernel."""
    return PACK_THREADS_TRACEBACK if traceback else PACK_THREADS


def _pack_shape(traceback: bool, mode: str) -> tuple[int, int]:
    """The packed kernel's query rows a lane and lanes a group (a couple each)."""
    return (PACK_ROWS_TRACEBACK, PACK_GROUP_TRACEBACK) if traceback else PACK_SHAPES[mode]


def wide_warps(pairs: int, queries: np.ndarray, targets: np.ndarray,
               multiprocessors: int = PLAN_MULTIPROCESSORS) -> int:
    """Warps each wide pair of a launch of ``pairs`` takes, given its wide
    pairs' query and target lengths (the shortest and the longest among
    them): a power of two, the most (up to WIDE_WARPS_MAX) that leave every
    warp WIDE_BANDS_A_WARP bands of 256 rows of the shortest query and
    WIDE_LAG_COLUMNS columns of the shortest target (WIDE_LAG_COLUMNS_BLOCKS
    past 8 warps, where the launch's blocks must also stay within one a
    multiprocessor); 1 where the pairs fill the device a warp each
    (WIDE_FULL_A_SM), or where a pair's band counts (band times the target's
    length) would pass 32 bits; WIDE_WARPS where set.

    Examples
    --------
    >>> reads = np.array([15_000, 24_000])
    >>> wide_warps(126, reads, reads), wide_warps(2_016, reads, reads)
    (8, 8)
    >>> wide_warps(4_000, reads, reads), wide_warps(10, reads, reads)
    (1, 16)
    >>> wide_warps(6, np.array([150_000]), np.array([150_000]))
    64
    >>> [wide_warps(272, np.array([4_560]), np.array([m])) for m in (1_000, 300, 200)]
    [4, 2, 1]
    >>> [wide_warps(100, np.array([n]), reads) for n in (1_500, 700)]
    [2, 1]
    >>> wide_warps(1, np.array([1_000_000]), np.array([600_000]))
    1
    """
    if WIDE_WARPS is not None:
        return WIDE_WARPS
    if not len(queries) or pairs >= WIDE_FULL_A_SM * multiprocessors:
        return 1
    if (int(queries.max()) // (32 * STRIPE) + 2) * (int(targets.max()) + 2) >= 1 << 31:
        return 1
    bands = -(-int(queries.min()) // (32 * STRIPE))
    columns = int(targets.min())

    def more(ww: int) -> bool:  # whether 2 ww warps a pair still pay
        lag = WIDE_LAG_COLUMNS if 2 * ww <= 8 else WIDE_LAG_COLUMNS_BLOCKS
        return (2 * ww <= WIDE_WARPS_MAX and 2 * ww * WIDE_BANDS_A_WARP <= bands
                and 2 * ww * lag <= columns
                and (2 * ww <= 8 or pairs * (2 * ww // 8) <= multiprocessors))

    ww = 1
    while more(ww):
        ww *= 2
    return ww


def plan_wide_warps(plan: LayoutPlan, lengths: JobLengths,
                    multiprocessors: int = PLAN_MULTIPROCESSORS) -> int:
    """:func:`wide_warps` of a window's plan: its unpacked wide pairs, their
    queries, and their targets' shortest and longest (a segment's targets
    run longest first)."""
    seg = plan.segments[plan.segments[:, KIND] == WIDE]
    first = seg[:, COL]
    targets = lengths.cols[np.concatenate([first, first + seg[:, COUNT] - 1])]
    return wide_warps(int(seg[:, COUNT].sum()), lengths.rows[seg[:, ROW]], targets,
                      multiprocessors)


def packs(job: Job, lengths: JobLengths, w: Window, traceback: bool,
          multiprocessors: int = PLAN_MULTIPROCESSORS) -> Callable:
    """Which pairs of window ``w`` run packed, as ``fits(n, m)`` (true for
    every shorter target once true for one): those whose scores fit 16 bits,
    less, in a window where they are too few to pay for their tail, those of
    more than PACK_TAIL_STEPS (PACK_TAIL_STEPS_TRACEBACK) packed steps:
    score-only, too few also where they make fewer than PACK_MIN_WARPS_A_SM
    warps on each of the device's ``multiprocessors``. With traceback, only
    where they hold at least PACK_TAIL_SHARE_TRACEBACK of the window's
    cells."""
    def fits16(n, m):
        return job.scoring.fits_int16(n, m, job.mode)

    tail = PACK_TAIL_STEPS_TRACEBACK if traceback else PACK_TAIL_STEPS
    if tail is None:
        return fits16
    rows, group = _pack_shape(traceback, job.mode)
    band = rows * group

    def steps(n, m):  # a packed pair's: its bands times its target's length
        return -(-np.asarray(n) // band) * np.asarray(m)

    def short(n, m):
        return steps(n, m) <= tail

    r, a = first_columns(w)
    n = lengths.rows[r]
    lo = first_fit(n, lengths.cols, a, np.full(r.size, w.c1, np.int64), fits16)
    # past lo, the long ones are the longest targets: those before the first short one
    hi = first_fit(n, lengths.cols, lo, np.full(r.size, w.c1, np.int64), short)
    some = hi > lo
    if not some.any():
        return fits16
    prefix = lengths.col_prefix
    cells = int((n[some] * (prefix[hi[some]] - prefix[lo[some]])).sum())
    longest = int(steps(n[some], lengths.cols[lo[some]]).max())
    a_step = PACK_TAIL_CELLS_A_STEP_TRACEBACK if traceback else PACK_TAIL_CELLS_A_STEP
    warps = int((hi - lo)[some].sum()) * group / 64  # pairs / 2 couples, 32 / group a warp
    if cells >= a_step * longest and (
            traceback or warps >= PACK_MIN_WARPS_A_SM * multiprocessors):
        return fits16
    if traceback:  # the window's other pairs run beside them
        window = int((n * (prefix[w.c1] - prefix[a])).sum())
        if cells < PACK_TAIL_SHARE_TRACEBACK * window:
            return fits16
    return lambda n, m: fits16(n, m) & short(n, m)


def _carve(sizes) -> tuple[list[int], int]:
    """Where pieces of these byte sizes start, one after another at 256-byte
    boundaries, in one buffer; and the buffer's size."""
    starts, total = [], 0
    for size in sizes:
        starts.append(total)
        total += -(-int(size) // 256) * 256
    return starts, total


def _uploads(plan: LayoutPlan) -> list[np.ndarray]:
    """What the host sends for a window: its plan's segments and narrow warps,
    the operation total (``op_off``'s last entry) and the packed kernel's warps."""
    return [plan.segments, plan.warp_off, plan.warp_boff, plan.warp_m,
            np.array([plan.ops], np.int64), plan.couple_warps]


def window_arrays(plan: LayoutPlan, traceback: bool,
                  operations: bool | None = None) -> dict[str, tuple[int, np.dtype]]:
    """A window's device arrays, name -> (entries, dtype), in the order they are
    carved from its stream slot's memory (:meth:`GPUBackend._slot_memory`);
    the operations' and the alignments' (``operations``) by default with
    traceback only."""
    n, index = plan.npairs, plan.nwide + plan.warp_off.size
    i32, i64 = np.dtype(np.int32), np.dtype(np.int64)
    score = np.dtype(np.int16) if plan.score_bytes == 2 else i32
    arrays = {"upload": (_carve(a.nbytes for a in _uploads(plan))[1], np.dtype(np.uint8)),
              "rows": (n, i32), "cols": (n, i32), "off": (index, i64), "boff": (index, i64),
              "bnd_h": (plan.bnd, score), "bnd_f": (plan.bnd, score),
              "words": (max(plan.tb_words, 1), np.dtype(np.uint32)),
              "score": (n, i32), "ei": (n, i32), "ej": (n, i32)}
    if traceback if operations is None else operations:
        arrays |= {"op_off": (n + 1, i64), "code": (plan.ops, np.dtype(np.uint8)),
                   "len": (plan.ops, i32), "qb": (n, i32), "tb": (n, i32), "nops": (n, i32),
                   "ident": (n, i32), "alen": (n, i32),
                   "next": (1, i32)}  # walk_ckpt's next pair (CHECKPOINT_TRACEBACK_MODES)
    return arrays


def bounded_arrays(plan: LayoutPlan, slot_bytes: int,
                   target_sum: int) -> dict[str, tuple[int, np.dtype]]:
    """A bounded traceback window's device arrays (see BOUNDED_TRACEBACK):
    those of its score pass (``plan``, score-only with operation slots), each
    pair's box and the sums that place its buffers, and the boxes' traceback
    words in what is left of ``slot_bytes`` (the window's memory with full
    traceback). ``target_sum``: the lengths of the pairs' targets summed (the
    reverse pass's rows and the boxes' boundary rows are at most that)."""
    n = plan.npairs
    i32, i64 = np.dtype(np.int32), np.dtype(np.int64)
    arrays = window_arrays(plan, False, operations=True)
    score = arrays["bnd_h"][1]  # the boundary rows' entries
    # per pair: its box, the sum of the ends before it (the reverse pass's
    # rows), its sort key, its item (a wide box, or a warp of narrow ones) and
    # lane; per item: rows in stripes, columns, words and boundary entries
    # (with their sums); the narrow warps' boundary rows take up to their
    # longest box's a lane (twice the pairs' own, checked on the device)
    arrays |= {"box_i0": (n, i32), "box_j0": (n, i32), "ej_sum": (n, i64), "key": (n, i64),
               "item": (n, i32), "lane": (n, i32), "item_s": (n, i32), "item_m": (n, i32),
               "wneed": (n, i64), "bneed": (n, i64), "wend": (n, i64), "bend": (n, i64),
               "counts": (2, i32), "status": (2, i32), "counters": (2, np.dtype(np.uint64)),
               "scratch": (2 * target_sum + 4 * n, i32),
               "box_bh": (2 * (target_sum + n), score), "box_bf": (2 * (target_sum + n), score)}
    left = slot_bytes - _carve(count * dtype.itemsize for count, dtype in arrays.values())[1]
    arrays["box_words"] = (max(left - 256, 0) // 4, np.dtype(np.uint32))
    return arrays


#: A window's bytes besides its pairs': its arrays' 256-byte alignment, the
#: uploads' small pieces.
_WINDOW_BYTES = 64 << 10


def _pairs_bytes(traceback: bool, n, span, count):
    """Device bytes of ``count`` pairs of a query of length ``n`` whose targets'
    lengths sum to ``span`` (integers or NumPy arrays), by the wide layout
    (its words, in bands of 32 lanes, bound the couples' layout), ``n + m``
    operation slots a pair, boundary rows, per-pair columns and indices, and
    a launch segment each."""
    tb = 4 * band_words(n, span, count, 32) if traceback else 0
    ops = 10 * (n * count + span) if traceback else 0
    return tb + ops + 8 * (span + count) + 128 * count


def window_bytes(plan: LayoutPlan, traceback: bool) -> int:
    """Device bytes of :func:`window_arrays`."""
    return _carve(count * dtype.itemsize
                  for count, dtype in window_arrays(plan, traceback).values())[1]


def _module_key(dtype, mode: int) -> tuple:
    """A compiled module's key: its score width, its mode, the macros and the
    source of now (a module compiled under others is another's)."""
    return np.dtype(dtype), mode, module_defines(), SOURCE


def _staged_pieces(sizes: list[int], half: int) -> Iterator[tuple[int, list]]:
    """Arrays of ``sizes`` bytes cut into pieces that fill the two halves of
    a staging buffer (``half`` bytes each) in turn, cut mid-element where a
    half ends: for each half filled, ``(k, pieces)``, ``k`` the half (0 or 1)
    and each piece ``(array, at in it, at in the buffer, n)``; no half for no
    bytes."""
    k, used, pieces = 0, 0, []
    for i, size in enumerate(sizes):
        done = 0
        while done < size:
            if used == half:
                yield k, pieces
                k, used, pieces = k ^ 1, 0, []
            n = min(size - done, half - used)
            pieces.append((i, done, k * half + used, n))
            used += n
            done += n
    if pieces:
        yield k, pieces


def _at_least(store: dict, key, nbytes: int, allocate):
    """``store[key]``, replaced by ``allocate(nbytes)`` where missing or smaller
    (the old buffer back to its pool before the new one is taken)."""
    buf = store.get(key)
    if buf is None or buf.nbytes < nbytes:
        store[key] = None
        buf = store[key] = allocate(nbytes)
    return buf


def _covered(spans: np.ndarray) -> float:
    """Length of the union of intervals (rows ``start, end``): the time the GPU
    had a window's work queued or running."""
    spans = spans[np.argsort(spans[:, 0])]
    reach = np.maximum.accumulate(spans[:, 1])
    gaps = np.maximum(spans[1:, 0] - reach[:-1], 0.0)
    return float(reach[-1] - spans[0, 0] - gaps.sum())


def widest_window(rows: int, cols: int, triangle: bool, workers: int = 1,
                  traceback: bool = False) -> int:
    """The window width of a job of ``rows`` x ``cols`` sequences (all-vs-all
    where ``triangle``) on ``workers`` GPUs: MAX_WIDTH, or MAX_WIDTH_SEVERAL
    (MAX_WIDTH_SEVERAL_TRACEBACK with ``traceback``) where several workers
    would each have at least SEVERAL_MIN_WINDOWS windows of that width;
    never wider than the job, rounded up to whole blocks.

    >>> widest_window(13_622, 13_622, True, workers=1), widest_window(13_622, 13_622, True, 4)
    (1024, 2048)
    >>> widest_window(13_622, 13_622, True, 4, traceback=True)
    1024
    >>> widest_window(2_128, 2_128, True, workers=4), widest_window(100, 100, True)
    (1024, 112)
    """
    width = MAX_WIDTH
    several = MAX_WIDTH_SEVERAL_TRACEBACK if traceback else MAX_WIDTH_SEVERAL
    if workers > 1 and several > MAX_WIDTH:
        k, c = -(-rows // several), -(-cols // several)
        windows = k * (k + 1) // 2 if triangle else k * c
        if windows >= SEVERAL_MIN_WINDOWS * workers:
            width = several
    return min(width, -(-max(rows, cols) // BLOCK) * BLOCK)


def kernel_names(modes: Iterable[int]) -> list[str]:
    """The template kernels of ``align.cu`` that ``modes`` (codes) run, as NVRTC
    names them (a module's ``name_expressions``)."""
    names = []
    for m in modes:
        names += [f"fill<{m},true>", f"fill<{m},false>", f"fill2<{m},true>",
                  f"fill2<{m},false>", f"walk<{m}>", f"walk_ckpt<{m}>"]
    return names


def nvrtc_options(score: str, cc: str, defines: tuple[str, ...] | None = None
                  ) -> tuple[str, ...]:
    """NVRTC's options for ``align.cu`` with scores of C type ``score`` on a
    device of compute capability ``cc`` (``"90"``), with ``defines`` (the
    macros of :func:`module_defines` now, by default)."""
    return (f"-arch=sm_{cc}", "-std=c++17", f"-DSCORE={score}",
            *(f"-D{d}" for d in (module_defines() if defines is None else defines)))


def module_defines() -> tuple[str, ...]:
    """The macros ``align.cu`` is compiled with (``NAME=VALUE``): the packed
    kernels' shapes and blocks, then :data:`DEFINES`."""
    shapes = [(f"PACK_ROWS_{mode.upper()}={rows}", f"PACK_GROUP_{mode.upper()}={group}")
              for mode, (rows, group) in PACK_SHAPES.items()]
    return (*(d for pair in shapes for d in pair),
            f"PACK_TB_ROWS={PACK_ROWS_TRACEBACK}", f"PACK_TB_GROUP={PACK_GROUP_TRACEBACK}",
            f"PACK_THREADS={PACK_THREADS}", f"PACK_TB_THREADS={PACK_THREADS_TRACEBACK}",
            f"TB_MAD_P={TRACEBACK_IMAD_ROWS_P:#x}", f"TB_MAD_Q={TRACEBACK_IMAD_ROWS_Q:#x}",
            f"TB_TOP_PAD={int(SEMIGLOBAL_TRACEBACK_TOP_PAD)}",
            f"BOUND_ROWS={BOUND_ROWS}", f"BLOCK_QUERY_PROFILE={int(BLOCK_QUERY_PROFILE)}",
            f"BLOCK_QUERY_PROFILE_TB={int(BLOCK_QUERY_PROFILE_TRACEBACK)}",
            f"FUSED_WALK={int(FUSED_WALK)}",
            f"CKPT={sum(1 << code for mode, code in MODES.items() if _checkpointed(mode))}",
            f"CKPT_COLS={CHECKPOINT_COLUMNS}", f"CKPT_CHUNK={_checkpoint_step_chunk()}",
            f"WALK_CKPT_THREADS={_walk_checkpoint_threads()}",
            *DEFINES)


def _walk_checkpoint_threads() -> int:
    """``walk_ckpt``'s threads a block: WALK_CHECKPOINT_THREADS, halved until
    their blocks of words (CHECKPOINT_COLUMNS columns of PACK_ROWS_TRACEBACK / 8
    words each) fit 40 KB of static shared memory beside the matrix."""
    def too_many(threads: int) -> bool:  # their words (4 bytes) past 40 KB
        return threads * CHECKPOINT_COLUMNS * (PACK_ROWS_TRACEBACK // 8) * 4 > 40960

    threads = WALK_CHECKPOINT_THREADS
    while threads > 32 and too_many(threads):
        threads //= 2
    if too_many(threads):
        raise ValueError(f"CHECKPOINT_COLUMNS = {CHECKPOINT_COLUMNS} at {PACK_ROWS_TRACEBACK} "
                         "rows a lane: a warp's blocks of words exceed 40 KB of shared memory")
    return threads


def _checkpoint_step_chunk() -> int:
    """CHECKPOINT_STEP_CHUNK, checked: one store of 4, 8 or 16 bytes, and no
    more steps than a group has lanes (the steps rounded up to whole chunks
    then leave the checkpoints their room; align.cu asserts both)."""
    chunk = CHECKPOINT_STEP_CHUNK
    if chunk not in (1, 2, 4) or chunk > PACK_GROUP_TRACEBACK:
        raise ValueError(f"CHECKPOINT_STEP_CHUNK = {chunk}: 1, 2 or 4 steps a store, at most "
                         f"PACK_GROUP_TRACEBACK = {PACK_GROUP_TRACEBACK}")
    return chunk


def _checkpointed(mode: str) -> bool:
    """Whether the packed kernel's traceback is checkpointed in ``mode``
    (:data:`CHECKPOINT_TRACEBACK_MODES`): at 16 rows a lane or more, where its
    words leave room for the checkpoints (at 8, the words from above fill it)."""
    return mode in CHECKPOINT_TRACEBACK_MODES and PACK_ROWS_TRACEBACK >= 16


def _thread_usage() -> tuple[float, float, int]:
    """This thread's (wall clock, CPU seconds, minor page faults) now."""
    import resource

    return (time.perf_counter(), time.thread_time(),
            resource.getrusage(resource.RUSAGE_THREAD).ru_minflt)


class GPUBackend:
    """CUDA kernels through CuPy (``align.cu``): the smallest pairs one thread
    each, the others a warp each, those whose scores fit 16 bits two to a
    group of lanes (one query, two targets in the 16-bit halves of each
    register, the couples of a warp of one query; in local and global mode,
    two queries and one target where both queries pack it).

    Parameters
    ----------
    devices : sequence of int, optional
        GPU ordinals; the first one runs the windows (several devices: see the
        scheduler).

    Its batches hold input indices, every all-vs-all pair seen from its lower
    index (:attr:`input_indices`): the device orients them.
    """

    name = "gpu"
    #: Batches come in input indices, oriented (see :func:`pairalign.engine.in_input`).
    input_indices = True

    def __init__(self, devices=None) -> None:
        import cupy as cp

        self.cp = cp
        self.devices = list(devices) if devices else [0]
        self.device = cp.cuda.Device(self.devices[0])
        self._modules: dict = {}
        self._compiling: dict = {}  # module key -> Future: see _compile_ahead
        self._plans: dict = {}
        self._states: dict = {}
        self._hp = None
        self._sides: dict = {}  # a window stream's side stream (_side_stream)
        self._opted: set = set()
        self._pinned: dict = {}  # stream -> its staging buffer (_staging)
        self._fetcher = None  # a ThreadPoolExecutor of one thread (FETCH_THREAD)
        self._fetch_stream = None
        self._timings_lock = threading.Lock()
        self._copiers = None  # a ThreadPoolExecutor, made at the first large download
        self._spans: list = []
        #: the last run's windows with their spans: (window, start, end),
        #: seconds from its first launch (CUDA events), in the order fetched
        self.window_spans: list = []
        self._streams: list = []
        self._uploads: dict = {}
        self._slots: dict = {}
        self._last_slot_bytes = 0  # the largest slot block taken: see device_budget
        self._slot_floor: tuple = (None, 0)  # (job, bytes): see _slot_memory
        self._reservation: dict | None = None  # see reserve
        self._slot_free: dict = {}  # stream -> event: its slot's results copied out
        self._origin = None
        self._keep: int | None = 0  # bytes of operations a run may leave (None: no cap)
        self._kept = 0
        self._reserve = 0  # device bytes kept free while operations are left there
        self._total: int | None = None  # the device's memory (:meth:`_total_memory`)
        # (job, cells its bounded windows' reverse passes and boxes took, their
        # cells): see _bounded
        self._bounded_seen: tuple = (None, 0, 0)
        self.timings: dict[str, float] = {}

    @classmethod
    def planner(cls) -> GPUBackend:
        """A backend made without a device, for its windows' plans alone
        (:meth:`_plan_for`: from lengths, no device work)."""
        be = object.__new__(cls)
        be._plans, be._slot_floor = {}, (None, 0)
        return be

    @cached_property
    def multiprocessors(self) -> int:
        """The device's multiprocessors."""
        return int(self.device.attributes["MultiProcessorCount"])

    def _plan_multiprocessors(self) -> int:
        """The multiprocessors a plan counts: the device's, or without one
        (:meth:`planner`) PLAN_MULTIPROCESSORS."""
        return self.multiprocessors if hasattr(self, "device") else PLAN_MULTIPROCESSORS

    def describe(self) -> str:
        props = self.cp.cuda.runtime.getDeviceProperties(self.devices[0])
        return f"gpu {self.devices[0]} ({props['name'].decode()})"

    def _module(self, dtype: np.dtype, mode: int):
        """The kernels of one score width and one mode (``align.cu`` compiled
        by NVRTC; CuPy keeps the result on disk for later runs). One mode's
        kernels compile in about a quarter of the time of every mode's (the
        H100's host: 3.6 s against 15.0 s for 16-bit scores), which a first
        run after an install or an upgrade waits for. A module that
        :meth:`_compile_ahead` is compiling is waited for."""
        key = _module_key(dtype, mode)
        mod = self._modules.get(key)
        if mod is None:
            ahead = self._compiling.pop(key, None)
            mod = ahead.result() if ahead is not None else self._compile(key)
            self._modules[key] = mod
        return mod

    def _compile(self, key: tuple):
        """The module of ``key`` (see :meth:`_module`), compiled and loaded."""
        dtype, mode, defines, source = key
        cp = self.cp
        src = (resources.files("pairalign.kernels").joinpath("align.cu") if source is None
               else Path(source)).read_text()
        cc = "".join(map(str, self.device.compute_capability))
        names = kernel_names([mode])
        with self.device:
            mod = cp.RawModule(code=src, options=nvrtc_options(_CTYPE[dtype], cc, defines),
                               name_expressions=names)
            mod.get_function(names[0])  # compiled (NVRTC) and loaded now
        return mod

    def _compile_ahead(self, job: Job) -> None:
        """Start compiling, each on a thread of its own, the modules that
        ``job``'s windows may need: its mode's, for the score widths of its
        shortest and of its longest pairs' extents (a window's width follows
        from its longest row and column). NVRTC lets go of the GIL: two
        widths compiled side by side take about the time of the slower (the
        H100's host: a mode's two, 5.0-5.3 s against 3.5-6.4 s each alone)."""
        rows, cols = job.rows.lengths, job.col_set.lengths
        if not len(rows) or not len(cols):
            return
        widths = {job.scoring.score_dtype(int(rows.min()), int(cols.min()), job.mode),
                  job.scoring.score_dtype(int(rows.max()), int(cols.max()), job.mode)}
        for dtype in widths:
            key = _module_key(dtype, job.mode_code)
            if key in self._modules or key in self._compiling:
                continue
            ahead: Future = Future()

            def compile_into(key=key, ahead=ahead) -> None:
                try:
                    ahead.set_result(self._compile(key))
                except BaseException as e:  # raised where the module is asked for
                    ahead.set_exception(e)

            self._compiling[key] = ahead
            threading.Thread(target=compile_into, name="pairalign-compile",
                             daemon=True).start()

    def _function(self, mod, name: str, shared: int):
        """A kernel of ``mod`` allowed ``shared`` bytes of dynamic shared memory
        (beyond 48 KB with its static shared memory, a kernel must opt in)."""
        fn = mod.get_function(name)
        if shared + fn.shared_size_bytes > 48 * 1024:
            key = (id(mod), name, shared)
            if key not in self._opted:
                fn.max_dynamic_shared_size_bytes = shared  # a cupy.RawKernel
                self._opted.add(key)
        return fn

    def responds(self) -> bool:
        """Whether the device still runs work: False once an error has left
        its context unusable (an illegal address, a kernel's trap: a sticky
        error, which every later call on the device raises again), True
        after one that leaves it working (out of memory, a launch refused)."""
        try:
            with self.device:
                self.cp.cuda.runtime.deviceSynchronize()
        except Exception as exc:
            return is_out_of_memory(exc)
        return True

    # memory ---------------------------------------------------------------
    def free_memory(self) -> int:
        """Device bytes free, CuPy's cached blocks counted. While :meth:`reserve`
        takes the slots' blocks, what was free when it began: its blocks go
        back to the pool's cache (counted here) as it ends, so a budget taken
        meanwhile is the one taken before or after it."""
        held = self._reservation
        if held is not None and held["thread"].is_alive():
            return held["free"]
        with self.device:  # CuPy's pool answers for the current device
            free, _ = self.cp.cuda.runtime.memGetInfo()
            return int(free + self.cp.get_default_memory_pool().free_bytes())

    def task_memory(self, job: Job) -> int:
        """Host bytes of the least work a window can hold, one pair of the
        longest sequences: its results (``pair_bytes``). Its traceback is
        the device's: the engine fits windows to the device's memory, down
        to single pairs, and gives one that still does not fit to the CPU."""
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        return pair_bytes(job.traceback, n, m)

    def fit_memory(self, job: Job, budget: int) -> int:
        return 0

    def window_bytes(self, job: Job, w: Window) -> int:
        """Device bytes a window takes (traceback, boundary rows, operations,
        indices and results: :func:`window_arrays`)."""
        size = window_bytes(self._plan(job, w), job.traceback)
        self._job_plans(job)["sizes"][w] = size
        return size

    def window_bytes_bound(self, job: Job, w: Window) -> int:
        """The device bytes of a window as its pairs' :func:`_pairs_bytes`, from
        the lengths alone (O(rows), no plan): at least :meth:`window_bytes` on
        every job measured, but not a proven bound (a narrow warp takes its
        longest target's words for each of its pairs). Fitting a job's
        windows by this leaves their plans to the launching thread, while
        earlier windows run; each window is checked exactly there, before
        it launches (``_LocalRun._fits``). Recorded for :meth:`_job_slot_bytes`."""
        size = self._pairs_bound(job, w) + _WINDOW_BYTES
        self._job_plans(job)["sizes"].setdefault(w, size)  # an exact size, where known, stays
        return size

    def _pairs_bound(self, job: Job, w: Window) -> int:
        """The :func:`_pairs_bytes` of a window's pairs, summed (nothing recorded)."""
        r, count, span = self._row_spans(job, w)
        rows = self._job_plans(job)["lengths"].rows[r]
        return int(_pairs_bytes(job.traceback, rows, span, count).sum())

    def _row_spans(self, job: Job, w: Window):
        """Each row of a window (sorted positions), its pairs, and the lengths
        of their targets summed."""
        lengths = self._job_plans(job)["lengths"]
        r, first = first_columns(w)
        return r, w.c1 - first, lengths.col_prefix[w.c1] - lengths.col_prefix[first]

    def device_budget(self) -> int:
        """Device bytes one window may take: of what is free, a share for each
        window in flight (see :meth:`run_windows`), or the largest slot
        block's size where that is at most :data:`SLOT_BUDGET_SLACK` less."""
        budget = int(self.free_memory() * 0.8 / DEPTH)
        last = self._last_slot_bytes
        return last if last < budget <= last * (1 + SLOT_BUDGET_SLACK) else budget

    def window_width(self, job: Job, budget: int, workers: int = 1) -> int:
        """Up to MAX_WIDTH, or wider for a large job on several ``workers``
        (:func:`widest_window`): windows too large for the device are split
        by the engine. A launch's blocks are ordered longest first, so the
        hardware block scheduler balances them (LPT).
        """
        return widest_window(len(job.rows), len(job.col_set), job.triangle, workers,
                             job.traceback)

    def _host_stream(self):
        """A high-priority stream for the work that the host waits on (a
        window's downloads and the compaction of its operations): on a
        low-priority stream the compaction would queue behind the fill blocks
        of the next window, and the host with it."""
        if self._hp is None:
            self._hp = self._priority_stream()
        return self._hp

    def _priority_stream(self):
        """A new stream of the device's highest priority (on this backend's
        device, whichever is current)."""
        cp = self.cp
        with self.device:
            try:  # CUDA clamps a priority to the device's range: this is its highest
                return cp.cuda.Stream(non_blocking=True, priority=-(1 << 10))
            except TypeError:  # a CuPy without stream priorities
                return cp.cuda.Stream(non_blocking=True)

    def _side_stream(self, stream):
        """The high-priority stream that runs ``stream``'s bounded passes
        (BOUNDED_PRIORITY), the same one run after run (see
        :meth:`_window_streams`: CuPy's pool keeps blocks per stream)."""
        side = self._sides.get(stream.ptr)
        if side is None:
            side = self._sides[stream.ptr] = self._priority_stream()
        return side

    def _window_streams(self, depth: int) -> list:
        """The streams windows run on, the same ones run after run. CuPy's pool
        keeps freed blocks per stream and keeps them after the stream is gone
        (cupy/cupy#8068), so streams made for each run would map new memory
        every run (25 ms for a window's traceback words on the H100) and leave
        the old blocks cached."""
        with self.device:  # the streams are this backend's device's, whichever is current
            while len(self._streams) < depth:
                self._streams.append(self.cp.cuda.Stream(non_blocking=True))
        return self._streams[:depth]

    def _upload(self, arrays: list[np.ndarray], dev, stream) -> list:
        """Host arrays to the device buffer ``dev`` in one asynchronous copy on
        ``stream``, through that stream's pinned buffer; returns device views.

        A copy from pageable memory could make the host wait for the windows
        queued on the stream. The buffer is rewritten only for the stream's
        next window, launched after this one is detached (which waited for
        the copy)."""
        cp = self.cp
        starts, size = _carve(a.nbytes for a in arrays)
        buf = _at_least(self._uploads, stream.ptr, size,
                        lambda n: self._empty_pinned(max(n, 1 << 20)))
        for a, at in zip(arrays, starts):
            buf[at:at + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        cp.cuda.runtime.memcpyAsync(dev.data.ptr, buf.ctypes.data, size,
                                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        return [cp.ndarray(a.shape, a.dtype, memptr=dev.data + at)
                for a, at in zip(arrays, starts)]

    def reserve(self, job: Job) -> None:
        """Take the stream slots' device memory for ``job`` on a thread, from
        now, where its windows will fill them (RESERVE_SLOTS): the engine
        calls this before it plans the job's windows. Each slot's block, of
        the device budget, goes back to its stream's cache in CuPy's pool,
        where the slot's first window finds it (:meth:`_slot_memory`; the
        pool keeps free blocks per stream); that window waits for the thread.
        Where the device cannot give it, the launch allocates as without."""
        self._reserved_bytes(None)  # an earlier job's thread ends first
        self._reservation = None
        if not RESERVE_SLOTS or len(job.rows) == 0 or len(job.col_set) == 0:
            return
        budget = self.device_budget()
        if self._job_bytes_bound(job) < RESERVE_LEAST_SLOTS * DEPTH * budget:
            return
        streams = self._window_streams(DEPTH)
        self._host_stream()  # made on this thread, not raced for by the taking one
        held = {"job": job, "bytes": budget, "free": self.free_memory(), "ok": False}

        def take() -> None:
            t = time.perf_counter()
            try:
                with self.device:
                    blocks = [self._slot_block(budget, stream) for stream in streams]
                    del blocks
                held["ok"] = True
            except Exception:  # out of memory: the launches allocate their own
                pass
            self._add("reserve", time.perf_counter() - t)

        held["thread"] = threading.Thread(target=take, name="pairalign-slots", daemon=True)
        self._reservation = held
        held["thread"].start()

    def _reserved_bytes(self, job: Job | None) -> int:
        """Bytes of each slot's block that :meth:`reserve` took for ``job``
        (0 if none), once its thread has ended."""
        held = self._reservation
        if held is None:
            return 0
        held["thread"].join()
        return held["bytes"] if held["ok"] and held["job"] is job else 0

    def _job_bytes_bound(self, job: Job) -> int:
        """The device bytes of all of ``job``'s pairs, by :func:`_pairs_bytes`
        (as :meth:`window_bytes_bound` takes a window's)."""
        return self._pairs_bound(job, Window(0, len(job.rows), 0, len(job.col_set),
                                             job.triangle, 0, 0))

    def _job_slot_bytes(self, job: Job) -> int:
        """Bytes of the largest window that the device can hold among the
        job's fitted ones (those too large for it were split), once per job:
        every stream slot is taken that large at its first window, or as
        large as the budget where that is at least :data:`SLOT_WHOLE_BUDGET`
        of it. Windows fitted by :meth:`window_bytes_bound` are planned here,
        largest bound first, up to :data:`SLOT_PLANS` of them and while one
        could be larger than the largest found; a window larger still grows
        its slot. Where one of them is over the budget (a window that its
        launch will split, whose pieces come up to the budget), the slot is
        the budget: long reads' windows were all such, and every one of
        their launches grew its slot (13 growths in 27 windows, each waiting
        for its stream and mapping new memory)."""
        if self._slot_floor[0] is not job:
            budget = self.device_budget()
            plans = self._job_plans(job)
            exact = {w: window_bytes(p, job.traceback) for w, p in plans.items()
                     if isinstance(p, LayoutPlan)}
            best = max((b for b in exact.values() if b <= budget), default=0)
            # windows fitted by their bound alone: the largest bounds planned
            # (their launches take the plans), while one could hold more
            bounds = sorted(((b, w) for w, b in plans["sizes"].items() if w not in exact),
                            key=lambda x: x[0], reverse=True)
            split = False
            for b, w in bounds[:SLOT_PLANS]:
                if b <= best:
                    break
                size = self.window_bytes(job, w)
                if size <= budget:
                    best = max(best, size)
                else:
                    split = True
            if split or best >= SLOT_WHOLE_BUDGET * budget:
                best = budget
            self._slot_floor = (job, best)
        return self._slot_floor[1]

    def _slot_memory(self, stream, arrays: dict, floor: int = 0) -> dict:
        """A window's arrays (:func:`window_arrays`), carved from one block of
        device memory per stream slot of at least ``floor`` bytes, kept for
        the slot's next windows.

        Allocating each window's arrays from CuPy's pool made new device
        allocations window after window (sizes vary, and each stream has its
        own free blocks): 0.1 s of the proteome's launches on the H100. A
        slot grown window after window did the same, and worse: with two
        slots near half the device each, the pool's next allocation fails,
        and CuPy frees its cached blocks (``cudaFree`` waits for the device)
        and tries again, so the launching thread waited for the windows in
        flight and the GPU ran dry (1e12 cells with traceback on the H100:
        launches 0.45 s a run). Hence ``floor``, the job's largest window.
        The slot's block is released at the end of :meth:`run_windows` (to
        the pool's cache, where the next run finds it)."""
        cp = self.cp
        starts, size = _carve(count * dtype.itemsize for count, dtype in arrays.values())
        mem = self._slot(stream, max(size, floor))
        return {name: cp.ndarray((count,), dtype, memptr=mem.data + at)
                for (name, (count, dtype)), at in zip(arrays.items(), starts)}

    def _slot(self, stream, nbytes: int):
        """``stream``'s slot block, replaced by one of ``nbytes`` where it is
        smaller. From the host stream's arena (:data:`SLOTS_IN_HOST_ARENA`)
        the old block goes back where work on other streams, not ordered
        after this one's, could take it at once, while this stream's last
        window may still read it: the stream is synchronized first (a slot
        grows rarely, past the job's largest planned window). In the slot
        stream's own arena, CuPy gives a freed block only to that stream.
        Each growth is counted (``slot_grown`` in :attr:`timings`)."""
        held = self._slots.get(stream.ptr)
        if held is not None and held.nbytes < nbytes:
            self._add("slot_grown", 1.0)
            if SLOTS_IN_HOST_ARENA:
                stream.synchronize()
        return _at_least(self._slots, stream.ptr, nbytes, lambda n: self._slot_block(n, stream))

    def _slot_block(self, nbytes: int, stream):
        """A new block of ``nbytes`` for ``stream``'s slot, from the host
        stream's arena of CuPy's pool (:data:`SLOTS_IN_HOST_ARENA`) or else
        ``stream``'s. The largest block taken is the floor of a budget just
        above it (:data:`SLOT_BUDGET_SLACK`): a smaller job's slots are
        carved from the cached blocks and leave them as they were."""
        with self._host_stream() if SLOTS_IN_HOST_ARENA else stream:
            block = self.cp.empty(max(nbytes, 1), self.cp.uint8)
        self._last_slot_bytes = max(self._last_slot_bytes, nbytes)
        return block

    def _empty_pinned(self, nbytes: int) -> np.ndarray:
        """Page-locked host bytes from CuPy's pinned pool, as
        ``cupyx.empty_pinned`` makes them, without importing cupyx: CuPy
        registers it lazily, and running it took 0.14-0.19 s of the command
        line's start on the H100 machine."""
        return np.ndarray((nbytes,), np.uint8, buffer=self.cp.cuda.alloc_pinned_memory(nbytes))

    def _staging(self, stream) -> np.ndarray:
        """The pinned buffer that downloads on ``stream`` go through, one per
        stream (the fetch thread's and the launching thread's download at
        once), of :data:`STAGING_BYTES`. Pinning costs in proportion to size
        (a buffer grown to each window's results took 0.14 s of the proteome
        command line), so results pass through it in pieces."""
        buf = self._pinned.get(stream.ptr)
        if buf is None or buf.nbytes != STAGING_BYTES:
            self._pinned.pop(stream.ptr, None)  # the old buffer back to CuPy's pool first
            t = time.perf_counter()
            buf = self._pinned[stream.ptr] = self._empty_pinned(STAGING_BYTES)
            self._add("pinned", time.perf_counter() - t)
        return buf

    def _download(self, arrays: list, stream=None, out=None) -> list[np.ndarray]:
        """Device arrays to host arrays (new ones, or ``out``'s, contiguous and
        of their shapes and types): asynchronous copies on ``stream`` (by
        default the host stream) into the halves of its staging buffer
        (:meth:`_staging`) in turn, then plain numpy copies out, so that
        results never hold pinned memory. While one half is copied out, the
        device copies into the other."""
        cp = self.cp
        stream = self._host_stream() if stream is None else stream
        arrays = [cp.ascontiguousarray(a) for a in arrays]
        if out is None:
            out = [np.empty(a.shape, a.dtype) for a in arrays]
        else:
            out = list(out)
            if any(o.shape != a.shape or o.dtype != a.dtype or not o.flags.c_contiguous
                   for o, a in zip(out, arrays)) or len(out) != len(arrays):
                raise ValueError("download into arrays of other shapes, types or layouts")
        buf, half = self._halves(stream, "a download")
        # each half's copies queued on the device: (dest bytes, at, from, n),
        # and the event after them
        queued: list[list[tuple[np.ndarray, int, int, int]]] = [[], []]
        ends: list = [None, None]

        def drain(k: int) -> None:
            t = time.perf_counter()
            ends[k].synchronize()
            t1 = time.perf_counter()
            self._copy_out(queued[k], buf)
            queued[k].clear()
            ends[k] = None
            self._add("d2h", t1 - t)
            self._add("copy_out", time.perf_counter() - t1)

        dsts = [o.reshape(-1).view(np.uint8) for o in out]
        last = 0
        for k, pieces in _staged_pieces([a.nbytes for a in arrays], half):
            if ends[k] is not None:  # its last copies, out before it is refilled
                drain(k)
            for i, done, at, n in pieces:
                cp.cuda.runtime.memcpyAsync(buf.ctypes.data + at, arrays[i].data.ptr + done, n,
                                            cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)
                queued[k].append((dsts[i], done, at, n))
            ends[k] = cp.cuda.Event(block=False, disable_timing=True)
            ends[k].record(stream)
            last = k
        for k in (last ^ 1, last):  # the older half first
            if ends[k] is not None:
                drain(k)
        return out

    def _upload_staged(self, arrays: list[np.ndarray], stream) -> list:
        """Host arrays to new device arrays, through the halves of ``stream``'s
        staging buffer (:meth:`_staging`) in turn: each half filled on
        threads, then copied to the device asynchronously, while the host
        fills the other (the device's copy out of a half done first). CUDA's
        own copies from pageable memory brought gigabytes up at ~3 GB/s on
        the H100 (NOTES.md, v44)."""
        cp = self.cp
        out = [cp.empty(a.shape, a.dtype) for a in arrays]
        buf, half = self._halves(stream, "an upload")
        srcs = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        ends: list = [None, None]
        for k, pieces in _staged_pieces([s.nbytes for s in srcs], half):
            if ends[k] is not None:
                ends[k].synchronize()  # the device's copy out of this half
            self._copy_out([(srcs[i], done, at, n) for i, done, at, n in pieces], buf,
                           into=True)
            for i, done, at, n in pieces:
                cp.cuda.runtime.memcpyAsync(out[i].data.ptr + done, buf.ctypes.data + at, n,
                                            cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
            ends[k] = cp.cuda.Event(block=False, disable_timing=True)
            ends[k].record(stream)
        for e in ends:  # the buffer is the stream's next download's
            if e is not None:
                e.synchronize()
        return out

    def _halves(self, stream, what: str) -> tuple[np.ndarray, int]:
        """``stream``'s staging buffer (:meth:`_staging`) and its halves' size."""
        buf = self._staging(stream)
        half = buf.nbytes // 2
        if half == 0:
            raise ValueError(f"STAGING_BYTES is {buf.nbytes}: {what} needs two halves")
        return buf, half

    def _copy_out(self, pieces: list[tuple[np.ndarray, int, int, int]], buf: np.ndarray,
                  into: bool = False) -> None:
        """``dst[at:at + n] = buf[frm:frm + n]`` for each piece (``into``: the
        other way, ``buf[frm:frm + n] = dst[at:at + n]``), on
        :data:`COPY_THREADS` threads where there is more than a piece's worth."""
        cuts = [(dst, at + k, frm + k, min(COPY_PIECE, n - k))
                for dst, at, frm, n in pieces for k in range(0, n, COPY_PIECE)]

        def copy(cut) -> tuple[float, float, int] | None:
            dst, at, frm, n = cut
            if COPY_RUSAGE:
                before = _thread_usage()
            if into:
                buf[frm:frm + n] = dst[at:at + n]
            else:
                dst[at:at + n] = buf[frm:frm + n]
            if COPY_RUSAGE:
                return tuple(b - a for a, b in zip(before, _thread_usage()))
            return None

        if len(cuts) < 2 or COPY_THREADS < 2:
            used = [copy(cut) for cut in cuts]
        else:
            if self._copiers is None:
                from concurrent.futures import ThreadPoolExecutor

                self._copiers = ThreadPoolExecutor(COPY_THREADS,
                                                   thread_name_prefix="pairalign-copy")
            used = list(self._copiers.map(copy, cuts))
        if COPY_RUSAGE and used:
            for key, total in zip(("copy_wall", "copy_cpu", "copy_faults"),
                                  np.sum(used, axis=0)):
                self._add(key, float(total))

    def _add(self, key: str, value: float) -> None:
        with self._timings_lock:  # the fetch thread adds too
            self.timings[key] = self.timings.get(key, 0.0) + value

    # operations left on the device ----------------------------------------
    def keep_ops_on_device(self, on: bool) -> None:
        """From the next window on, leave each window's operations on the
        device (batches are :class:`~pairalign.pairs.DevicePairBatch`) while
        they fit (see DEVICE_OPS_RESERVE), or (``on`` False) not."""
        on = on and DEVICE_PLACEMENT
        self._keep = (0 if not on else None if DEVICE_OPS_SHARE is None
                      else int(self.free_memory() * DEVICE_OPS_SHARE))
        if on:
            self._reserve = int(self._total_memory() * DEVICE_OPS_RESERVE)
        self._kept = 0

    def _total_memory(self) -> int:
        """The device's memory in bytes, from its properties, asked once.
        ``memGetInfo`` holds the GIL: at a run's start, while :meth:`reserve`
        allocated the slots, it held it for 51 of 625 GIL samples of four
        GPUs' worker threads (a py-spy profile, NOTES.md, v53)."""
        if self._total is None:
            props = self.cp.cuda.runtime.getDeviceProperties(self.devices[0])
            self._total = int(props["totalGlobalMem"])
        return self._total

    def _keeps(self, size: int) -> bool:
        """Whether a window's operations of ``size`` bytes stay on the device."""
        if self._keep == 0 or (self._keep is not None and self._kept + size > self._keep):
            return False
        return self.free_memory() - size >= self._reserve

    @property
    def offsets_on_device(self) -> bool:
        """Whether :meth:`place_ops` sums a job's offsets itself (offsets None):
        :data:`PLACE_OFFSETS_ON_DEVICE`."""
        return PLACE_OFFSETS_ON_DEVICE

    def can_place_ops(self, total: int, npairs: int, offsets_on_device: bool = False,
                      extra: int = 0) -> bool:
        """Whether :meth:`place_ops` has the device memory for a job's
        ``total`` operations of ``npairs`` pairs (its offsets, codes and
        lengths; with ``offsets_on_device`` the counts they are summed from
        too), beside those kept there, and ``extra`` bytes of host entries
        brought up to be placed with them."""
        need = (npairs + 1) * 8 * (2 if offsets_on_device else 1) + total * (1 + 4) + extra
        return need + self._reserve <= self.free_memory()

    def place_ops(self, entries: list, offsets: np.ndarray | None, total: int,
                  npairs: int | None = None, out: tuple | None = None, host: list = ()):
        """The operations of every pair of a job in input order, on the host:
        ``(code, length)`` of ``total`` entries, with those of ``entries``
        (the :class:`~pairalign.pairs.DeviceOps` of this backend's windows,
        each with its pairs' ranks on the device; ``offsets`` the job's,
        ``len(pairs) + 1``) in place: placed
        on the device (``place_ops``), then downloaded at once. The other
        pairs' entries are left for the caller to fill. With ``offsets``
        None, the ``npairs`` pairs' offsets are summed on the device from the
        entries' counts (every pair with operations must be among them).
        ``out``: the host's ``(code, length)`` arrays to download into (new
        ones where None). ``host``: entries ``(ranks, offsets, code, length)``
        of pairs whose operations are on the host, uploaded and placed with
        the others (then no pair's are left to the caller). Timed as
        ``place_upload`` (the offsets and the host's entries),
        ``place_device`` (to the placement's end) and ``place`` (the download
        too)."""
        cp = self.cp
        mod = next(iter(self._modules.values()))  # the run's: every module has the kernel
        t = time.perf_counter()
        stream = self._host_stream()
        with self.device, stream:
            entries = [*entries, *self._entries_up(host, stream)]
            if offsets is None:
                dst_off = self._offsets_on_device(mod, entries, npairs)
            else:
                # a plain copy: cupy.asarray stages through pinned memory, whose
                # first 72 MB (9e6 pairs) took 70-110 ms to pin in a fresh process
                # on the H100, against 10 ms for the copy
                dst_off = cp.empty(offsets.shape, offsets.dtype)
                dst_off.set(offsets, stream=stream)
            self._add("place_upload", time.perf_counter() - t)
            code = cp.empty(total, cp.uint8)
            length = cp.empty(total, cp.int32)
            for ops in entries:
                n = len(ops.ranks)
                if n:
                    mod.get_function("place_ops")(
                        (-(-n * 32 // THREADS),), (THREADS,),
                        (ops.offsets, ops.ranks, dst_off, np.int32(n), ops.code,
                         ops.length, code, length))
            if offsets is None and int(dst_off[-1:].get(stream=stream)[0]) != total:
                raise RuntimeError("the operation counts kept on the device do not sum to "
                                   f"the {total} operations kept")
            stream.synchronize()
            self._add("place_device", time.perf_counter() - t)
            got = self._download([code, length], out=out)
        self._add("place", time.perf_counter() - t)
        return got[0], got[1]

    def adopt_ops(self, entries: list) -> list[DeviceOps]:
        """Other device backends' :class:`~pairalign.pairs.DeviceOps` copied
        to this device (peer to peer where the devices allow it) as this
        backend's, for one :meth:`place_ops` to take every device's. Each
        owner's compactions are waited for first (they ran on its high-
        priority stream), and the copies before returning (their sources go
        back to the owners' pools). Timed as ``adopt``."""
        cp = self.cp
        t = time.perf_counter()
        for owner in {id(ops.owner): ops.owner for ops in entries}.values():
            with owner.device:
                owner._host_stream().synchronize()
        stream = self._host_stream()
        adopted = []
        with self.device, stream:
            for ops in entries:
                copies = []
                for a in (ops.offsets, ops.code, ops.length, ops.ranks):
                    b = cp.empty(a.shape, a.dtype)
                    if a.nbytes:
                        b.data.copy_from_device_async(a.data, a.nbytes, stream)
                    copies.append(b)
                adopted.append(DeviceOps(self, *copies))
            stream.synchronize()
        self._add("adopt", time.perf_counter() - t)
        return adopted

    def _entries_up(self, host: list, stream) -> list[DeviceOps]:
        """Host operation entries ``(ranks, offsets, code, length)`` as
        :class:`~pairalign.pairs.DeviceOps` on this device, copied on
        ``stream``."""
        host = [entry for entry in host if len(entry[0])]
        arrays = self._upload_staged([a for ranks, offsets, code, length in host
                                      for a in (offsets, code, length, ranks)], stream)
        return [DeviceOps(self, *arrays[4 * k:4 * k + 4]) for k in range(len(host))]

    def _offsets_on_device(self, mod, entries: list, npairs: int):
        """The job's operation offsets (``npairs + 1``, on the device) from
        the counts of ``entries``' pairs put at their ranks; the pairs not
        among them count none."""
        cp = self.cp
        counts = cp.zeros(npairs + 1, cp.int64)
        for ops in entries:
            n = len(ops.ranks)
            if n:
                mod.get_function("counts_at_ranks")(
                    (-(-n // THREADS),), (THREADS,), (ops.offsets, ops.ranks, np.int32(n), counts))
        offsets = cp.cumsum(counts)
        del counts
        return offsets

    # running --------------------------------------------------------------
    def prepare(self, job: Job) -> dict:
        self._compile_ahead(job)
        return self._state(job)

    def _state(self, job: Job) -> dict:
        if self._states.get("job") is job:
            return self._states["state"]
        cp = self.cp
        codes, offsets, col_base = job.joined()
        with self.device:
            state = {"codes": cp.asarray(codes), "offsets": cp.asarray(offsets),
                     "col_base": col_base,
                     "matrix": cp.asarray(job.scoring.kernel_matrix.astype(np.int32)),
                     "q2": cp.asarray(stride2_prefix(job.col_set.lengths)),
                     "row_order": cp.asarray(job.rows.order.astype(np.int64)),
                     "col_order": cp.asarray(job.col_set.order.astype(np.int64))}
        self._states = {"job": job, "state": state}
        return state

    def _plan(self, job: Job, w: Window) -> LayoutPlan:
        """The host's plan of a window's launch (:mod:`.gpu_layout`): sizes from
        lengths alone, so that fitting windows to memory needs no device work;
        kept for the window's launch."""
        plan = self._job_plans(job).get(w)
        if plan is None:
            plan = self._plans[w] = self._plan_for(job, w, job.traceback)
        return plan

    def _plan_for(self, job: Job, w: Window, traceback: bool,
                  operations: bool | None = None) -> LayoutPlan:
        """A window's plan for kernels with or without traceback (operation
        slots with traceback, or as ``operations`` says)."""
        limit = WIDE_STEPS if traceback else WIDE_STEPS_SCORE_ONLY
        if not _profile_fits(job.scoring.kernel_matrix):
            limit = None
        pack = (PACKED_TRACEBACK if traceback else PACKED) and limit is not None
        plan = _PLANNER["plan"] if PLAN_IN_NUMBA else plan_window
        lengths = self._job_plans(job)["lengths"]
        return plan(lengths, w,
                    traceback=traceback, wide_steps=limit,
                    fits16=packs(job, lengths, w, traceback,
                                 self._plan_multiprocessors()) if pack else None,
                    score_bytes=job.score_dtype(w).itemsize,
                    couples_per_warp=32 // _pack_shape(traceback, job.mode)[1],
                    couple_stripes=PACK_ROWS_TRACEBACK // STRIPE,
                    query_band=self._query_band(job, traceback) if pack else 0,
                    query_block=_query_block(traceback), operations=operations)

    @staticmethod
    def load_planner(windows: int) -> None:
        """Plan in numba from now on (:data:`PLAN_IN_NUMBA`) where a run of
        this many windows starts: its planner is imported and compiled, or
        loaded from numba's cache, here. Where numba cannot make it, NumPy's
        plans the same windows (the error kept as ``failed``)."""
        load = GPUBackend.planner_loader(windows)
        if load is not None:
            load()

    @staticmethod
    def planner_loader(windows: int) -> Callable[[], None] | None:
        """What :meth:`load_planner` does for a run of this many windows, or
        None where it has nothing to do (a short run, a planner loaded or
        failed, PLAN_IN_NUMBA off). The engine calls it on its numba start
        thread as a run's windows start, and starts none for None."""
        if (not PLAN_IN_NUMBA or windows < PLAN_IN_NUMBA_WINDOWS
                or _PLANNER["plan"] is not plan_window or "failed" in _PLANNER):
            return None
        return _load_planner

    def _job_plans(self, job: Job) -> dict:
        """One job's plans at a time: its lengths, its windows' plans (by
        window, until launched) and ``sizes`` (window -> bytes, exact or
        bound, of every window fitted)."""
        if self._plans.get("job") is not job:
            self._plans = {"job": job, "sizes": {},
                           "lengths": JobLengths.of(job.rows.lengths, job.col_set.lengths)}
        return self._plans

    @staticmethod
    def _query_band(job: Job, traceback: bool | None = None) -> int:
        """Rows of a band of the packed kernel where the job's windows pack
        query couples (see QUERY_COUPLES), else 0; for the kernels with
        traceback or without (by default, as the job runs)."""
        if traceback is None:
            traceback = job.traceback
        rows, group = _pack_shape(traceback, job.mode)
        modes = QUERY_COUPLE_MODES_TRACEBACK if traceback else QUERY_COUPLE_MODES
        on = (QUERY_COUPLES and job.mode in modes
              and not (traceback and job.mode == "semiglobal")  # no such kernel
              and _query_profile_bytes(job.scoring.kernel_matrix.shape[0], rows, group)
              <= QUERY_PROFILE_BYTES)
        return rows * group if on else 0

    def _layout(self, job: Job, state: dict, plan: LayoutPlan, a: dict, stream, mod,
                traceback: bool | None = None):
        """A window's pairs (on the device, in ``a["rows"]`` and ``a["cols"]``)
        in launch order, and each one's share of the buffers (see ``align.cu``
        for the layouts), in the carved arrays ``a``: the host's plan uploaded,
        then expanded by ``layout_pairs`` of the window's module ``mod`` on
        ``stream``, ahead of the fill (the caller makes ``stream`` current);
        nothing waits. ``traceback``: whether the plan's kernels write
        traceback words (by default, as the job runs). Returns the device
        arrays the kernels read: ``off``, ``boff``, ``warp_m``, ``op_off``
        (None without operation slots) and ``couple_warps``."""
        npairs, nwide = plan.npairs, plan.nwide
        seg, warp_off, warp_boff, warp_m, ops, couple_warps = self._upload(
            _uploads(plan), a["upload"], stream)
        rows, cols, off, boff = a["rows"], a["cols"], a["off"], a["boff"]
        off[nwide:].data.copy_from_device_async(warp_off.data, warp_off.nbytes, stream)
        boff[nwide:].data.copy_from_device_async(warp_boff.data, warp_boff.nbytes, stream)
        op_off = a.get("op_off")
        if op_off is not None:
            op_off[npairs:].data.copy_from_device_async(ops.data, ops.nbytes, stream)
        if npairs:
            mod.get_function("layout_pairs")(
                (-(-npairs // THREADS),), (THREADS,),
                (seg, np.int32(len(plan.segments)), np.int32(npairs), np.int32(nwide),
                 np.int32(state["col_base"]), state["offsets"], state["q2"],
                 np.int32(4 // plan.score_bytes),
                 np.int32(job.traceback if traceback is None else traceback),
                 np.int32(op_off is not None), rows, cols, off, boff,
                 op_off if op_off is not None else off))
        return {"off": off, "boff": boff, "warp_m": warp_m, "op_off": op_off,
                "couple_warps": couple_warps}

    def run_window(self, job: Job, state: dict, w: Window) -> PairBatch:
        return next(self.run_windows(job, state, [w]))

    def run_windows(self, job: Job, state: dict, windows: Iterable[Window],
                    depth: int | None = None) -> Iterator[PairBatch]:
        """Results of ``windows``, in order, with up to ``depth`` (default
        :data:`DEPTH`) windows in flight.

        Each window runs on its own CUDA stream: the tail of one (its longest
        pairs) overlaps the next, and the host's decoding of one overlaps the
        kernels of the next. A window's slot takes the next window as soon as
        its results are copied out of it on the device (:meth:`_detach`),
        before the host downloads them (:meth:`_fetch`): the device always
        has the next window queued while the host downloads. The slot that
        takes the next window is the first to end, not the oldest
        (:meth:`_first_done`): a window that holds long pairs runs on while
        the slot beside it takes window after window; the results of those
        wait for it, so that they come out in order.
        """
        depth = DEPTH if depth is None else depth
        with self.device:
            streams = self._window_streams(depth)
            free = streams[::-1]  # slots without a window, the next one last
            self._spans = []
            self.window_spans = []
            self._origin = self.cp.cuda.Event()
            self._origin.record(streams[0])
            running: list[dict] = []  # launched, not detached, in launch order
            order: deque = deque()  # launched, not yet yielded, in launch order
            # id of a handle in order: its results, or (FETCH_THREAD) their future
            fetched: dict[int, PairBatch | Future] = {}
            fetcher = self._fetch_thread() if FETCH_THREAD and EARLY_SLOT_REUSE else None

            def first_detached() -> dict:
                h = self._first_done(running)
                running.remove(h)
                return self._detach(job, h)

            def fetch(done: dict) -> None:
                if fetcher is None:
                    fetched[id(done["h"])] = self._fetch(job, done, self._host_stream())
                    return
                ahead = [f for f in fetched.values() if isinstance(f, Future) and not f.done()]
                if len(ahead) >= FETCH_AHEAD:
                    t = time.perf_counter()
                    ahead[0].exception()  # the oldest (dicts keep their order)
                    self._add("fetch_wait", time.perf_counter() - t)
                fetched[id(done["h"])] = fetcher.submit(self._fetch_on_thread, job, done)

            def in_order(wait: bool = False) -> Iterator[PairBatch]:
                while order and id(order[0]) in fetched:
                    got = fetched[id(order[0])]
                    if isinstance(got, Future):
                        if not (wait or got.done()):
                            return
                        got = got.result()
                    del fetched[id(order.popleft())]
                    yield got

            try:
                for w in windows:
                    done = None
                    if not free:
                        done = first_detached()
                        free.append(done["h"]["slot"])
                        if not EARLY_SLOT_REUSE:
                            fetch(done)
                            done = None
                    t = time.perf_counter()
                    h = self._launch(job, state, w, free.pop())
                    running.append(h)
                    order.append(h)
                    self._add("launch", time.perf_counter() - t)
                    if done is not None:
                        fetch(done)
                    yield from in_order()
                while running:
                    fetch(first_detached())
                    yield from in_order()
                yield from in_order(wait=True)
            finally:
                # downloads still running on the fetch thread end first (a run
                # left early leaves their results unread)
                for f in fetched.values():
                    if isinstance(f, Future):
                        f.exception()
                # a run left early (an error, or its consumer gone) may have
                # windows in flight: they read the slots' pinned uploads, which
                # the next run rewrites, and copies out of the slots may be
                # queued on the host stream, so both finish first. Otherwise
                # the slots' streams do (idle after a whole run) where their
                # blocks go back to the host stream's arena, whose work could
                # take them at once (SLOTS_IN_HOST_ARENA).
                finish = ([*streams, self._host_stream()] if running or self._slot_free
                          else streams if SLOTS_IN_HOST_ARENA else [])
                for s in finish:
                    try:
                        s.synchronize()
                    except Exception:  # the device's own error is already on its way
                        pass
                self._slot_free = {}
                self._slots = {}
                # counted for a run left early too: a window that failed on
                # the device ends the engine's stream of windows, and the
                # next one is a new run
                if self._spans:
                    spans = np.array(self._spans)
                    self._add("gpu_span", float(spans[:, 1].max()))
                    self._add("gpu_busy", _covered(spans))

    def _fetch_thread(self):
        """The backend's fetch thread (FETCH_THREAD): an executor of one
        thread, made at its first run, kept for the next runs."""
        if self._fetcher is None:
            from concurrent.futures import ThreadPoolExecutor

            self._fetcher = ThreadPoolExecutor(1, thread_name_prefix="pairalign-fetch")
        return self._fetcher

    def _fetch_on_thread(self, job: Job, done: dict) -> PairBatch:
        """:meth:`_fetch` on the fetch thread, on a stream of its own: CuPy's
        current device and stream are a thread's own."""
        with self.device:
            if self._fetch_stream is None:
                self._fetch_stream = self._priority_stream()
            return self._fetch(job, done, self._fetch_stream)

    def _first_done(self, running: list[dict]) -> dict:
        """The window of ``running`` (launch order) that ends first: the oldest
        of those already done, else the first to finish (the host polls their
        events); the oldest without :data:`FIRST_DONE_FIRST`."""
        if not FIRST_DONE_FIRST or len(running) == 1:
            return running[0]
        t = time.perf_counter()
        while True:
            for h in running:
                if h["ev"][2].done:
                    self._add("wait", time.perf_counter() - t)
                    return h
            time.sleep(POLL_SECONDS)

    def _bounded(self, job: Job) -> bool:
        """Whether the job's next window takes the bounded traceback
        (BOUNDED_TRACEBACK): local with traceback, an opening gap that costs,
        until the job's windows so far spent too much on it."""
        seen = self._bounded_seen
        return (BOUNDED_TRACEBACK and job.traceback and job.mode == "local"
                and job.scoring.gap_open > 0
                and not (seen[0] is job and seen[1] > BOUNDED_MAX_SHARE * seen[2]))

    def _launch(self, job: Job, state: dict, w: Window, stream,
                bounded: bool | None = None) -> dict:
        """Queue a window's kernels on ``stream``: with traceback, the full
        traceback or (``bounded``; by default as :meth:`_bounded` says) the
        bounded one. Returns what :meth:`_detach` needs."""
        cp = self.cp
        if bounded is None:
            bounded = self._bounded(job)
        dtype = job.score_dtype(w)
        mod = self._module(dtype, job.mode_code)
        h = {"w": w, "mod": mod, "ev": [cp.cuda.Event() for _ in range(5)],
             "slot": stream, "bounded": bounded}
        with stream:
            freed = self._slot_free.pop(stream.ptr, None)
            if freed is not None:  # the slot's last results still being copied out
                stream.wait_event(freed)
            h["ev"][3].record()
            t = time.perf_counter()
            plan = self._plan(job, w)
            # before this window's plan leaves
            floor = self._reserved_bytes(job) or self._job_slot_bytes(job)
            self._plans.pop(w)
            if bounded:  # the score pass's plan, in the memory of the full one
                slot = max(window_bytes(plan, True), floor)
                plan = self._plan_for(job, w, False, operations=True)
                arrays = bounded_arrays(plan, slot, int(self._row_spans(job, w)[2].sum()))
            else:
                arrays = window_arrays(plan, job.traceback)
            a = self._slot_memory(stream, arrays, floor)
            self._add("alloc", time.perf_counter() - t)
            t = time.perf_counter()
            traceback = job.traceback and not bounded  # the fill's
            lay = self._layout(job, state, plan, a, stream, mod, traceback)
            self._add("layout", time.perf_counter() - t)
            h["rows"], h["cols"], h["npairs"] = a["rows"], a["cols"], plan.npairs
            h["col_base"] = state["col_base"]
            for k in ("score", "ei", "ej", "code", "len", "qb", "tb", "nops", "ident", "alen",
                      "status", "counters"):
                if k in a:
                    h[k] = a[k]
            if job.traceback:
                h["off"] = lay["op_off"]
            h["ev"][0].record()
            t = time.perf_counter()
            self._fill(job, state, plan, a, lay, mod, dtype, traceback, h["ev"][4])
            if "chains" in a:  # held until the window ends
                h["chains"] = a["chains"]
            if bounded:
                h["ev_bounded"] = self._bounded_passes(job, state, a, mod, dtype)
            h["ev"][1].record()
            if traceback:
                sc = job.scoring
                # the packed pairs: fill2 walked them, or walk_ckpt does
                checkpointed = _checkpointed(job.mode)
                first = plan.npack if FUSED_WALK or checkpointed else 0
                if checkpointed and plan.npack:
                    a["next"].fill(0)
                    # its lanes take pairs as they go: enough blocks to fill the device
                    threads = _walk_checkpoint_threads()
                    blocks = min(-(-plan.npack // threads),
                                 4 * self.multiprocessors)
                    mod.get_function(f"walk_ckpt<{job.mode_code}>")(
                        (blocks,), (threads,),
                        (state["codes"], state["offsets"], a["rows"], a["cols"],
                         np.int32(plan.npack),
                         np.int32(2 * plan.couple_warps[plan.query_warps]),
                         a["words"], lay["off"], state["matrix"],
                         np.int32(sc.kernel_matrix.shape[0]), np.int32(sc.gap_open),
                         np.int32(sc.gap_extend), h["score"], h["ei"], h["ej"],
                         *self._walk_arrays(a, lay), a["next"]))
                if plan.npairs > first:
                    mod.get_function(f"walk<{job.mode_code}>")(
                        (-(-(plan.npairs - first) // THREADS),), (THREADS,),
                        (state["codes"], state["offsets"], a["rows"], a["cols"],
                         np.int32(plan.npairs), np.int32(plan.nwide), np.int32(plan.npack),
                         np.int32(2 * plan.couple_warps[plan.query_warps]),
                         a["words"], lay["off"], lay["warp_m"], state["matrix"],
                         np.int32(sc.kernel_matrix.shape[0]), np.int32(sc.gap_open),
                         np.int32(sc.gap_extend), h["score"], h["ei"], h["ej"],
                         *self._walk_arrays(a, lay), np.int32(first)))
            elif bounded:
                self._walk_boxes(job, state, a, lay, mod)
            h["ev"][2].record()
            self._add("enqueue", time.perf_counter() - t)
        return h

    def _fill(self, job: Job, state: dict, plan: LayoutPlan, a: dict, lay: dict, mod,
              dtype, traceback: bool, wide_done) -> None:
        """Queue a window's fill kernels (scores of ``dtype``, with ``traceback``
        or score-only) on the current stream: the packed pairs, then the wide
        ones, then (after ``wide_done`` is recorded) the narrow ones."""
        sc = job.scoring
        npairs, nwide, npack = plan.npairs, plan.nwide, plan.npack
        d_row, d_col = a["rows"], a["cols"]
        bnd_h, bnd_f, tb = a["bnd_h"], a["bnd_f"], a["words"]
        tb_flag = "true" if traceback else "false"
        K = sc.kernel_matrix.shape[0]
        gaps = (np.int32(sc.gap_open), np.int32(sc.gap_extend), np.int32(NEG[dtype]))
        rows, group = _pack_shape(traceback, job.mode)
        nwarps, nq = plan.couple_warps.size - 1, plan.query_warps
        if nwarps:  # a couple per group; a profile a warp, or a block (_pack_shared_bytes)
            threads = _pack_threads(traceback)
            warps = threads // 32
            pack_shared = _pack_shared_bytes(K, rows, group, traceback, nq > 0)
            # with traceback, where its groups walk their pairs (FUSED_WALK),
            # what walk writes; else never read
            walks = self._walk_arrays(a, lay) if traceback else (a["score"],) * 8
            self._function(mod, f"fill2<{job.mode_code},{tb_flag}>", pack_shared)(
                (-(-nwarps // warps),), (threads,),
                (state["codes"], state["offsets"], d_row, d_col, lay["couple_warps"],
                 np.int32(nwarps), np.int32(nq),
                 state["matrix"], np.int32(K), *gaps, bnd_h, bnd_f, lay["boff"], tb,
                 lay["off"], a["score"], a["ei"], a["ej"], *walks), shared_mem=pack_shared)
        # the other pairs: every per-pair array from the first one not packed
        args = (state["codes"], state["offsets"], d_row[npack:], d_col[npack:],
                np.int32(npairs - npack), np.int32(nwide - npack), state["matrix"],
                np.int32(K), *gaps, bnd_h, bnd_f, tb, lay["off"][npack:],
                lay["boff"][npack:], lay["warp_m"], a["score"][npack:],
                a["ei"][npack:], a["ej"][npack:])
        # a block holds 8 // ww wide pairs (ww warps each, or ww // 8 blocks a
        # pair) or 256 narrow ones
        ww = plan_wide_warps(plan, self._job_plans(job)["lengths"],
                             self._plan_multiprocessors())
        wide_blocks = -(-(nwide - npack) * ww // 8)
        narrow_blocks = -(-(npairs - nwide) // THREADS)
        # a query profile per warp, then (ww > 1) the warps' band counts and bests
        wide_shared = 8 * K * 32 * 8 + (4 * 8 * 4 if ww > 1 else 0)
        narrow_shared = 32 * 32 * 4   # the matrix
        fill = self._function(mod, f"fill<{job.mode_code},{tb_flag}>", wide_shared)
        # pairs over blocks: their band counts, bests and warps done, all -1
        # (held with the window's arrays until it ends)
        chains = a["score"]
        if ww > 8 and wide_blocks:
            chains = a["chains"] = self.cp.full((nwide - npack) * (4 * ww + 1), -1, np.int32)
        # wide pairs first, alone: the narrow (short) ones after them
        if wide_blocks:
            fill((wide_blocks,), (THREADS,), args + (np.int32(0), np.int32(ww), chains),
                 shared_mem=wide_shared)
        wide_done.record()
        if narrow_blocks:
            fill((narrow_blocks,), (THREADS,),
                 args + (np.int32(wide_blocks), np.int32(ww), chains), shared_mem=narrow_shared)

    @staticmethod
    def _walk_arrays(a: dict, lay: dict) -> tuple:
        """A window's arrays that its walks write, in the kernels' order: the
        operations' slots and their offsets, then each pair's begins,
        operation count, identities and length."""
        return (lay["op_off"], a["code"], a["len"], a["qb"], a["tb"], a["nops"], a["ident"],
                a["alen"])

    def _bounded_passes(self, job: Job, state: dict, a: dict, mod, dtype) -> list:
        """Queue, after a window's score pass, the reverse pass and the fill of
        each pair's box (BOUNDED_TRACEBACK; the kernels in ``align.cu``), on
        the window's side stream where BOUNDED_PRIORITY says (the window's
        stream waits for them). Returns the events recorded after the score
        pass, after the reverse pass and after the layout of the boxes."""
        cp = self.cp
        window = cp.cuda.get_current_stream()
        events = [cp.cuda.Event() for _ in range(3)]
        events[0].record()
        if not BOUNDED_PRIORITY:
            self._queue_bounded(job, state, a, mod, dtype, events)
            return events
        side = self._side_stream(window)
        side.wait_event(events[0])
        with side:
            self._queue_bounded(job, state, a, mod, dtype, events)
            done = cp.cuda.Event()
            done.record()
        window.wait_event(done)
        return events

    def _queue_bounded(self, job: Job, state: dict, a: dict, mod, dtype, events: list) -> None:
        """Queue :meth:`_bounded_passes`' kernels on the current stream,
        recording ``events[1]`` and ``events[2]``."""
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        sc = job.scoring
        n = len(a["score"])
        K = sc.kernel_matrix.shape[0]
        gaps = (np.int32(sc.gap_open), np.int32(sc.gap_extend))
        for k in ("status", "counters", "item_s", "item_m", "counts"):
            cp.cuda.runtime.memsetAsync(a[k].data.ptr, 0, a[k].nbytes, stream.ptr)
        if not n:
            for ev in events[1:]:
                ev.record()
            return
        grid = (-(-n // THREADS),)
        # the pairs by score, highest first: a warp's pairs take about as long
        order = cp.argsort(-a["score"])
        cp.cumsum(a["ej"], dtype=cp.int64, out=a["ej_sum"])
        lanes = max(n // BOUND_PAIRS_PER_LANE, 1)
        mod.get_function("bound_starts")(
            (-(-lanes // THREADS),), (THREADS,),
            (state["codes"], state["offsets"], a["rows"], a["cols"], order, np.int32(n),
             state["matrix"], np.int32(K), *gaps, a["score"], a["ei"], a["ej"], a["ej_sum"],
             a["scratch"], np.int64(BOUND_CELLS), a["box_i0"], a["box_j0"], a["counters"],
             a["counts"]))
        events[1].record()
        boxes = (np.int32(n), a["score"], a["ei"], a["ej"], a["box_i0"], a["box_j0"])
        wide_steps = self._box_wide_steps(job)
        mod.get_function("box_keys")(grid, (THREADS,),
                                     (*boxes, wide_steps, a["key"], a["counters"]))
        order = cp.argsort(a["key"])  # the wide boxes, then the narrow ones, longest first
        mod.get_function("box_items")(
            grid, (THREADS,),
            (np.int32(n), order, a["key"], *boxes[1:], a["item"], a["lane"], a["item_s"],
             a["item_m"], a["counts"]))
        mod.get_function("box_item_needs")(
            grid, (THREADS,), (np.int32(n), a["counts"], a["item_s"], a["item_m"], a["wneed"],
                               a["bneed"]))
        cp.cumsum(a["wneed"], out=a["wend"])
        cp.cumsum(a["bneed"], out=a["bend"])
        events[2].record()
        fill = self._function(mod, "fill_box", 8 * K * 32 * 8)
        args = (state["codes"], state["offsets"], a["rows"], a["cols"], order, np.int32(n),
                state["matrix"], np.int32(K), *gaps, np.int32(NEG[dtype]), a["score"],
                a["ei"], a["ej"], a["box_i0"], a["box_j0"], a["counts"], a["item_m"],
                a["wneed"], a["wend"], a["bneed"], a["bend"], np.int64(len(a["box_words"])),
                np.int64(len(a["box_bh"])), a["box_words"], a["box_bh"], a["box_bf"])
        fill((-(-n // 8),), (THREADS,), args + (np.int32(1), a["status"]),
             shared_mem=8 * K * 32 * 8)  # a warp a wide box, a query profile each
        fill(grid, (THREADS,), args + (np.int32(0), a["status"]),
             shared_mem=256 * 32 * 4)  # a thread a narrow box, the lane matrix

    @staticmethod
    def _box_wide_steps(job: Job) -> np.int32:
        """Column steps from which a box takes a warp (BOX_WIDE_STEPS, where
        the warp kernel's profile holds the matrix; none with WIDE_STEPS None)."""
        wide = (WIDE_STEPS is not None and BOX_WIDE_STEPS is not None
                and _profile_fits(job.scoring.kernel_matrix))
        return np.int32(BOX_WIDE_STEPS if wide else np.iinfo(np.int32).max)

    def _walk_boxes(self, job: Job, state: dict, a: dict, lay: dict, mod) -> None:
        """Queue the walk of each pair's box (BOUNDED_TRACEBACK)."""
        sc = job.scoring
        n = len(a["score"])
        if not n:
            return
        mod.get_function("walk_box")(
            (-(-n // THREADS),), (THREADS,),
            (state["codes"], state["offsets"], a["rows"], a["cols"], np.int32(n),
             state["matrix"], np.int32(sc.kernel_matrix.shape[0]), np.int32(sc.gap_open),
             np.int32(sc.gap_extend), a["score"], a["ei"], a["ej"], a["box_i0"], a["box_j0"],
             a["counts"], a["item"], a["lane"], a["item_m"], a["wneed"], a["wend"],
             a["box_words"], a["status"], *self._walk_arrays(a, lay)))

    def _detach(self, job: Job, h: dict) -> dict:
        """Wait for a launched window and copy its results out of its stream
        slot on the device, on the host stream, in input indices
        (``orient_pairs``: the engine's :func:`~pairalign.engine.to_input`
        on the device): the per-pair columns into one new block, the
        operations squeezed from their slots by ``compact_ops``. The slot's
        next window waits for that copy on the device, not the host. Returns
        what :meth:`_fetch` downloads."""
        cp = self.cp
        t_wait = time.perf_counter()
        h["ev"][2].synchronize()
        self._add("wait", time.perf_counter() - t_wait)
        if h["bounded"]:
            self._bounded_result(job, h)
        npairs = h["npairs"]
        host = self._host_stream()
        state = self._state(job)
        tb = job.traceback
        with host:
            t_host = time.perf_counter()
            names = ["query", "target", "score", "ei", "ej"]
            if tb:
                names += ["qb", "tb", "ident", "alen"]
            sizes = [8 * npairs if k in ("query", "target") else h[k].nbytes for k in names]
            starts, size = _carve(sizes)
            block = cp.empty(max(size, 1), cp.uint8)
            out = {k: cp.ndarray((npairs,), np.int64 if k in ("query", "target") else h[k].dtype,
                                 memptr=block.data + at) for k, at in zip(names, starts)}
            for k in ("score", "ident", "alen"):
                if k in h and k in out:
                    out[k].data.copy_from_device_async(h[k].data, h[k].nbytes, host)
            flip = cp.empty(npairs if tb else 1, cp.uint8)
            if npairs:
                qb, tb_ = (h["qb"], h["tb"]) if tb else (h["ei"], h["ej"])
                oqb, otb = (out["qb"], out["tb"]) if tb else (out["ei"], out["ej"])
                h["mod"].get_function("orient_pairs")(
                    (-(-npairs // THREADS),), (THREADS,),
                    (h["rows"], h["cols"], np.int32(npairs), np.int32(h["col_base"]),
                     state["row_order"], state["col_order"], np.int32(job.triangle),
                     np.int32(tb), qb, h["ei"], tb_, h["ej"], out["query"], out["target"],
                     oqb, out["ei"], otb, out["ej"], flip))
            if SORT_BY_RANK and not tb and npairs > 1:
                order = cp.argsort(self._pair_ranks(h["mod"], job, out["query"], out["target"]))
                out = {k: v[order] for k, v in out.items()}
            arrays = [out[k] for k in names]
            offs_h = kept = None
            if job.operations:
                # the operations, squeezed from their slots (bound n + m a pair)
                t_ops = time.perf_counter()
                if DEVICE_OP_OFFSETS:
                    offs = cp.zeros(npairs + 1, cp.int64)
                    if npairs:
                        offs[1:] = cp.cumsum(h["nops"], dtype=cp.int64)
                    total = int(offs[-1:].get(stream=host)[0])
                else:
                    offs_h = _offsets(self._download([h["nops"]])[0])
                    offs = cp.empty(offs_h.shape, offs_h.dtype)
                    offs.set(offs_h, stream=host)
                    total = int(offs_h[-1])
                code = cp.empty(total, cp.uint8)
                length = cp.empty(total, cp.int32)
                if npairs:
                    h["mod"].get_function("compact_ops")(
                        (-(-npairs * 32 // THREADS),), (THREADS,),
                        (h["off"], offs, np.int32(npairs), h["code"], h["len"], flip, code,
                         length))
                size = offs.nbytes + code.nbytes + length.nbytes + 8 * npairs
                if self._keeps(size):
                    ranks = self._pair_ranks(h["mod"], job, out["query"], out["target"])
                    kept = DeviceOps(self, offs, code, length, ranks)
                    self._kept += size
                else:
                    arrays += [code, length]
                self._add("compact", time.perf_counter() - t_ops)
            freed = cp.cuda.Event()
            freed.record(host)
            self._slot_free[h["slot"].ptr] = freed
        self._add("download", time.perf_counter() - t_host)
        return {"h": h, "arrays": arrays, "offs": offs_h, "kept": kept, "freed": freed,
                "offs_dev": offs if job.operations and offs_h is None else None}

    def _pair_ranks(self, mod, job: Job, query, target):
        """Each pair's rank in the job's input order (``pair_ranks``), on the
        device: the row-major index of (query, target), upper triangle or full."""
        n, npairs = len(job.rows), len(query)
        ranks = self.cp.empty(npairs, self.cp.int64)
        if npairs:
            mod.get_function("pair_ranks")(
                (-(-npairs // THREADS),), (THREADS,),
                (query, target, np.int32(npairs), np.int64(n),
                 np.int64(n if job.triangle else len(job.cols)), np.int32(job.triangle), ranks))
        return ranks

    def _bounded_result(self, job: Job, h: dict) -> None:
        """A bounded window, done: what its reverse pass and boxes took (for
        :meth:`_bounded`, and as ``bound_cells`` and ``box_cells``). Where its
        boxes' words did not fit its memory, or a box's end cell or score
        disagreed with the score pass (a check that must not fail: counted as
        ``bounded_mismatch``), the window runs again with the full traceback,
        waited for here, its handle taking the place of ``h``'s contents (the
        caller keeps ``h`` in launch order)."""
        status, counters = self._download([h["status"], h["counters"]])
        seen = self._bounded_seen if self._bounded_seen[0] is job else (job, 0, 0)
        self._bounded_seen = (job, seen[1] + int(counters.sum()), seen[2] + h["w"].cells)
        self._add("bound_cells", float(counters[0]))
        self._add("box_cells", float(counters[1]))
        if status.any():
            self._add("bounded_overflow" if status[0] else "bounded_mismatch", 1.0)
            again = self._launch(job, self._state(job), h["w"], h["slot"], bounded=False)
            again["ev"][2].synchronize()
            h.clear()
            h.update(again)

    def _fetch(self, job: Job, done: dict, stream) -> PairBatch:
        """Bring a detached window's results (:meth:`_detach`) to the host,
        through ``stream`` (after the detach's copies on the host stream)."""
        cp = self.cp
        h, arrays, offs_h = done["h"], done["arrays"], done["offs"]
        if done["offs_dev"] is not None:  # DEVICE_OP_OFFSETS: they come last
            arrays = [*arrays, done["offs_dev"]]
        npairs = h["npairs"]
        with stream:
            t_host = time.perf_counter()
            stream.wait_event(done["freed"])
            if PINNED_DOWNLOADS:
                got = self._download(arrays, stream)
            else:
                got = [a.get() for a in arrays]
            if done["offs_dev"] is not None:
                offs_h = got.pop()
            kept = done["kept"]
            if kept is None and job.operations:
                qb_h, tb_h, ident_h, alen_h, code_h, len_h = got[5:]
            else:  # operations kept on the device (offsets on the host), or none
                code_h, len_h = np.zeros(0, np.uint8), np.zeros(0, np.int32)
                if job.traceback:
                    qb_h, tb_h, ident_h, alen_h = got[5:]
                else:
                    qb_h = tb_h = ident_h = alen_h = constant_column(npairs, -1, np.int32)
                if not job.operations:
                    offs_h = constant_column(npairs + 1, 0, np.int64)
            cols = dict(query=got[0], target=got[1], score=got[2], query_begin=qb_h,
                        query_end=got[3], target_begin=tb_h, target_end=got[4],
                        identities=ident_h, length=alen_h, op_offsets=offs_h,
                        op_code=code_h, op_len=len_h)
            batch = (PairBatch(**cols) if kept is None
                     else DevicePairBatch(**cols, device_ops=kept))
        ev = h["ev"]
        self._add("download", time.perf_counter() - t_host)
        self._add("setup", cp.cuda.get_elapsed_time(ev[3], ev[0]) / 1e3)
        self._add("fill", cp.cuda.get_elapsed_time(ev[0], ev[1]) / 1e3)
        self._add("fill_wide", cp.cuda.get_elapsed_time(ev[0], ev[4]) / 1e3)
        self._add("traceback", cp.cuda.get_elapsed_time(ev[1], ev[2]) / 1e3)
        if "ev_bounded" in h:
            marks = [ev[0], *h["ev_bounded"], ev[1]]
            for name, x, y in zip(("score_pass", "bound_pass", "box_order", "box_fill"),
                                  marks, marks[1:]):
                self._add(name, cp.cuda.get_elapsed_time(x, y) / 1e3)
        self._add("cells", float(h["w"].cells))
        since = [cp.cuda.get_elapsed_time(self._origin, ev[k]) / 1e3 for k in (3, 2)]
        self._spans.append(since)
        self.window_spans.append((h["w"], *since))
        return batch
