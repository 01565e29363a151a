"""The ``pairalign`` command line (also ``python -m pairalign``).

Examples
--------
>>> from click.testing import CliRunner
>>> fasta = ">a\\nHEAGAWGHEE\\n>b\\nPAWHEAE\\n>c\\nHEAGAWGHEE\\n"
>>> res = CliRunner().invoke(main, ["all-vs-all", "-", "--no-traceback"], input=fasta)
>>> res.exit_code
0
>>> print(res.stdout, end="")
query	target	score	query_end	target_end
a	b	17	3	6
a	c	62	10	10
b	c	17	6	3
>>> res = CliRunner().invoke(main, ["all-vs-all", "-", "--gap-open", "1", "--gap-extend", "2"],
...                          input=fasta)
>>> res.exit_code, res.stderr.count("\\n")
(2, 1)
>>> res.stderr.startswith("pairalign: error: gap open (1) must be at least gap extend (2)")
True
"""

from __future__ import annotations

import click

from . import __version__
from .api import align_all, iter_all, plan_all
from .engine import format_plan, format_run_report
from .cli_options import (OneLineErrorGroup, exit_now, handle_errors, run_kwargs,
                          run_options, scoring_kwargs, scoring_options)
from .errors import InputError, OptionError
from .output import atomic_outputs, pair_mask, write_npy, write_tsv


@click.group(cls=OneLineErrorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="pairalign")
def main() -> None:
    """Exact pairwise alignment of many sequences (global, semiglobal or local;
    affine gaps; any substitution matrix), on GPUs or CPUs.

    Bad input or options: one line on stderr and exit status 2.
    """


def _check_output_options(output: str, fmt: str, no_traceback: bool, cigar_m: bool,
                          min_score, min_identity, no_cigar: bool = False) -> None:
    """Refuse option combinations that cannot work before any time is spent."""
    if fmt == "npy":
        if output == "-":
            raise OptionError("--format npy needs a file: give -o PATH")
        tsv_only = [name for name, given in (("--min-score", min_score is not None),
                                             ("--min-identity", min_identity is not None),
                                             ("--cigar-m", cigar_m),
                                             ("--no-cigar", no_cigar)) if given]
        if tsv_only:
            raise OptionError(f"{', '.join(tsv_only)}: for --format tsv only "
                              f"(npy holds every pair's score)")
    if min_identity is not None and no_traceback:
        raise OptionError("--min-identity needs alignments: drop --no-traceback")
    if no_cigar and no_traceback:
        raise OptionError("--no-cigar: a score-only run (--no-traceback) has no CIGAR to drop")
    if cigar_m and (no_cigar or no_traceback):
        raise OptionError(f"--cigar-m: {'--no-cigar' if no_cigar else '--no-traceback'} "
                          f"writes no CIGAR")


@main.command("all-vs-all")
@click.argument("input", metavar="INPUT")
@click.option("-o", "--output", default="-", show_default=True, metavar="PATH",
              help="Output file ('-': standard output). Written to a temporary file "
                   "beside it and renamed when complete.")
@click.option("--format", "fmt", type=click.Choice(["tsv", "npy"]), default="tsv",
              show_default=True,
              help="tsv: one line per pair; npy: the n x n int32 score matrix "
                   "(numpy .npy; needs -o PATH; aligns scores only).")
@scoring_options
@click.option("--no-traceback", is_flag=True,
              help="Scores and end positions only (faster; TSV columns query target "
                   "score query_end target_end).")
@click.option("--cigar-m", is_flag=True, help="Write M for matches and mismatches, not =/X.")
@click.option("--no-cigar", is_flag=True,
              help="Alignments without their CIGAR: every TSV column but the last "
                   "(less memory and time; identities and coordinates are kept).")
@click.option("--min-score", type=int, default=None, metavar="INT",
              help="Keep the pairs scoring at least this.")
@click.option("--min-identity", type=click.FloatRange(0, 1), default=None, metavar="FRACTION",
              help="Keep the pairs whose identity (identical columns / alignment "
                   "columns, 0 to 1) is at least this.")
@click.option("--dry-run", is_flag=True,
              help="Print the plan (pairs, cells, windows per device, memory, predicted "
                   "time) and exit without aligning.")
@run_options
@handle_errors
def all_vs_all(input, output, fmt, no_traceback, cigar_m, no_cigar, min_score, min_identity,
               dry_run, **params) -> None:
    """Align every pair of sequences of INPUT (FASTA or FASTQ, plain or gzip;
    '-' for standard input).

    \b
    TSV columns, one line per pair i < j in input order, from i's side:
      query target score identity length query_start query_end
      target_start target_end cigar
    Starts are 0-based, ends exclusive; identity is identical columns /
    alignment length with 4 decimals; the CIGAR covers
    query[query_start:query_end] against target[target_start:target_end]
    (= match, X mismatch, I consumes the query, D the target; empty for an
    empty local alignment).
    """
    _check_output_options(output, fmt, no_traceback, cigar_m, min_score, min_identity,
                          no_cigar)
    if dry_run:
        params.pop("quiet", None)
        params.pop("cluster", None)
        run = {k: v for k, v in run_kwargs(params).items() if k not in ("progress", "client")}
        plan = plan_all(input, traceback=not no_traceback and fmt == "tsv",
                        **scoring_kwargs(params), **run)
        click.echo(format_plan(plan))
        return
    # an unwritable -o fails before aligning
    with atomic_outputs({"-o": output}, inputs=(input,)) as opened:
        handle = opened["-o"]
        if fmt == "npy":
            write_npy(handle, align_all(input, traceback=False, **scoring_kwargs(params),
                                        **run_kwargs(params)))
            return
        # pieces in input order: host memory stays bounded however many pairs;
        # the thresholds filter each window as it finishes, before the order
        run = run_kwargs(params)
        timings: dict = {}
        keep = (None if min_score is None and min_identity is None
                else lambda batch: pair_mask(batch, min_score, min_identity))
        parts = iter_all(input, traceback=not no_traceback, cigar=not no_cigar,
                         **scoring_kwargs(params), timings=timings, keep=keep, **run)
        for k, part in enumerate(parts):
            write_tsv(handle, part, use_m=cigar_m, header=k == 0)
    if run["progress"] is not None:  # a terminal that asked for no silence
        click.echo(format_run_report(timings), err=True)



# ---------------------------------------------------------------------------------
# pipelines: guide trees, read overlaps, query-against-targets search
# ---------------------------------------------------------------------------------

@main.command("tree")
@click.argument("input", metavar="INPUT")
@click.option("-o", "--output", default="-", show_default=True, metavar="PATH",
              help="Newick guide tree ('-': standard output), written atomically.")
@click.option("--distances", default=None, metavar="PATH",
              help="Also write the distance matrix here (relaxed PHYLIP, square).")
@click.option("--method", type=click.Choice(["upgma", "nj"]), default="upgma",
              show_default=True,
              help="UPGMA or neighbour joining (rooted at the midpoint), by scikit-bio.")
@click.option("--distance", type=click.Choice(["identity", "kimura", "score"]),
              default="identity", show_default=True,
              help="identity: 1 - identical columns / alignment columns; kimura: "
                   "-ln(1 - p - 0.2 p^2) of that p, capped at 5; score: "
                   "1 - S_ij / min(S_ii, S_jj) with S_ii the ungapped self score.")
@scoring_options(default_mode="global")
@run_options
@handle_errors
def tree_command(input, output, distances, method, distance, **params) -> None:
    """Guide tree (Newick) and distances (PHYLIP) of the sequences of INPUT,
    for progressive multiple alignment, e.g.
    clustalo -i INPUT --guidetree-in guide.nwk.

    Tip names are the FASTA ids, verbatim (quoted only when they hold Newick's
    special characters, as Clustal Omega reads them).
    """
    from .api import load
    from .pipelines.tree import guide_tree, write_distances, write_newick

    with atomic_outputs({"-o": output, "--distances": distances}, inputs=(input,)) as opened:
        records = load(input, params.get("alphabet"))
        quoted = [k for k, name in enumerate(records.ids) if "'" in name]
        if quoted:  # Newick's spelling of it ('x''y') stops Clustal Omega's reader
            k = quoted[0]
            raise InputError("an id holding ' cannot name a guide tree's tip that "
                             "Clustal Omega reads: rename the record",
                             source=records.source, record=k + 1, record_id=records.ids[k])
        dm, tree = guide_tree(records, method=method, distance=distance,
                              **scoring_kwargs(params), **run_kwargs(params))
        if distances is not None:
            write_distances(opened["--distances"], dm)
        write_newick(opened["-o"], tree)


@main.command("overlap")
@click.argument("reads", metavar="READS")
@click.option("-o", "--output", default="-", show_default=True, metavar="PATH",
              help="PAF output ('-': standard output), written atomically.")
@click.option("--min-overlap", type=click.IntRange(min=0), default=100, show_default=True,
              help="Minimum aligned length, on the shorter side.")
@click.option("--min-identity", type=click.FloatRange(0, 1), default=0.8,
              show_default=True, help="Minimum identity (PAF's matches / alignment columns).")
@scoring_options(default_mode=None)
@run_options
@handle_errors
def overlap_command(reads, output, min_overlap, min_identity, **params) -> None:
    """Overlaps between the DNA reads of READS, on both strands, as PAF.

    Every pair of reads is aligned semiglobally (end gaps free) with the other
    read and with its reverse complement; of the strands that pass the
    thresholds the better-scoring one is kept (+ on ties), classified as
    overlap (suffix-prefix) or containment. PAF: minimap2's 12 columns (target
    coordinates on the forward strand; matches count A, C, G, T against the
    same base, not N against N), then tp:A:S, AS:i:score and cg:Z:CIGAR.
    """
    from .pipelines.overlap import overlap_table, write_paf

    kwargs = {**scoring_kwargs(params), **run_kwargs(params)}
    with atomic_outputs({"-o": output}, inputs=(reads,)) as opened:
        table = overlap_table(reads, min_overlap=min_overlap, min_identity=min_identity,
                              **kwargs)
        write_paf(opened["-o"], table)


@main.command("search")
@click.argument("queries", metavar="QUERIES")
@click.argument("targets", metavar="TARGETS")
@click.option("-o", "--output", default="-", show_default=True, metavar="PATH",
              help="Output file ('-': standard output), written atomically.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="K",
              help="Keep the K best targets per query (by score; ties: target order).")
@click.option("--format", "fmt", type=click.Choice(["blast6", "tsv"]), default="blast6",
              show_default=True,
              help="blast6: BLAST tabular (outfmt 6; evalue NaN, bitscore = raw score); "
                   "tsv: pairalign's TSV with CIGAR.")
@scoring_options(default_mode="local")
@run_options
@handle_errors
def search_command(queries, targets, output, top, fmt, **params) -> None:
    """Align every query of QUERIES with every target of TARGETS (the
    alphabet detected from both: protein where either file reads as protein).

    \b
    blast6 columns: qseqid sseqid pident length mismatch gapopen qstart qend
    sstart send evalue bitscore (1-based, inclusive). E-values and bit scores
    are not computed: evalue is NaN and bitscore holds the raw score.
    Hits per query: highest score first, ties in target input order; an
    empty local alignment (score 0) is no hit and has no blast6 line.
    """
    from .pipelines.search import search, write_blast6, write_search_tsv

    if queries == targets == "-":
        raise OptionError("QUERIES and TARGETS cannot both be standard input ('-')")
    with atomic_outputs({"-o": output}, inputs=(queries, targets)) as opened:
        result, hits = search(queries, targets, top=top, **scoring_kwargs(params),
                              **run_kwargs(params))
        (write_blast6 if fmt == "blast6" else write_search_tsv)(opened["-o"], result, hits)


@main.command("warm")
@click.option("--backend", type=click.Choice(["auto", "cpu", "gpu"]), default="auto",
              show_default=True, help="auto: the GPU where CuPy sees one, else the CPU.")
@handle_errors
def warm_command(backend) -> None:
    """Compile and cache the kernels (numba's; with a GPU, CUDA's) that the
    other commands take, on a few small sequences, so that later runs start
    without compiling: run it once after installing, e.g. when building a
    container image."""
    from .warm import warm

    report = warm(backend)
    click.echo(f"pairalign: warm: {report.commands} commands on the {report.backend} in "
               f"{report.seconds:.1f} s; numba compiled {report.compiled} functions that "
               f"were not in its cache", err=True)


def run() -> None:
    """The ``pairalign`` program (its console script, and ``python -m
    pairalign``): :func:`main`, then :func:`~pairalign.cli_options.exit_now`,
    which skips the interpreter's teardown once the command is done. Tests and
    other Python callers use :func:`main` (click's ``standalone_mode``
    applies), which returns or raises ``SystemExit`` as usual."""
    try:
        main(prog_name="pairalign")
        code = 0
    except SystemExit as exc:
        code = exc.code
    exit_now(code)


if __name__ == "__main__":
    run()
