"""Click options shared by pairalign's commands, and their error handling."""

from __future__ import annotations

import functools
import sys

import click

from .errors import PairAlignError
from .kernels.conventions import MODES
from .scoring import MATRIX_NAMES

GAP_HELP = (
    "A gap of length k costs OPEN + (k - 1) * EXTEND (parasail, EMBOSS and Biopython's "
    "convention). BLAST's -gapopen o -gapextend e and scikit-bio pair_align's "
    "gap_cost=(o, e) charge o + k * e: pass --gap-open o+e --gap-extend e "
    "(BLAST's 11/1 is 12/1 here).")


def _compose(*decorators):
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


def scoring_options(default_mode: str = "local"):
    """--mode, --matrix, --match/--mismatch, --gap-open/--gap-extend, --alphabet."""
    return _compose(
        click.option("--mode", type=click.Choice(list(MODES)), default=default_mode,
                     show_default=True,
                     help="global (Needleman-Wunsch), semiglobal (end gaps free: "
                          "overlaps) or local (Smith-Waterman)."),
        click.option("--matrix", type=click.Choice(MATRIX_NAMES, case_sensitive=False),
                     default=None, help="Substitution matrix [protein: BLOSUM62; DNA: "
                                        "--match/--mismatch unless given]."),
        click.option("--match", type=int, default=None, help="DNA match score [2]."),
        click.option("--mismatch", type=int, default=None, help="DNA mismatch score [-3]."),
        click.option("--gap-open", type=int, default=None,
                     help="Cost of a gap's first position [protein 11, DNA 5]. " + GAP_HELP),
        click.option("--gap-extend", type=int, default=None,
                     help="Cost of each further gap position [protein 1, DNA 2]."),
        click.option("--alphabet", type=click.Choice(["protein", "dna"]), default=None,
                     help="Force the alphabet [detected from the residues]."),
    )


def run_options(f):
    """--backend, --threads, --devices, --max-memory, --window, --quiet."""
    return _compose(
        click.option("--backend", type=click.Choice(["auto", "cpu", "gpu"]), default="auto",
                     show_default=True, help="auto takes the GPU when CuPy sees one."),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="CPU cores to use [all]."),
        click.option("--devices", type=str, default=None, metavar="0,1,...",
                     help="GPU ordinals to use [the first]."),
        click.option("--max-memory", default="4G", show_default=True,
                     help="Memory budget for working buffers (e.g. 512M, 8G)."),
        click.option("--window", type=click.IntRange(min=16), default=None,
                     help="Window width in pairs, a multiple of 16 [sized from memory]."),
        click.option("--quiet", "-q", is_flag=True, help="No progress on stderr."),
    )(f)


def parse_devices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected GPU ordinals like 0,1 — got {text!r}",
                                 param_hint="--devices") from None


def handle_errors(f):
    """One line on stderr and exit status 2 for bad input or options; 130 on Ctrl-C;
    quiet exit when the reader of stdout goes away."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except PairAlignError as err:
            click.echo(f"pairalign: error: {err}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("pairalign: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(0)
        except MemoryError:
            click.echo("pairalign: error: out of memory: lower --max-memory or use "
                       "--no-traceback", err=True)
            sys.exit(2)
    return wrapper
