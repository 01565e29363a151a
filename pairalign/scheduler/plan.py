"""The plan of a run before it runs: pairs, cells, windows per device, memory
and a predicted time (``pairalign all-vs-all --dry-run``), and the report of
predicted against measured after a run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..job import Job
from . import cost as _cost
from .devices import label as _label
from .lpt import lpt_assign
from .windows import Window

DEFAULT_MAX_MEMORY = 4 << 30


@dataclass
class PlanWindow:
    """One window of a plan, after LPT assignment."""

    rank: int
    window: Window
    device: str
    bytes: int
    predicted_s: float | None


@dataclass
class DevicePlan:
    label: str
    description: str
    windows: int = 0
    pairs: int = 0
    cells: int = 0
    max_bytes: int = 0
    predicted_s: float | None = None


@dataclass(repr=False)
class Plan:
    """What a run would do: pairs, cells, windows per device, memory, predicted time.

    ``predicted_s`` is the makespan of the windows under LPT with the fitted
    cost model (``None`` without one); it leaves out reading, encoding and
    writing. :func:`format_plan` (``str(plan)``) prints it as a table.
    """

    mode: str
    traceback: bool
    sequences: tuple[int, int | None]
    backend: str
    max_memory: int
    width: int
    pairs: int
    cells: int
    windows: list[PlanWindow]
    devices: list[DevicePlan]
    predicted_s: float | None
    model: object | None
    memory_kind: str = "device"
    notes: list[str] = field(default_factory=list)
    workers: int = 1

    def __repr__(self) -> str:
        """A line: its windows are in :attr:`windows`, its table in ``str()``."""
        predicted = "" if self.predicted_s is None else f", predicted {self.predicted_s:.3g} s"
        return (f"<Plan {self.mode}{'' if self.traceback else ' score-only'}, "
                f"{self.pairs:,} pairs, {self.cells:,} cells, {len(self.windows):,} windows, "
                f"{self.backend}{predicted}>")

    def __str__(self) -> str:
        return format_plan(self)


def plan(job: Job, backend, max_memory: int = DEFAULT_MAX_MEMORY, width: int | None = None,
         *, model=None, calibrate=True) -> Plan:
    """The plan of a run of ``job`` on ``backend``, without running it.

    Windows are cut, ranked and balanced exactly as :func:`iter_windows` does;
    for a GPU they are also fitted to the first device's free memory. Each
    window's time comes from the cost model of this backend, mode and traceback
    (:mod:`pairalign.scheduler.cost`): the one given, else the samples of this
    process and of the cache file, else (``calibrate``, a bool or a
    :class:`~pairalign.scheduler.cost.CalibrationSpec`) a calibration run now,
    saved to the cache. LPT then assigns windows to devices in rank order, each
    to the device idle first.
    """
    from ..engine import _describe, prepare_work, window_memory  # the engine imports us

    work = prepare_work(job, backend, max_memory, width)
    first = work.workers[0]
    notes = []
    key = _cost.model_key(first, job)
    if model is None:
        model = _cost.get_model(key)
    if model is None and calibrate:
        spec = calibrate if isinstance(calibrate, _cost.CalibrationSpec) else None
        t0 = time.perf_counter()
        model = _cost.calibrate(first, job, spec, persist=False)
        kept = _cost.save(key)
        notes.append(f"cost model calibrated now ({model.samples} windows, "
                     f"{time.perf_counter() - t0:.1f} s), "
                     + (f"kept in {kept}" if kept is not None else
                        f"not kept: {_cost.cache_path()} cannot be written"))
        # calibration may change the CPU backend's threads: size for the job again
        first.fit_memory(job, max_memory)
    labels = [_label(b, k) for k, b in enumerate(work.workers)]
    devices = [DevicePlan(lab, _describe(b)) for lab, b in zip(labels, work.workers)]
    runs = [(rank, w) for rank, ws in enumerate(work.pieces) for w in ws]
    on_cpu = list(work.too_large)
    times = _cost.predict_windows(model, [w for _, w in runs])
    costs = times if times is not None else [float(w.cells) for _, w in runs]
    assign = lpt_assign(costs, len(work.workers), order=range(len(runs)))
    where = {}
    for d, ks in enumerate(assign.workers):
        for k in ks:
            where[k] = d
    out = []
    for k, (rank, w) in enumerate(runs):
        d = where[k]
        nbytes = window_memory(job, first, w)
        t = None if times is None else times[k]
        out.append(PlanWindow(rank, w, labels[d], nbytes, t))
        dp = devices[d]
        dp.windows += 1
        dp.pairs += w.pairs
        dp.cells += w.cells
        dp.max_bytes = max(dp.max_bytes, nbytes)
        if t is not None:
            dp.predicted_s = (dp.predicted_s or 0.0) + t
    if on_cpu:
        cpu = DevicePlan("cpu-fallback", "cpu fallback: pairs too large for the device")
        for rank, w in on_cpu:
            out.append(PlanWindow(rank, w, "cpu-fallback", 0, None))
            cpu.windows += 1
            cpu.pairs += w.pairs
            cpu.cells += w.cells
        devices.append(cpu)
        notes.append(f"{len(on_cpu)} blocks do not fit the device: they run on the CPU "
                     "(not predicted)")
    predicted = None if times is None else max((d.predicted_s or 0.0) for d in devices)
    return Plan(job.mode, job.traceback,
                (len(job.rows), None if job.triangle else len(job.cols)),
                ", ".join(dict.fromkeys(d.description for d in devices[:len(work.workers)])),
                max_memory, work.width, work.pairs, work.cells, out, devices, predicted, model,
                "device" if hasattr(first, "window_bytes") else "host", notes,
                len(work.workers))


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f}"


def _secs(t: float | None) -> str:
    return "-" if t is None else f"{t:.3g}"


def format_plan(p: Plan, max_rows: int = 24) -> str:
    """A plan as text: totals, one row per device, then the windows (``--dry-run``)."""
    rows, cols = p.sequences
    what = (f"{rows:,} sequences, all-vs-all" if cols is None
            else f"{rows:,} queries x {cols:,} targets")
    lines = [
        f"plan: {p.mode}{', traceback' if p.traceback else ', score only'}; {what}",
        f"backend: {p.backend}; {p.workers} worker(s); "
        f"window width {p.width}; memory budget {_mib(p.max_memory)} MiB",
        f"pairs {p.pairs:,}; cells {p.cells:.4g}",
    ]
    if p.model is not None:
        lines.append(f"cost model: {p.model}")
    else:
        lines.append("cost model: none (no calibration): no time predicted")
    if p.predicted_s is not None:
        lines.append(f"predicted time of the windows: {p.predicted_s:.3g} s "
                     f"(LPT makespan; reading and writing not included)")
    lines.append("")
    head = ("device", "windows", "pairs", "cells", f"max {p.memory_kind} MiB", "predicted s")
    table = [head] + [(d.label, f"{d.windows:,}", f"{d.pairs:,}", f"{d.cells:.4g}",
                       _mib(d.max_bytes), _secs(d.predicted_s)) for d in p.devices]
    table.append(("total", f"{len(p.windows):,}", f"{p.pairs:,}", f"{p.cells:.4g}", "",
                  _secs(p.predicted_s)))
    lines += _table(table)
    lines.append("")
    head = ("#", "parent", "rows", "cols", "pairs", "cells", f"{p.memory_kind} MiB", "device",
            "predicted s")
    shown = p.windows if len(p.windows) <= max_rows else (
        p.windows[:max_rows - 4] + [None] + p.windows[-3:])
    table = [head]
    for k, pw in enumerate(shown):
        if pw is None:
            table.append(("...",) + ("",) * (len(head) - 1))
            continue
        idx = k if k < max_rows - 4 or len(p.windows) <= max_rows else len(p.windows) - (len(shown) - k)
        w = pw.window
        table.append((str(idx), str(pw.rank), f"{w.r0}-{w.r1}", f"{w.c0}-{w.c1}",
                      f"{w.pairs:,}", f"{w.cells:.4g}", _mib(pw.bytes), pw.device,
                      _secs(pw.predicted_s)))
    lines += _table(table)
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines)


def _table(rows: list[tuple]) -> list[str]:
    widths = [max(len(str(r[c])) for r in rows) for c in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [str(v).ljust(widths[c]) if c == 0 else str(v).rjust(widths[c])
                 for c, v in enumerate(r)]
        out.append("  ".join(cells).rstrip())
    return out


def format_run_report(timings: dict) -> str:
    """One line per worker and a total: predicted against measured (after a run)."""
    sched = timings.get("scheduler")
    if not sched:
        return ""
    lines = []
    for w in sched["workers"]:
        pred = w.get("predicted_s")
        lines.append(f"{w['label']}: {w['windows']} windows, {w['cells']:.4g} cells, busy "
                     f"{w['busy_s']:.3g} s" + (f" (predicted {pred:.3g} s)" if pred is not None else "")
                     + (f", {w['failures']} failures" if w["failures"] else "")
                     + (", retired" if w["retired"] else ""))
    pred = timings.get("predicted")
    meas = timings.get("measured")
    total = f"windows: measured {meas:.3g} s" if meas is not None else "windows:"
    if pred is not None:
        total += f", predicted {pred:.3g} s"
    if sched.get("retries"):
        total += f"; {sched['retries']} windows retried after {sched['failures']} failures"
    lines.append(total)
    return "\n".join(lines)
