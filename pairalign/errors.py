"""Errors raised by pairalign for bad input or bad options, and its warnings."""

from __future__ import annotations


class PairAlignError(Exception):
    """Base class of the errors pairalign raises on purpose."""


class InputError(PairAlignError, ValueError):
    """Bad sequence input, located by file, record and position.

    Parameters
    ----------
    message : str
        What is wrong, in a few words.
    source : str, optional
        The file name (``"<stdin>"`` for standard input).
    record : int, optional
        1-based number of the record in the file.
    record_id : str, optional
        The record's identifier.
    position : int, optional
        1-based position in the sequence (or line number where stated).
    line : int, optional
        1-based line number in the file.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        record: int | None = None,
        record_id: str | None = None,
        position: int | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.record = record
        self.record_id = record_id
        self.position = position
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.source is not None:
            where.append(self.source)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.record is not None:
            rec = f"record {self.record}"
            if self.record_id:
                rec += f" ({self.record_id})"
            where.append(rec)
        if self.position is not None:
            where.append(f"position {self.position}")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class OptionError(PairAlignError, ValueError):
    """An option or parameter out of its allowed range."""


class DeviceError(PairAlignError, RuntimeError):
    """The devices failed and the run could not give every pair: a GPU lost
    with alignments that it alone held, or every GPU failing where no CPU
    fallback was allowed. A fault of the hardware, not of the input or the
    options (the command line exits with status 1)."""


class PairAlignWarning(RuntimeWarning):
    """Base class of pairalign's warnings: the results are complete and
    exact, but the run was slower than it could be (the command line shows
    each as one line ``pairalign: warning: ...``)."""


class DeviceErrorWarning(PairAlignWarning):
    """Windows failed on a device with an error other than running out of memory
    and ran again (on another device or the CPU): the results are complete and
    exact, but the device may be faulty and the run slower than it should be."""


class CPUFallbackWarning(PairAlignWarning):
    """Some windows of a device run ran on the CPU instead (pairs too large
    for the devices' memory even alone, or windows that failed on every device):
    the results are complete and exact, but those pairs were aligned at CPU
    speed."""


class MemoryBudgetWarning(PairAlignWarning):
    """The memory budget (``max_memory``, ``--max-memory``) holds the working
    buffers of fewer CPU threads than the run may use (long sequences with
    traceback: a CPU task holds its lanes' traceback at once), so it runs
    on fewer threads."""
