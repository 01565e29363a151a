"""The ``pairalign`` command line."""

from __future__ import annotations

import click

from . import __version__
from .api import align_all
from .cli_options import handle_errors, parse_devices, run_options, scoring_options
from .output import atomic_output, filter_pairs, write_npy, write_tsv


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pairalign")
def main() -> None:
    """Exact pairwise alignment of many sequences, on GPUs or CPUs."""


@main.command("all-vs-all")
@click.argument("input", metavar="INPUT")
@click.option("-o", "--output", default="-", show_default=True,
              help="Output file ('-' for standard output).")
@click.option("--format", "fmt", type=click.Choice(["tsv", "npy"]), default="tsv",
              show_default=True, help="tsv: one line per pair; npy: the score matrix.")
@scoring_options()
@click.option("--no-traceback", is_flag=True, help="Scores and end positions only.")
@click.option("--cigar-m", is_flag=True, help="Write M for matches and mismatches, not =/X.")
@click.option("--min-score", type=int, default=None, help="Keep pairs scoring at least this.")
@click.option("--min-identity", type=click.FloatRange(0, 1), default=None,
              help="Keep pairs whose identity (identical columns / alignment length) "
                   "is at least this.")
@run_options
@handle_errors
def all_vs_all(input, output, fmt, mode, matrix, match, mismatch, gap_open, gap_extend,
               alphabet, no_traceback, cigar_m, min_score, min_identity, backend, threads,
               devices, max_memory, window, quiet) -> None:
    """Align every pair of sequences of INPUT (FASTA or FASTQ, plain or gzip, '-'
    for standard input).

    \b
    TSV columns: query target score identity length query_start query_end
    target_start target_end cigar (starts 0-based, ends exclusive; the CIGAR
    covers query[query_start:query_end] against target[target_start:target_end],
    I consuming the query). Each pair i < j appears once, in input order, from
    i's side. With --no-traceback: query target score query_end target_end.
    """
    result = align_all(input, mode=mode, matrix=matrix, match=match, mismatch=mismatch,
                       gap_open=gap_open, gap_extend=gap_extend, alphabet=alphabet,
                       traceback=not no_traceback, backend=backend, threads=threads,
                       devices=parse_devices(devices), max_memory=max_memory,
                       window=window)
    if fmt == "npy":
        write_npy(output, result)
        return
    batch = filter_pairs(result.pairs, min_score, min_identity)
    with atomic_output(output) as handle:
        write_tsv(handle, result, batch, use_m=cigar_m)


if __name__ == "__main__":
    main()
