"""The command line: outputs checked against the API, errors, atomic files."""

from __future__ import annotations

import gzip

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numba
import numpy as np
import pytest
from click.testing import CliRunner

import pairalign
from pairalign import cli, output
from pairalign.cigar import cigar_string
from pairalign.kernels import text as text_kernels
from pairalign.cli import main

N = 60


@pytest.fixture(scope="module")
def fasta(tmp_path_factory, records):
    """60 adenovirus fiber proteins, with descriptions, over two lines each."""
    recs = records("adeno_fiber.faa")
    path = tmp_path_factory.mktemp("cli") / "fiber60.faa"
    path.write_text("".join(f">{i} desc {k}\n{s[:50]}\n{s[50:]}\n" for k, (i, s) in
                            enumerate(zip(recs.ids[:N], recs.sequences[:N]))))
    return path


@pytest.fixture(scope="module")
def api_results(fasta):
    """align_all on the same file, per (mode, traceback)."""
    cache = {}

    def get(mode="local", traceback=True):
        if (mode, traceback) not in cache:
            cache[mode, traceback] = pairalign.align_all(fasta, mode=mode, traceback=traceback,
                                                         threads=2)
        return cache[mode, traceback]
    return get


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def ok(*args, input=None):
    res = run(*args, input=input)
    assert res.exit_code == 0, (res.stderr, res.exception)
    return res


def parse_tsv(text: str):
    """Header and columns of a TSV, parsed without the formatter's help."""
    lines = text.split("\n")
    assert lines[-1] == ""  # every line ends with a newline
    rows = [line.split("\t") for line in lines[1:-1]]
    return lines[0].split("\t"), list(zip(*rows)) if rows else []


def identity_text(identities, length):
    if length <= 0:
        return "0.0000"
    tt = int(Fraction(10000 * int(identities), int(length)) + Fraction(1, 2))
    return f"{tt // 10000}.{tt % 10000:04d}"


def check_full_tsv(text, result, keep=None, use_m=False):
    """Every column of the TSV against the PairBatch arrays of ``result``."""
    header, cols = parse_tsv(text)
    assert header == list(output.TSV_COLUMNS)
    p = result.pairs
    keep = np.arange(len(p)) if keep is None else np.asarray(keep)
    ids = np.array(result.ids)
    assert len(cols[0]) == len(keep)
    assert list(cols[0]) == ids[p.query[keep]].tolist()
    assert list(cols[1]) == ids[p.target[keep]].tolist()
    for c, arr in zip((2, 4, 5, 6, 7, 8), (p.score, p.length, p.query_begin, p.query_end,
                                          p.target_begin, p.target_end)):
        assert np.array(cols[c], dtype=np.int64).tolist() == arr[keep].tolist(), header[c]
    assert list(cols[3]) == [identity_text(p.identities[k], p.length[k]) for k in keep]
    if use_m:
        assert list(cols[9]) == [cigar_string(*p.ops(k), use_m=True) for k in keep]
    else:
        assert list(cols[9]) == [result[int(k)].cigar for k in keep]


# ---------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
def test_tsv_matches_api(fasta, api_results, mode):
    res = ok("all-vs-all", fasta, "--mode", mode, "--threads", 2)
    api = api_results(mode)
    assert len(api) == N * (N - 1) // 2
    assert (api.pairs.query < api.pairs.target).all()
    check_full_tsv(res.stdout, api)
    assert res.stderr == ""


def test_cigar_m(fasta, api_results):
    res = ok("all-vs-all", fasta, "--cigar-m")
    check_full_tsv(res.stdout, api_results("local"), use_m=True)
    cigars = parse_tsv(res.stdout)[1][9]
    assert all(set(c) <= set("0123456789MID") for c in cigars)


def test_no_traceback_columns(fasta, api_results):
    res = ok("all-vs-all", fasta, "--no-traceback")
    header, cols = parse_tsv(res.stdout)
    assert header == ["query", "target", "score", "query_end", "target_end"]
    api = api_results("local", traceback=False)
    ids = np.array(api.ids)
    assert list(cols[0]) == ids[api.pairs.query].tolist()
    assert list(cols[1]) == ids[api.pairs.target].tolist()
    for c, arr in zip((2, 3, 4), (api.pairs.score, api.pairs.query_end, api.pairs.target_end)):
        assert np.array(cols[c], dtype=np.int64).tolist() == arr.tolist()
    # the same scores as with traceback
    assert api.pairs.score.tolist() == api_results("local").pairs.score.tolist()


def test_filters(fasta, api_results):
    api = api_results("local")
    p = api.pairs
    cut = int(np.percentile(p.score, 75))
    ident = [Fraction(int(i), int(n)) if n > 0 else Fraction(0)
             for i, n in zip(p.identities, p.length)]
    for args, want in [
        (["--min-score", cut], [k for k in range(len(p)) if p.score[k] >= cut]),
        (["--min-identity", 0.4], [k for k in range(len(p)) if ident[k] >= Fraction(2, 5)]),
        (["--min-score", cut, "--min-identity", 0.4],
         [k for k in range(len(p)) if p.score[k] >= cut and ident[k] >= Fraction(2, 5)]),
    ]:
        assert 0 < len(want) < len(p), args
        check_full_tsv(ok("all-vs-all", fasta, *args).stdout, api, keep=want)
    # nothing kept: the header alone
    assert ok("all-vs-all", fasta, "--min-score", 10**6).stdout == \
        "\t".join(output.TSV_COLUMNS) + "\n"


def test_npy_matrix(fasta, api_results, tmp_path):
    out = tmp_path / "s.npy"
    res = ok("all-vs-all", fasta, "--format", "npy", "-o", out)
    assert res.stdout == ""
    m = np.load(out)
    assert m.dtype == np.int32 and m.shape == (N, N)
    assert (m == m.T).all() and (np.diag(m) == 0).all()
    assert (m == api_results("local").scores).all()
    assert os.listdir(tmp_path) == ["s.npy"]


def test_byte_identical_across_threads_and_windows(fasta, tmp_path):
    outs = []
    for extra in ([], ["--threads", 1], ["--threads", 2], ["--window", 16], ["--window", 64]):
        path = tmp_path / f"o{len(outs)}.tsv"
        ok("all-vs-all", fasta, "-o", path, *extra)
        outs.append(path.read_bytes())
    assert len(outs[0].split(b"\n")) == N * (N - 1) // 2 + 2
    assert all(o == outs[0] for o in outs[1:])


def test_stdin_and_gzip(fasta, tmp_path):
    plain = ok("all-vs-all", fasta).stdout_bytes
    assert ok("all-vs-all", "-", input=fasta.read_bytes()).stdout_bytes == plain
    gz = tmp_path / "s.faa.gz"
    gz.write_bytes(gzip.compress(fasta.read_bytes()))
    assert ok("all-vs-all", gz).stdout_bytes == plain
    assert ok("all-vs-all", "-", input=gz.read_bytes()).stdout_bytes == plain


# ---------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------

GOOD = b">a\nMKVLAAGHW\n>b\nMKVLSAGHW\n"
DNA = b">a\nACGTACGTTGCA\n>b\nACGTTCGTTGCA\n"


@pytest.mark.parametrize("content,args,needles", [
    (b"", [], ["{path}", "empty"]),
    (b">a\nMKV\n>b\nMK1V\n", [], ["{path}", "record 2 (b)", "position 3", "'1'"]),
    (b">a\nMKV\n>a\nMKV\n", [], ["{path}", "record 2", "duplicate id"]),
    (GOOD, ["--matrix", "BLOSUM99"], ["--matrix", "unknown matrix 'BLOSUM99'", "BLOSUM62"]),
    (GOOD, ["--match", "2"], ["--match", "DNA"]),
    (GOOD, ["--gap-open", "-1"], ["--gap-open", "-1"]),
    (GOOD, ["--gap-extend", "-2"], ["--gap-extend"]),
    (GOOD, ["--gap-open", "1", "--gap-extend", "2"], ["gap open", "gap extend"]),
    (GOOD, ["--window", "24"], ["--window", "multiple of 16"]),
    (GOOD, ["--max-memory", "lots"], ["--max-memory", "lots"]),
    (GOOD, ["--devices", "0,x"], ["--devices"]),
    (GOOD, ["--threads", "0"], ["--threads"]),
    (GOOD, ["--bogus"], ["--bogus"]),
    (GOOD, ["--format", "npy"], ["npy", "-o PATH"]),
    (GOOD, ["--format", "npy", "-o", "x.npy", "--min-score", "3"], ["--min-score", "tsv"]),
    (GOOD, ["--no-traceback", "--min-identity", "0.5"], ["--min-identity", "--no-traceback"]),
    (GOOD, ["--min-identity", "1.5"], ["--min-identity"]),
    (GOOD, ["--max-memory", "nanG"], ["--max-memory", "nanG"]),
    (GOOD, ["--max-memory", "infG"], ["--max-memory", "infG"]),
    (GOOD, ["--max-memory", "1K"], ["1 KiB is too small", "with traceback", "KiB"]),
    (DNA, ["--mismatch", "-3000000000"], ["too large", "-3000000000"]),
    (DNA, ["--match", "3000000000"], ["too large"]),
    (GOOD, ["--cluster", "garbage"], ["no Dask scheduler at garbage"]),
])
def test_errors_are_one_line_exit_2(tmp_path, monkeypatch, content, args, needles):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "in.faa"
    path.write_bytes(content)
    res = run("all-vs-all", path, *args)
    assert res.exit_code == 2, (res.stderr, res.exception)
    assert res.stderr.endswith("\n") and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("pairalign: error: ")
    for needle in needles:
        assert needle.format(path=path) in res.stderr
    assert res.stdout == "" and sorted(os.listdir(tmp_path)) == ["in.faa"]


def test_missing_file(tmp_path):
    res = run("all-vs-all", tmp_path / "nope.faa", "-o", tmp_path / "out.tsv")
    assert res.exit_code == 2
    assert res.stderr.startswith(f"pairalign: error: {tmp_path / 'nope.faa'}: ")
    assert res.stderr.count("\n") == 1 and "No such file" in res.stderr
    assert os.listdir(tmp_path) == []


def test_unwritable_output_fails_before_aligning(fasta, tmp_path, monkeypatch):
    def never(*a, **k):
        raise AssertionError("aligned although the output cannot be written")

    monkeypatch.setattr(cli, "align_all", never)  # --format npy
    monkeypatch.setattr(cli, "iter_all", never)  # TSV
    res = run("all-vs-all", fasta, "-o", tmp_path / "no" / "such" / "out.tsv")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "cannot write" in res.stderr and "out.tsv" in res.stderr


@pytest.mark.parametrize("command, module, body", [
    (["all-vs-all"], "pairalign.cli", "iter_all"),
    (["tree"], "pairalign.pipelines.tree", "guide_tree"),
    (["overlap"], "pairalign.pipelines.overlap", "overlap_table"),
    (["search", "{input}"], "pairalign.pipelines.search", "search"),
])
@pytest.mark.parametrize("where, message", [("no/such/out.txt", "cannot write"),
                                            (".", "it is a folder"),
                                            ("new/", "ending in / names a folder"),
                                            ("in.faa/", "ending in / names a folder"),
                                            ("{input}", "is an input file")])
def test_every_command_checks_its_output_before_aligning(fasta, tmp_path, monkeypatch,
                                                         command, module, body, where,
                                                         message):
    """An output that cannot be written, a folder, or the input itself: one
    line, status 2, before any alignment; the input is left as it was."""
    import importlib

    def never(*a, **k):
        raise AssertionError("aligned although the output cannot be written")

    monkeypatch.setattr(importlib.import_module(module), body, never)
    source = tmp_path / "in.faa"
    source.write_bytes(fasta.read_bytes())
    target = os.path.join(str(tmp_path), where.format(input="in.faa"))  # a / kept
    args = [command[0], source] + [a.format(input=source) for a in command[1:]]
    res = run(*args, "-o", target)
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.stderr
    assert message in res.stderr
    assert source.read_bytes() == fasta.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["in.faa"]


def test_outputs_that_collide(fasta, tmp_path):
    res = run("tree", fasta, "--distances", "-")
    assert res.exit_code == 2 and "-o and --distances both write standard output" in res.stderr
    res = run("tree", fasta, "-o", tmp_path / "t", "--distances", tmp_path / "t")
    assert res.exit_code == 2 and "both write" in res.stderr
    res = run("search", "-", "-", input=">a\nMKV\n")
    assert res.exit_code == 2 and "cannot both be standard input" in res.stderr
    assert os.listdir(tmp_path) == []


def test_tree_refuses_ids_that_clustal_omega_cannot_read(tmp_path, monkeypatch):
    """Newick spells a ' in a name as '' inside quotes, which Clustal Omega's
    --guidetree-in does not read: the record is named before any alignment."""
    from pairalign.pipelines import tree

    def never(*a, **k):
        raise AssertionError("aligned although an id cannot be written")

    monkeypatch.setattr(tree, "guide_tree", never)
    fasta = tmp_path / "q.faa"
    fasta.write_text(">a\nMKVLAW\n>x'y\nMKVIAW\n>c\nPRQLAY\n")
    res = run("tree", fasta, "-o", tmp_path / "t.nwk", "--backend", "cpu")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.stderr
    assert f"{fasta}: record 2 (x'y):" in res.stderr and "Clustal Omega" in res.stderr
    assert sorted(os.listdir(tmp_path)) == ["q.faa"]


def test_closed_standard_output(fasta, tmp_path):
    """Standard output closed at the start (a real process): a run that writes
    to a file exits 0, one that would write to standard output says so."""
    out = tmp_path / "out.tsv"
    cmd = [sys.executable, "-m", "pairalign", "all-vs-all", str(fasta), "--threads", "2",
           "--no-traceback"]
    proc = subprocess.run(cmd + ["-o", str(out)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=300, close_fds=True,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0 and proc.stderr == b"" and out.stat().st_size > 0
    proc = subprocess.run(cmd, stderr=subprocess.PIPE, timeout=300,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2
    assert proc.stderr == b"pairalign: error: standard output is closed: give -o PATH\n"


def test_devices_without_a_gpu_backend_warn(fasta):
    res = run("all-vs-all", fasta, "--backend", "cpu", "--devices", "0", "--no-traceback")
    assert res.exit_code == 0
    assert res.stderr == ("pairalign: warning: devices 0 were given, but the CPU backend "
                          "was asked for: the run is on the CPU\n")


def test_outputs_through_links_and_fifos(tmp_path):
    """A symbolic link is written through (its target replaced, the link
    kept); a FIFO (as /dev/stdout may be) is written directly."""
    import threading

    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    with output.atomic_output(tmp_path / "link.txt") as handle:
        handle.write(b"new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link.txt", "real.txt"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with output.atomic_output(fifo) as handle:
        handle.write(b"through")
    reader.join(10)
    assert got == [b"through"]


def test_usage_errors_and_version():
    res = run("all-vs-all")
    assert res.exit_code == 2 and res.stderr.startswith("pairalign: error: Missing argument")
    assert res.stderr.count("\n") == 1
    res = run("no-such-command")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert ok("--version").stdout == f"pairalign, version {pairalign.__version__}\n"
    helptext = " ".join(ok("all-vs-all", "--help").stdout.split())
    for needle in ["OPEN + (k - 1) * EXTEND", "-gapopen o -gapextend e", "gap_cost=(o, e)",
                   "--gap-open o+e", "protein BLOSUM62", "default: protein 11, DNA 5",
                   "default: protein 1, DNA 2", "default: 2", "default: -3",
                   "default: local"]:
        assert needle.replace(" ", "") in helptext.replace(" ", ""), needle


# ---------------------------------------------------------------------------------
# atomic output, interrupts
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("existing", [False, True])
def test_interrupted_write_leaves_no_file(fasta, tmp_path, monkeypatch, existing):
    """Ctrl-C after some lines were written: exit 130, no output file, no temp file,
    a previous output untouched."""
    target = tmp_path / "out.tsv"
    if existing:
        target.write_bytes(b"old\n")
    monkeypatch.setattr(output, "CHUNK", 100)
    real, calls = text_kernels.format_rows, []

    def flaky(*args):
        calls.append(1)
        if len(calls) == 3:  # the header and some chunks may be written already
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(text_kernels, "format_rows", flaky)
    res = run("all-vs-all", fasta, "-o", target)
    assert res.exit_code == 130 and len(calls) >= 3
    assert res.stderr == "pairalign: interrupted\n"
    assert os.listdir(tmp_path) == (["out.tsv"] if existing else [])
    if existing:
        assert target.read_bytes() == b"old\n"


def test_interrupt_while_aligning(fasta, tmp_path, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "align_all", interrupted)
    res = run("all-vs-all", fasta, "-o", tmp_path / "out.tsv", "--format", "npy")
    assert res.exit_code == 130 and os.listdir(tmp_path) == []


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_terminated_run_leaves_no_file(tmp_path, signame):
    """SIGTERM or SIGHUP to a running command (a real process): one line, status
    128 + the signal, and the temporary output file removed."""
    import signal
    import time

    rng = np.random.default_rng(5)
    source = tmp_path / "in.faa"
    source.write_text("".join(f">s{k}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 400))}\n"
                              for k in range(600)))
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "pairalign", "all-vs-all", str(source),
                             "-o", str(out / "all.tsv"), "--threads", "1", "--backend", "cpu"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not os.listdir(out) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()  # still aligning: 1.4e10 cells
        time.sleep(0.5)
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + getattr(signal, signame), err
    assert err.decode() == f"pairalign: terminated ({signame})\n"
    assert os.listdir(out) == []


def test_a_lost_device_is_one_line_and_status_1(fasta, tmp_path, monkeypatch):
    """A DeviceError (a GPU lost with alignments it alone held) is the
    hardware's fault, not a bug: one line, exit status 1, no output file."""
    from pairalign.errors import DeviceError

    def lost(*a, **k):
        raise DeviceError("the device holding the alignments failed to place them")

    monkeypatch.setattr(cli, "iter_all", lost)
    res = run("all-vs-all", fasta, "-o", tmp_path / "out.tsv")
    assert res.exit_code == 1
    assert res.stderr == ("pairalign: error: the device holding the alignments failed "
                          "to place them\n")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("mode", ["local", "global"])
def test_no_cigar_writes_every_column_but_the_cigar(fasta, mode):
    """--no-cigar: the full TSV's lines without their last column, header
    included."""
    full = ok("all-vs-all", fasta, "--mode", mode, "--threads", 2).stdout
    bare = ok("all-vs-all", fasta, "--mode", mode, "--threads", 2, "--no-cigar").stdout
    want = ["\t".join(line.split("\t")[:-1]) for line in full.splitlines()]
    assert bare.splitlines() == want and len(want) == 1 + N * (N - 1) // 2
    assert want[0].split("\t") == list(output.TSV_NO_CIGAR)


@pytest.mark.parametrize("args, message", [
    (["--no-traceback"], "--no-cigar: a score-only run"),
    (["--cigar-m"], "--cigar-m: --no-cigar writes no CIGAR"),
    (["--format", "npy", "-o", "x.npy"], "--no-cigar: for --format tsv only"),
])
def test_no_cigar_option_errors(fasta, args, message):
    res = run("all-vs-all", fasta, "--no-cigar", *args)
    assert res.exit_code == 2 and res.stderr.startswith(f"pairalign: error: {message}")


def test_an_empty_cluster_address_is_refused(fasta):
    """--cluster "" (an unset $ADDR) must not run locally unnoticed."""
    pytest.importorskip("distributed")
    res = run("all-vs-all", fasta, "--cluster", "")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "no Dask scheduler address given" in res.stderr


def test_cigar_m_without_traceback_is_refused(fasta):
    """A score-only run writes no CIGAR, so --cigar-m means nothing there (as
    with --no-cigar)."""
    res = run("all-vs-all", fasta, "--no-traceback", "--cigar-m")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith("pairalign: error: --cigar-m: --no-traceback writes no CIGAR")


def test_disk_error_is_one_line(fasta, tmp_path, monkeypatch):
    def full(handle, *a, **k):
        handle.write(b"some")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli, "write_tsv", full)
    res = run("all-vs-all", fasta, "-o", tmp_path / "out.tsv")
    assert res.exit_code == 1 and res.stderr == "pairalign: error: No space left on device\n"
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------
# real processes
# ---------------------------------------------------------------------------------


def console_script() -> str:
    path = Path(sys.executable).with_name("pairalign")
    if not path.exists():
        pytest.skip("the pairalign console script is not installed beside this Python")
    return str(path)


def test_console_script(fasta, tmp_path):
    out = tmp_path / "x.tsv"
    proc = subprocess.run([console_script(), "all-vs-all", str(fasta), "-o", str(out),
                           "--mode", "global", "--threads", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert out.read_bytes() == ok("all-vs-all", fasta, "--mode", "global").stdout_bytes
    proc = subprocess.run([sys.executable, "-m", "pairalign", "all-vs-all", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "nope" in proc.stderr


def test_a_reader_gone_during_a_long_write(records, tmp_path):
    """`pairalign ... | head -5` on an output larger than the pipe holds: the
    write that the reader's exit cuts short ends the run with status 141,
    not 0 (a short write raises nothing by itself)."""
    recs = records("adeno_fiber.faa")
    source = tmp_path / "in.faa"
    source.write_text("".join(f">{i}\n{s}\n" for i, s in zip(recs.ids, recs.sequences)))
    proc = subprocess.Popen([console_script(), "all-vs-all", str(source), "--threads", "2",
                             "--backend", "cpu", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(5):
        assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and err == b""


def test_broken_pipe_is_quiet(fasta):
    """`pairalign ... | head -1`: the reader goes away; no traceback, status 141."""
    proc = subprocess.Popen([console_script(), "all-vs-all", str(fasta), "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"query\ttarget\t")
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and err == b""


def test_program_output_to_a_pipe_is_complete(fasta):
    """The program ends by os._exit (cli.run): what it wrote to standard output
    reaches the reader whole, as in-process."""
    proc = subprocess.run([sys.executable, "-m", "pairalign", "all-vs-all", str(fasta),
                           "--threads", "2"], capture_output=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout == ok("all-vs-all", fasta).stdout_bytes


@pytest.mark.parametrize("code, status, err", [(None, 0, ""), (0, 0, ""), (3, 3, ""),
                                              ("bad thing", 1, "bad thing\n")])
def test_exit_now_flushes_and_exits_with_the_status(monkeypatch, capsys, code, status, err):
    from pairalign import cli_options

    class Exited(Exception):
        pass

    def fake_exit(c):
        raise Exited(c)

    monkeypatch.setattr(cli_options.os, "_exit", fake_exit)
    monkeypatch.delitem(sys.modules, "distributed", raising=False)
    print("pending", end="")  # in stdout's buffer until exit_now flushes it
    with pytest.raises(Exited) as exited:
        cli_options.exit_now(code)
    assert exited.value.args == (status,)
    assert capsys.readouterr() == ("pending", err)


def test_exit_now_leaves_a_dask_client_its_normal_exit(monkeypatch):
    from pairalign import cli_options

    monkeypatch.setattr(cli_options.os, "_exit", lambda c: pytest.fail("os._exit"))
    monkeypatch.setitem(sys.modules, "distributed", object())
    with pytest.raises(SystemExit) as exited:
        cli_options.exit_now(4)
    assert exited.value.code == 4


@pytest.mark.parametrize("category", ["DeviceErrorWarning", "CPUFallbackWarning",
                                      "MemoryBudgetWarning"])
def test_device_warnings_are_one_line(capsys, category):
    """Windows retried after a device error, or run on the CPU: one line on
    stderr, the run goes on; other warnings are shown as Python shows them."""
    import warnings

    from pairalign.cli_options import handle_errors

    @handle_errors
    def body():
        warnings.warn("3 window(s) failed and ran again elsewhere;\nthe first error ...",
                      getattr(pairalign, category))
        warnings.warn("something else", UserWarning)
        return 7

    with pytest.warns(UserWarning, match="something else"):
        assert body() == 7
    err = capsys.readouterr().err
    assert err == ("pairalign: warning: 3 window(s) failed and ran again elsewhere; "
                   "the first error ...\n")


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_a_budget_that_holds_fewer_threads_says_so(tmp_path):
    """Long reads with traceback: a --max-memory that holds one thread's
    task of the two asked for, even checkpointed, runs one, says so in one
    line, and writes what two write."""
    from pairalign.engine import format_memory
    from pairalign.job import Job, SortedSet
    from pairalign.kernels.cpu_backend import CPUBackend
    from pairalign.scoring import Scoring

    rng = np.random.default_rng(6)
    reads = ["".join(rng.choice(list("ACGT"), n)) for n in (1_500, 1_400, 1_300, 900)]
    fa = tmp_path / "reads.fa"
    fa.write_text("".join(f">r{k}\n{r}\n" for k, r in enumerate(reads)))
    dna = Scoring.create("dna")
    per = CPUBackend().task_memory(Job("local", dna, True, SortedSet.encode(reads, dna)))
    budget = per * 3 // 2
    res = ok("all-vs-all", fa, "-o", tmp_path / "one.tsv", "--backend", "cpu",
             "--threads", 2, "--max-memory", budget, "-q")
    assert res.stderr == (f"pairalign: warning: the memory budget of {format_memory(budget)} "
                          f"(--max-memory) holds the working buffers of 1 of 2 CPU "
                          f"threads for sequences of 1500 x 1500 ({format_memory(per)} a "
                          f"thread): a larger budget runs more threads\n")
    two = ok("all-vs-all", fa, "-o", tmp_path / "two.tsv", "--backend", "cpu", "--threads", 2,
             "-q")
    assert two.stderr == ""
    assert (tmp_path / "one.tsv").read_text() == (tmp_path / "two.tsv").read_text()


def _fresh_python(*lines: str) -> list[str]:
    """The words a new interpreter prints running ``lines``."""
    return subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True,
                          text=True, check=True).stdout.split()


def test_start_numba_skips_the_blas_probe_and_leaves_scipy_importable():
    """The command line starts numba without importing scipy.linalg (numba's
    BLAS probe), and SciPy imports normally afterwards."""
    pytest.importorskip("scipy")
    assert _fresh_python("import sys",
                         "from pairalign.cli_options import start_numba",
                         "start_numba()",
                         "import numba.np.arraymath as am",
                         "print('scipy.linalg' in sys.modules, am._HAVE_BLAS)",
                         "import scipy.linalg",
                         "print(scipy.linalg.__name__)") == ["False", "False", "scipy.linalg"]


def test_numba_started_when_needed_skips_the_blas_probe_too():
    """A GPU run starts numba at its first use (the guard's first call), and
    that start skips the BLAS probe as :func:`start_numba` does."""
    pytest.importorskip("scipy")
    assert _fresh_python("import sys",
                         "from pairalign.cli_options import start_numba_when_needed",
                         "start_numba_when_needed()",
                         "print('numba' in sys.modules)",
                         "from pairalign.engine import _NUMBA",
                         "_NUMBA.needed()",
                         "import numba.np.arraymath as am",
                         "print('scipy.linalg' in sys.modules, am._HAVE_BLAS)",
                         ) == ["False", "False", "False"]


def test_numba_starts_on_a_thread_once():
    """start_soon (a run's windows starting) starts numba on one thread, with
    the command line's BLAS probe skipped; later calls start nothing."""
    pytest.importorskip("scipy")
    assert _fresh_python("import sys, threading",
                         "from pairalign.cli_options import start_numba_when_needed",
                         "start_numba_when_needed()",
                         "from pairalign.engine import _NUMBA",
                         "_NUMBA.start_soon()",
                         "[t.join() for t in threading.enumerate() if t.name == "
                         "'pairalign-numba-start']",
                         "print('numba' in sys.modules, _NUMBA._needed is not None,"
                         " 'scipy.linalg' in sys.modules)",
                         "_NUMBA.start_soon()",
                         "print(sum(t.name == 'pairalign-numba-start'"
                         " for t in threading.enumerate()))",
                         ) == ["True", "True", "False", "0"]


def test_numba_start_calls_then_also_where_numba_had_started():
    """start_soon's ``then`` (a GPU run's planner loaded) runs on the start
    thread after numba's start, and again on a thread of its own where
    numba had started before."""
    assert _fresh_python("import sys, threading",
                         "from pairalign.engine import _NUMBA",
                         "calls = []",
                         "then = lambda: calls.append(f'{_NUMBA._needed is not None}:'"
                         " + threading.current_thread().name)",
                         "join = lambda: [t.join() for t in threading.enumerate()"
                         " if t.name == 'pairalign-numba-start']",
                         "_NUMBA.start_soon(then); join()",
                         "_NUMBA.start_soon(then); join()",
                         "print(*calls)",
                         ) == ["True:pairalign-numba-start"] * 2


def test_importing_the_command_line_does_not_start_numba():
    """numba's kernels are imported at their first call, so a GPU run can start
    numba while the GPU runs its first window."""
    assert _fresh_python("import sys, pairalign.cli",
                         "print(any(m.split('.')[0] == 'numba' for m in sys.modules))",
                         ) == ["False"]


class _FakeDriver:
    """libcuda's calls that start_cuda makes, recorded, with ``count`` devices."""

    def __init__(self, count: int) -> None:
        self.count, self.calls = count, []

    def __getattr__(self, name):
        import ctypes

        def call(*args):
            self.calls.append(name)
            if name == "cuDeviceGetCount":
                ctypes.cast(args[0], ctypes.POINTER(ctypes.c_int))[0] = self.count
            if name == "cuDeviceGet":
                ctypes.cast(args[0], ctypes.POINTER(ctypes.c_int))[0] = args[1]
                self.calls.append(args[1])
            return 0
        return call


@pytest.mark.parametrize("devices,started", [(None, [0, 1, 2]), ([2], [2]), ([1, 7], [1])])
def test_start_cuda_starts_the_run_devices_only(monkeypatch, devices, started):
    """The driver, then a primary context for each device the run will use (every
    visible one by default; ordinals past the last ignored); no driver: nothing."""
    import ctypes

    from pairalign.backends import start_cuda

    driver = _FakeDriver(3)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: driver)
    start_cuda(devices).join()
    assert driver.calls[:2] == ["cuInit", "cuDeviceGetCount"]
    assert [c for c in driver.calls if isinstance(c, int)] == started
    assert driver.calls.count("cuDevicePrimaryCtxRetain") == len(started)

    def missing(name):
        raise OSError("libcuda.so.1: cannot open shared object file")
    monkeypatch.setattr(ctypes, "CDLL", missing)
    start_cuda(devices).join()  # no exception, no hang


@pytest.mark.parametrize("backend,expected", [("cpu", []), ("gpu", [[0]]), ("auto", [None])])
def test_cli_starts_cuda_only_for_a_gpu_run(fasta, tmp_path, monkeypatch, backend, expected):
    """A run that may use a GPU starts the driver on a thread and numba when
    needed; a CPU run starts numba at once, and no driver."""
    from pairalign import cli_options

    seen, numba_starts = [], []
    monkeypatch.setattr(cli_options, "start_cuda", seen.append)
    monkeypatch.setattr(cli_options, "start_numba_when_needed", lambda: numba_starts.append("later"))
    monkeypatch.setattr(cli_options, "start_numba", lambda: numba_starts.append("now"))
    args = ["all-vs-all", str(fasta), "--backend", backend, "-o", str(tmp_path / "o.tsv")]
    if backend == "gpu":
        args += ["--devices", "0"]  # without a GPU the run then stops with one line
    res = CliRunner().invoke(main, args)
    assert seen == expected, res.output
    assert numba_starts == (["now"] if backend == "cpu" else ["later"])
