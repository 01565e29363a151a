"""Click options shared by pairalign's commands, and their error handling.

A command reuses the scoring and run options and the error policy like this::

    @main.command("search")
    @click.argument("queries")
    @click.argument("targets")
    @scoring_options
    @run_options
    @handle_errors
    def search(queries, targets, **params):
        result = align_many(queries, targets, **scoring_kwargs(params),
                            **run_kwargs(params))

Error policy (:func:`handle_errors` inside a command, :class:`OneLineErrorGroup`
for click's own usage errors): bad input or options give ONE line on stderr,
``pairalign: error: <message>``, and exit status 2; Ctrl-C exits 130; a reader
of standard output that goes away (``pairalign ... | head``) ends the run
quietly with status 141 (128 + SIGPIPE, what a shell reports for ``yes | head``);
other I/O errors (disk full) give one line and status 1.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import signal
import sys
import threading
import warnings
from typing import Callable, Iterator, NoReturn

import click

from .backends import start_cuda
from .engine import _NUMBA, parse_memory
from .errors import DeviceError, PairAlignError, PairAlignWarning
from .kernels.conventions import MODES
from .matrices import MATRIX_NAMES, load_matrix
from .scoring import DNA_DEFAULTS, PROTEIN_DEFAULTS

#: Exit statuses.
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: Parameter names the option groups add (and :func:`scoring_kwargs` /
#: :func:`run_kwargs` take back out of a command's keyword arguments).
SCORING_PARAMS = ("mode", "matrix", "match", "mismatch", "gap_open", "gap_extend", "alphabet")
RUN_PARAMS = ("backend", "threads", "devices", "max_memory", "window", "quiet")

GAP_HELP = (
    "A gap of length k costs OPEN + (k - 1) * EXTEND (the convention of parasail, "
    "EMBOSS and Biopython). BLAST's -gapopen o -gapextend e and scikit-bio "
    "pair_align's gap_cost=(o, e) charge o + k * e: pass --gap-open o+e "
    "--gap-extend e (BLAST's 11/1 is --gap-open 12 --gap-extend 1).")


# ---------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------


def _one_line(message: str) -> str:
    return " ".join(str(message).split("\n")).strip()


def say(message: str) -> None:
    """``pairalign: <message>`` as one line on stderr."""
    click.echo(f"pairalign: {_one_line(message)}", err=True)


def fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    """``pairalign: error: <message>`` on stderr and exit (status 2 by default)."""
    say(f"error: {message}")
    sys.exit(status)


def skip_blas_probe() -> None:
    """Make numba skip its BLAS probe in this process.

    numba's first compilation or cache load in a process imports
    ``numba.np.arraymath``, which asks ``numba.np.linalg.ensure_blas`` whether
    ``np.dot`` can call BLAS, and that imports ``scipy.linalg`` where SciPy is
    installed. pairalign's numba functions use no BLAS, and the import costs:
    on Python 3.12 with SciPy, the command line on ``examples/adeno_fiber.faa``
    took 1.39-1.73 s with it and 1.07-1.12 s without (development machine, CPU
    backend). So ``arraymath`` is imported here with the probe answering "no
    BLAS" (for numba, in this process; SciPy itself imports normally). Only the
    command line does this (it owns its process); the API leaves numba alone.
    """
    try:
        import numba.np.linalg as linalg

        if "numba.np.arraymath" not in sys.modules:
            probe = linalg.ensure_blas

            def no_blas() -> None:
                raise ImportError("pairalign's command line uses no BLAS")

            linalg.ensure_blas = no_blas
            try:
                importlib.import_module("numba.np.arraymath")
            finally:
                linalg.ensure_blas = probe
    except (ImportError, AttributeError):  # another numba: it starts as it would
        pass


def start_numba() -> None:
    """Start numba now (:func:`skip_blas_probe`, then its first dispatch and
    threading layer)."""
    skip_blas_probe()
    _NUMBA.needed()


def start_numba_when_needed() -> None:
    """Start numba (as :func:`start_numba`) at its first use, not now.

    Importing pairalign does not import numba (its kernels are imported when
    first called). A GPU run first needs numba to place its first window's
    pairs (the device orients them), so numba starts on a thread once the
    run's windows start (:meth:`~pairalign.engine._NumbaGuard.start_soon`),
    while the GPU runs them, not before: starting numba holds the GIL, which
    CuPy's import and the run's planning need too.
    """
    _NUMBA.prepare = skip_blas_probe


def _quiet_broken_pipe() -> NoReturn:
    # Point stdout at /dev/null, so that the interpreter's final flush of what is
    # still buffered does not raise again (and print "Exception ignored ...").
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests)
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def exit_now(code: int | str | None) -> NoReturn:
    """End the process with ``code`` (as :func:`sys.exit` reads it) once the
    command is done: standard streams flushed, then :func:`os._exit`.

    What the interpreter's own exit would add is teardown only: finalising
    modules (numba's, CuPy's), freeing the device's and the pinned memory
    pools block by block, joining idle pool threads. On the H100 machine
    that was 0.2 s of the 2.2 s that the proteome's all-vs-all takes from the
    command line (0.4 s from the command's return to the process's end,
    against 0.2 s with ``os._exit``, where the driver still releases the
    device). Every output is complete by then (:func:`~pairalign.output.
    atomic_output` has synced and renamed it). A run that connected to a
    Dask cluster exits normally, so that its client says goodbye.
    """
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): the message, status 1
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except (OSError, ValueError, AttributeError):  # closed (None where never open)
        pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    if "distributed" in sys.modules:
        if code == EXIT_BROKEN_PIPE:
            _quiet_broken_pipe()
        sys.exit(code)
    os._exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as an interrupt is, so that
    every ``with`` block it crosses (:func:`~pairalign.output.atomic_output`'s
    removal of its temporary file among them) cleans up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminate(signum, frame) -> NoReturn:
    raise Terminated(signum)


@contextlib.contextmanager
def _terminations_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` while the block runs (in the
    main thread only: elsewhere signals cannot be handled); then the handlers
    are restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.signal(s, _terminate) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def handle_errors(f: Callable) -> Callable:
    """Decorate a command's body with pairalign's error policy.

    :class:`~pairalign.errors.PairAlignError` (``InputError``, ``OptionError``)
    gives one line ``pairalign: error: <message>`` on stderr and exit status 2
    (1 for a :class:`~pairalign.errors.DeviceError`);
    ``KeyboardInterrupt`` exits 130, SIGTERM and SIGHUP 143 and 129
    (:class:`Terminated`; after the ``with`` blocks they crossed,
    :func:`~pairalign.output.atomic_output` among them, have cleaned up); a
    broken pipe on stdout exits 141 without a word; ``MemoryError`` and other
    ``OSError`` (disk full) one line and status 2 and 1. Other exceptions are
    bugs and keep their traceback. A :class:`~pairalign.errors.PairAlignWarning`
    (a device's errors, a CPU fallback, a memory budget that holds fewer
    threads) is one line ``pairalign: warning: <message>``. numba starts first
    (:func:`start_numba`); for a run that may use a GPU, the CUDA driver
    starts on a thread (:func:`~pairalign.backends.start_cuda`) and numba
    once the run needs it (:func:`start_numba_when_needed`).
    """
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            if kwargs.get("backend") in ("auto", "gpu"):
                start_cuda(kwargs.get("devices"))  # overlaps CuPy's import
                start_numba_when_needed()
            else:
                start_numba()
            with warnings.catch_warnings(), _terminations_interrupt():
                shown = warnings.showwarning

                def show(message, category, *where, **kw):
                    if issubclass(category, PairAlignWarning):  # ours
                        say(f"warning: {message}")
                    else:
                        shown(message, category, *where, **kw)
                warnings.showwarning = show
                return f(*args, **kwargs)
        except DeviceError as err:  # the hardware's fault: as a disk's
            fail(str(err), status=1)
        except PairAlignError as err:
            fail(str(err))
        except Terminated as exc:
            say(f"terminated ({exc})")
            sys.exit(128 + exc.signum)
        except KeyboardInterrupt:
            say("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except MemoryError:
            fail("out of memory: lower --max-memory, or use --no-traceback")
        except OSError as err:
            where = f": {err.filename}" if getattr(err, "filename", None) else ""
            fail(f"{err.strerror or err}{where}", status=1)
    return wrapper


class OneLineErrorGroup(click.Group):
    """A click group whose usage errors (unknown option, bad value, missing
    argument) are one line ``pairalign: error: ...`` and exit status 2, like
    the errors :func:`handle_errors` reports; ``--help`` is unchanged."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as err:  # bare `pairalign`: the help
            err.show()
            sys.exit(err.exit_code)
        except click.UsageError as err:
            hint = f" (see '{err.ctx.command_path} --help')" if err.ctx is not None else ""
            fail(err.format_message() + hint, EXIT_USAGE)
        except click.ClickException as err:
            fail(err.format_message(), err.exit_code)
        except click.Abort:  # Ctrl-C outside a command body
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            _quiet_broken_pipe()
        sys.exit(rv if isinstance(rv, int) else 0)


# ---------------------------------------------------------------------------------
# option groups
# ---------------------------------------------------------------------------------


def _compose(decorators):
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


def _matrix_name(ctx, param, value):
    """A name of MATRIX_NAMES, or a matrix file read now (its errors before
    any sequence is read)."""
    if value is None:
        return None
    try:
        return load_matrix(value)[2]
    except PairAlignError as err:
        raise click.BadParameter(str(err)) from None


def _memory(ctx, param, value):
    try:
        return parse_memory(value)
    except PairAlignError as err:
        raise click.BadParameter(str(err)) from None


def _devices(ctx, param, value):
    return None if value is None else parse_devices(value)


def _window(ctx, param, value):
    if value is not None and (value <= 0 or value % 16):
        raise click.BadParameter(f"the window width must be a positive multiple of 16, "
                                 f"got {value}")
    return value


def parse_devices(text: str | None) -> list[int] | None:
    """GPU ordinals from ``"0,1"``.

    >>> parse_devices("0, 2")
    [0, 2]
    """
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"expected GPU ordinals like 0,1, got {text!r}",
                                 param_hint="'--devices'") from None
    if any(d < 0 for d in out) or len(set(out)) != len(out):
        raise click.BadParameter(f"expected distinct GPU ordinals >= 0, got {text!r}",
                                 param_hint="'--devices'")
    return out


def scoring_options(f: Callable | None = None, *, default_mode: str | None = "local"):
    """--mode, --matrix, --match/--mismatch, --gap-open/--gap-extend, --alphabet.

    Use as ``@scoring_options`` or ``@scoring_options(default_mode="global")``;
    ``default_mode=None``: no --mode (a command whose mode is fixed).
    :func:`scoring_kwargs` turns the parameters into ``align_*`` arguments.
    """
    p, d = PROTEIN_DEFAULTS, DNA_DEFAULTS
    mode = [] if default_mode is None else [
        click.option("--mode", type=click.Choice(list(MODES)), default=default_mode,
                     show_default=True,
                     help="global (Needleman-Wunsch), semiglobal (end gaps free on both "
                          "sequences: overlaps) or local (Smith-Waterman).")]
    decorate = _compose(mode + [
        click.option("--matrix", metavar="NAME|FILE", default=None, callback=_matrix_name,
                     help=f"Substitution matrix: {', '.join(MATRIX_NAMES)} (any case), or a "
                          "file in the NCBI format (BLAST's, EMBOSS's), symmetric, of whole "
                          "numbers. "
                          f"[default: protein {p['matrix']}; DNA --match/--mismatch]"),
        click.option("--match", type=int, default=None,
                     help=f"DNA match score (DNA only). [default: {d['match']}]"),
        click.option("--mismatch", type=int, default=None,
                     help=f"DNA mismatch score (DNA only). [default: {d['mismatch']}]"),
        click.option("--gap-open", type=click.IntRange(min=0), default=None, metavar="OPEN",
                     help="Cost of a gap's first position. " + GAP_HELP +
                          f" [default: protein {p['gap_open']}, DNA {d['gap_open']}]"),
        click.option("--gap-extend", type=click.IntRange(min=0), default=None,
                     metavar="EXTEND",
                     help="Cost of each further gap position (see --gap-open). "
                          f"[default: protein {p['gap_extend']}, DNA {d['gap_extend']}]"),
        click.option("--alphabet", type=click.Choice(["protein", "dna"]), default=None,
                     help="Force the alphabet. [default: detected from the residues]"),
    ])
    return decorate if f is None else decorate(f)


def run_options(f: Callable | None = None):
    """--backend, --threads, --devices, --max-memory, --window, --quiet.

    Use as ``@run_options``; :func:`run_kwargs` turns the parameters into
    ``align_*`` arguments.
    """
    decorate = _compose([
        click.option("--backend", type=click.Choice(["auto", "cpu", "gpu"]), default="auto",
                     show_default=True, help="auto takes the GPU when CuPy sees one."),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="CPU cores to use. [default: all]"),
        click.option("--devices", metavar="0,1,...", default=None, callback=_devices,
                     help="GPU ordinals to use, one worker each, windows taken in LPT "
                          "order. [default: every visible one]"),
        click.option("--max-memory", metavar="SIZE", default="4G", show_default=True,
                     callback=_memory,
                     help="Budget for the host's working buffers, e.g. 512M, 8G (the "
                          "CPU threads' traceback among them; a GPU's windows follow its "
                          "own free memory)."),
        click.option("--window", type=int, default=None, callback=_window,
                     help="Window width in pairs, a multiple of 16. "
                          "[default: sized from --max-memory]"),
        click.option("--cluster", metavar="tcp://HOST:PORT", default=None,
                     help="Run the windows as tasks of a Dask distributed scheduler."),
        click.option("--quiet", "-q", is_flag=True,
                     help="No progress on stderr (shown only on a terminal)."),
    ])
    return decorate if f is None else decorate(f)


def scoring_kwargs(params: dict) -> dict:
    """Take the scoring options out of ``params``: keyword arguments for
    :func:`pairalign.align_all` / :func:`pairalign.align_many`."""
    return {name: params.pop(name) for name in SCORING_PARAMS if name in params}


def run_kwargs(params: dict) -> dict:
    """Take the run options out of ``params``: keyword arguments for
    :func:`pairalign.align_all` / :func:`pairalign.align_many`, progress (a bar on a
    terminal's stderr, see :func:`pairalign.progress.terminal_progress`) and the
    Dask client included."""
    from .progress import terminal_progress

    out = {name: params.pop(name) for name in RUN_PARAMS if name in params}
    out["progress"] = terminal_progress(out.pop("quiet", False))
    cluster = params.pop("cluster", None)
    if cluster is not None:  # "" too: an unset $ADDR must not run locally unseen
        from .scheduler.distributed import connect

        out["client"] = connect(cluster)
    return out
