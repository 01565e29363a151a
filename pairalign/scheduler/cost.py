"""A fitted time model per window: ``t = c1 + c2*m + c3*n + c4*m*n``.

The form is CUDAlign 3.0's (t = c1 + c2 m + c3 n + c4 m n per device). Here
a window is the unit, and

- ``m`` is the window's number of pairs,
- ``n`` is its mean number of DP cells per pair (``cells / pairs``),

so ``m*n`` is the window's cells and ``c4`` is seconds per cell (1 / CUPS);
``c1`` is a fixed cost per window (launches, transfers, Python); ``c2`` a cost
per pair (results, traceback walks, decoding); ``c3`` grows with the size of
a typical pair whatever the number of pairs: the critical path of one thread
(GPU) or one task (CPU) aligning one pair, the tail of a launch.

The coefficients are fitted by least squares (``numpy.linalg.lstsq``) on
measured windows, constrained non-negative (a small active-set loop drops a
feature whose coefficient comes out negative and refits), from

- a calibration run (:func:`calibrate`): a few windows of a synthetic job,
  chosen so that ``m`` and ``n`` vary independently, each timed alone;
- every real run, which adds its windows' measured times (the time between a
  worker's consecutive results: with windows pipelined on streams that is the
  window's share of the device, not its latency).

Samples are kept per backend and device model, mode and traceback: in this
process, and on disk (``$PAIRALIGN_CACHE_DIR/cost.json``, by default
``~/.cache/pairalign/cost.json``) when a calibration saves them. The model
only predicts what it has seen: outside the sampled range it extrapolates
linearly, and a run's report shows predicted against measured.
"""

from __future__ import annotations

import json
import os
import platform
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..cache import cache_dir, write_atomically

#: Names of the coefficients, in order.
TERMS = ("c1", "c2*m", "c3*n", "c4*m*n")
#: Samples kept per key (the most recent).
MAX_SAMPLES = 512


def features(pairs, cells) -> np.ndarray:
    """Design matrix rows ``[1, m, n, m*n]`` for windows of ``pairs`` and ``cells``."""
    m = np.atleast_1d(np.asarray(pairs, dtype=np.float64))
    c = np.atleast_1d(np.asarray(cells, dtype=np.float64))
    n = np.divide(c, m, out=np.zeros_like(c), where=m > 0)
    return np.stack([np.ones_like(m), m, n, c], axis=1)


@dataclass
class CostModel:
    """Fitted coefficients ``c1..c4`` (seconds) and what they were fitted on."""

    coef: np.ndarray
    samples: int = 0
    #: root mean square relative error on the samples it was fitted on
    rel_error: float = float("nan")
    key: str = ""

    def predict(self, pairs, cells) -> np.ndarray:
        """Predicted seconds of windows (never negative)."""
        return np.maximum(features(pairs, cells) @ self.coef, 0.0)

    def predict_one(self, pairs: int, cells: int) -> float:
        return float(self.predict(pairs, cells)[0])

    def __str__(self) -> str:
        c = ", ".join(f"{t.split('*')[0]}={v:.3g}" for t, v in zip(TERMS, self.coef))
        cups = f"{1 / self.coef[3] / 1e9:.3g} GCUPS" if self.coef[3] > 0 else "no cell term"
        return (f"t = c1 + c2*m + c3*n + c4*m*n ({c}; {cups}; fitted on {self.samples} "
                f"windows, rms relative error {self.rel_error:.0%})")

    def to_dict(self) -> dict:
        return {"coef": [float(x) for x in self.coef], "samples": self.samples,
                "rel_error": self.rel_error, "key": self.key}


def fit(pairs: Sequence[float], cells: Sequence[float], seconds: Sequence[float],
        key: str = "") -> CostModel:
    """Least-squares fit of ``t = c1 + c2*m + c3*n + c4*m*n``, coefficients >= 0.

    Columns are scaled to unit maximum before solving (their ranges differ by
    many orders of magnitude). With fewer samples than terms, only the terms
    that the samples can determine are kept, the cell term first.
    """
    X = features(pairs, cells)
    t = np.asarray(seconds, dtype=np.float64)
    if len(t) != len(X):
        raise ValueError("pairs, cells and seconds differ in length")
    if len(t) == 0:
        raise ValueError("no samples to fit")
    scale = np.abs(X).max(axis=0)
    scale[scale == 0] = 1.0
    Xs = X / scale
    # relative errors matter (windows span orders of magnitude): weight by 1/t
    wts = 1.0 / np.maximum(t, max(float(t.max()) * 1e-6, 1e-9))
    active = [3, 0, 1, 2][:max(1, min(4, len(t)))]
    coef = np.zeros(4)
    while active:
        A = Xs[:, active] * wts[:, None]
        sol, *_ = np.linalg.lstsq(A, t * wts, rcond=None)
        if (sol >= 0).all():
            coef = np.zeros(4)
            coef[active] = sol
            break
        active.pop(int(np.argmin(sol)))
    coef = coef / scale
    pred = X @ coef
    # weights of the measured times favour the samples measured low, so the
    # fit runs low (12-20% on the H100s' pipelined windows): scaled so that
    # it gives the samples' total time, which the makespan is made of
    if pred.sum() > 0:
        coef = coef * (t.sum() / pred.sum())
        pred = X @ coef
    rel = float(np.sqrt(np.mean(((pred - t) * wts) ** 2)))
    return CostModel(coef, len(t), rel, key)


# ---------------------------------------------------------------------------------
# keys, the sample store, the cache file
# ---------------------------------------------------------------------------------

_LOCK = threading.Lock()
_STORE: dict[str, list[list[float]]] = {}
_DISK_LOADED: set[str] = set()


def backend_key(backend) -> str:
    """What a model is fitted for: the kind of backend and the device model."""
    own = getattr(backend, "cost_key", None)
    if isinstance(own, str):
        return own
    name = getattr(backend, "name", type(backend).__name__)
    if name == "cpu":
        return f"cpu:{getattr(backend, 'threads', '?')}t:{platform.machine()}:{os.cpu_count()}"
    try:
        desc = backend.describe()
    except Exception:
        desc = type(backend).__name__
    model = re.sub(r"^gpu \d+ ", "", desc)  # the device model, not its ordinal
    return f"{name}:{model}"


def model_key(backend, job) -> str:
    return f"{backend_key(backend)}|{job.mode}|{'traceback' if job.traceback else 'score'}"


def cache_path() -> Path:
    return cache_dir() / "cost.json"


def _read_cache() -> dict:
    try:
        return json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}


def _load(key: str) -> None:
    """Merge the cache file's samples of ``key`` into the store (once per process)."""
    if key in _DISK_LOADED:
        return
    _DISK_LOADED.add(key)
    disk = _read_cache().get(key, {}).get("samples", [])
    mine = _STORE.setdefault(key, [])
    seen = {tuple(s) for s in mine}
    mine[:0] = [s for s in disk if len(s) == 3 and tuple(s) not in seen]
    del mine[:-MAX_SAMPLES]


def record(key: str, samples: Sequence[tuple[float, float, float]]) -> None:
    """Add measured windows ``(pairs, cells, seconds)`` to ``key``'s samples."""
    good = [[float(p), float(c), float(s)] for p, c, s in samples if p > 0 and s > 0]
    if not good:
        return
    with _LOCK:
        _load(key)
        mine = _STORE.setdefault(key, [])
        mine.extend(good)
        del mine[:-MAX_SAMPLES]


def spread_bursts(samples: Sequence[tuple[float, float, float]],
                  windows: float = 4.0) -> list[tuple[float, float, float]]:
    """One worker's consecutive windows ``(pairs, cells, seconds)``, their time
    spread over bursts.

    A pipelined worker's windows are timed from one result to the next, and
    results come in bursts: a window that finished while an earlier one still
    ran is timed at almost nothing, and the earlier one at both; windows that
    run at once on the device share it, in whatever proportion. Weighted by
    ``1 / t`` (see :func:`fit`), the near-zero samples would say that cells
    cost nothing (on the H100s: 0.8 ms predicted for a 1.8 s run).
    Consecutive windows are grouped until a group's time reaches ``windows``
    mean windows' (a pipeline's depth or more), and its time is shared over
    its windows in proportion to their cells (a short last group joins the
    one before). The total time is kept.
    """
    rows = [(float(p), float(c), float(t)) for p, c, t in samples]
    if len(rows) < 2:
        return rows
    floor = windows * sum(t for _, _, t in rows) / len(rows)
    groups: list[list[tuple[float, float, float]]] = [[]]
    spent = 0.0
    for row in rows:
        groups[-1].append(row)
        spent += row[2]
        if spent >= floor:
            groups.append([])
            spent = 0.0
    last = groups.pop()
    if last:
        if groups:
            groups[-1].extend(last)
        else:
            groups.append(last)
    out = []
    for g in groups:
        total, cells = sum(t for _, _, t in g), sum(c for _, c, _ in g)
        out += [(p, c, total * c / cells if cells > 0 else total / len(g)) for p, c, _ in g]
    return out


def samples(key: str) -> list[list[float]]:
    with _LOCK:
        _load(key)
        return list(_STORE.get(key, []))


def save(key: str) -> Path | None:
    """Write ``key``'s samples and model to the cache file (best effort)."""
    path = cache_path()
    with _LOCK:
        _load(key)
        data = _read_cache()
        s = _STORE.get(key, [])
        entry = {"samples": s[-MAX_SAMPLES:], "saved": time.time()}
        if s:
            entry["model"] = fit(*zip(*s), key=key).to_dict()
        data[key] = entry
        text = json.dumps(data).encode()
        if not write_atomically(path, lambda h: h.write(text)):
            return None
    return path


def get_model(key: str, min_samples: int = 4) -> CostModel | None:
    """The model fitted on ``key``'s samples (this process's and the cache file's)."""
    s = samples(key)
    if len(s) < min_samples:
        return None
    p, c, t = zip(*s)
    return fit(p, c, t, key=key)


def clear(key: str | None = None) -> None:
    """Forget samples in this process (``key``, or all); the cache file stays."""
    with _LOCK:
        if key is None:
            _STORE.clear()
            _DISK_LOADED.clear()
        else:
            _STORE.pop(key, None)
            _DISK_LOADED.discard(key)


# ---------------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------------

_LETTERS = {"protein": "ACDEFGHIKLMNPQRSTVWY", "dna": "ACGT"}


@dataclass
class CalibrationSpec:
    """A synthetic job and its sample windows.

    ``count`` sequences of lengths falling evenly from ``longest`` to
    ``shortest``; windows of each width in ``widths`` (pairs: width squared) at
    the long end, the middle and the short end (mean cells per pair: the
    product of the lengths there).
    """

    count: int
    longest: int
    shortest: int
    widths: tuple[int, ...]
    regions: tuple[float, ...] = (0.0, 0.5, 1.0)
    seed: int = 7


#: What a calibration runs, per backend kind (GPUs need many pairs to fill).
SPECS = {
    "cpu": CalibrationSpec(256, 240, 30, (16, 32, 64)),
    "gpu": CalibrationSpec(4096, 400, 40, (256, 512, 1024)),
}


def calibration_job(job, spec: CalibrationSpec):
    """A synthetic all-vs-all job with ``job``'s mode, scoring and traceback."""
    from ..job import Job

    letters = np.frombuffer(_LETTERS.get(job.scoring.alphabet, "ACGT").encode(), np.uint8)
    rng = np.random.default_rng(spec.seed)
    lengths = np.linspace(spec.longest, spec.shortest, spec.count).astype(int)
    seqs = [rng.choice(letters, n).tobytes().decode() for n in lengths]
    # Job.create: a job's scoring may hold codes for its own letters only
    # (Scoring.for_residues)
    return Job.create(job.mode, job.scoring, job.traceback, seqs)


def calibration_windows(cjob, spec: CalibrationSpec):
    from .windows import make_window

    lengths = cjob.rows.lengths
    n = len(lengths)
    out = []
    for w in spec.widths:
        if 2 * w > n:
            continue
        for frac in spec.regions:
            r0 = int(round(frac * (n - 2 * w) / 16)) * 16
            out.append(make_window(lengths, lengths, r0, r0 + w, r0 + w, r0 + 2 * w, True))
    return out


def calibrate(backend, job, spec: CalibrationSpec | None = None, persist: bool = True,
              repeat: int = 1) -> CostModel:
    """Time sample windows of a synthetic job like ``job`` on ``backend``; fit; store.

    Each window runs alone (``run_window``), after a warm-up window (compilation
    excluded). The samples join those of real runs under the same key; with
    ``persist`` they are written to the cache file.
    """
    if spec is None:
        spec = SPECS.get(getattr(backend, "name", "cpu"), SPECS["cpu"])
    cjob = calibration_job(job, spec)
    wins = calibration_windows(cjob, spec)
    if not wins:
        raise ValueError("calibration spec yields no windows")
    from ..engine import fit_window

    if hasattr(backend, "fit_memory"):
        backend.fit_memory(cjob, 1 << 62)
    state = backend.prepare(cjob)
    # windows too large for the device are run as the pieces a real run would cut
    wins = [sub for w in wins for sub, fits in fit_window(cjob, backend, w) if fits]
    if not wins:
        raise ValueError("no calibration window fits the device")
    backend.run_window(cjob, state, min(wins, key=lambda w: w.cells))  # warm-up
    key = model_key(backend, job)
    got = []
    for _ in range(repeat):
        for w in wins:
            t0 = time.perf_counter()
            backend.run_window(cjob, state, w)
            got.append((w.pairs, w.cells, time.perf_counter() - t0))
    record(key, got)
    if persist:
        save(key)
    return get_model(key, min_samples=1)


def predict_windows(model: CostModel | None, windows) -> list[float] | None:
    if model is None:
        return None
    if not windows:
        return []
    return [float(x) for x in model.predict([w.pairs for w in windows],
                                            [w.cells for w in windows])]


@dataclass
class Measured:
    """Per-window measurements of one run (for the report and the model)."""

    pairs: list[int] = field(default_factory=list)
    cells: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, pairs: int, cells: int, seconds: float) -> None:
        self.pairs.append(pairs)
        self.cells.append(cells)
        self.seconds.append(seconds)
