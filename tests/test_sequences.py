"""Tests of pairalign.sequences: FASTA/FASTQ/gzip reading, Python input, validation."""

from __future__ import annotations

import gzip
import io
import pathlib
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pairalign.alphabet import DNA_LETTERS, PROTEIN_LETTERS
from pairalign.errors import InputError
from pairalign.sequences import SequenceRecords, read_sequences, records_from_python

def read_bytes(data: bytes, **kwargs) -> SequenceRecords:
    return read_sequences(io.BytesIO(data), **kwargs)


def write(tmp_path: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def check_records(records: SequenceRecords) -> None:
    """Invariants every successful read must satisfy."""
    assert records.alphabet in ("protein", "dna")
    assert len(records) == len(records.ids) == len(records.descriptions) == len(records.sequences) > 0
    assert len(set(records.ids)) == len(records.ids)
    letters = set(PROTEIN_LETTERS if records.alphabet == "protein" else DNA_LETTERS)
    for ident, seq in zip(records.ids, records.sequences):
        assert ident and not any(c in ident for c in " \t\r\n\x0b\x0c")
        assert seq and set(seq) <= letters
    lengths = records.lengths
    assert lengths.dtype == np.int64
    assert lengths.tolist() == [len(s) for s in records.sequences]


def check_error(err: InputError, **fields) -> str:
    """The message is one line and the error carries the expected fields."""
    text = str(err)
    assert "\n" not in text and "\r" not in text
    for name, value in fields.items():
        assert getattr(err, name) == value, (name, getattr(err, name), value)
    if fields.get("source"):
        assert text.startswith(fields["source"])
    if fields.get("record") is not None:
        assert f"record {fields['record']}" in text
    if fields.get("record_id"):
        assert f"({fields['record_id']})" in text
    if fields.get("position") is not None:
        assert f"position {fields['position']}" in text
    if fields.get("line") is not None:
        assert f"line {fields['line']}" in text
    return text


# ----------------------------------------------------------------------------- parsing


def test_multiline_fasta(tmp_path):
    data = (
        b">sp|P1|A first protein  \n"
        b"MKVL\nAAGG\n\nW\n"
        b">second\n"
        b"mkv\n"
        b">third desc\twith tab\n"
        b"ACDEFGHIKLMNPQRSTVWY*\n"
    )
    path = write(tmp_path, "in.txt", data)
    records = read_sequences(path)
    assert records.ids == ["sp|P1|A", "second", "third"]
    assert records.descriptions == ["first protein", "", "desc\twith tab"]
    assert records.sequences == ["MKVLAAGGW", "MKV", "ACDEFGHIKLMNPQRSTVWY*"]
    assert records.alphabet == "protein"
    assert records.source == str(path)
    assert len(records) == 3
    assert records.lengths.tolist() == [9, 3, 21]
    assert read_sequences(str(path)) == records


def test_lower_case_whitespace_crlf_blank_lines_bom():
    data = b"\xef\xbb\xbf\r\n\n  >a  the  desc \r\nac gT\r\n\tNN\r\n\r\n>b\r\nggcc\r\n"
    records = read_bytes(data)
    assert records.ids == ["a", "b"]
    assert records.descriptions == ["the  desc", ""]
    assert records.sequences == ["ACGTNN", "GGCC"]
    assert records.alphabet == "dna"
    assert records.source == "<input>"


def test_no_final_newline_and_blank_after_header():
    assert read_bytes(b">a\n\nMKV").sequences == ["MKV"]


def test_fastq(tmp_path):
    data = (
        b"@r1 first read\n"
        b"acgtn\n"
        b"+\n"
        b"IIII#\n"
        b"\n"
        b"@r2\r\n"
        b"GGTT\r\n"
        b"+r2\r\n"
        b"@@+!\r\n"  # quality may start with '@' or '+'
    )
    records = read_sequences(write(tmp_path, "reads.fasta", data))  # extension ignored
    assert records.ids == ["r1", "r2"]
    assert records.descriptions == ["first read", ""]
    assert records.sequences == ["ACGTN", "GGTT"]
    assert records.alphabet == "dna"


def test_fastq_without_final_newline():
    assert read_bytes(b"@r\nACGT\n+\nIIII").sequences == ["ACGT"]


@pytest.mark.parametrize("fmt", ["fasta", "fastq"])
def test_gzip(tmp_path, fmt):
    plain = b">a x\nMKV\nLL\n>b\nWW\n" if fmt == "fasta" else b"@a x\nMKVLL\n+\nIIIII\n@b\nWW\n+\nII\n"
    path = write(tmp_path, "seqs.dat", gzip.compress(plain))
    records = read_sequences(path)
    expected = read_bytes(plain)
    assert records.source == str(path)
    assert (records.ids, records.descriptions, records.sequences, records.alphabet) == (
        expected.ids, expected.descriptions, expected.sequences, expected.alphabet
    )
    assert records.sequences == ["MKVLL", "WW"] and records.descriptions == ["x", ""]


def test_gzip_multi_member(tmp_path):
    data = gzip.compress(b">a\nMKV\n") + gzip.compress(b">b\nLLW\n")
    assert read_sequences(write(tmp_path, "x.gz", data)).ids == ["a", "b"]


def test_stdin_and_file_objects(tmp_path, monkeypatch):
    data = b">a\nACGT\n>b\nGGCC\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(data))))
    records = read_sequences("-")
    assert records.source == "<stdin>"
    assert records.ids == ["a", "b"] and records.alphabet == "dna"

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with pytest.raises(InputError) as info:
        read_sequences("-")
    check_error(info.value, source="<stdin>")
    assert "empty file" in str(info.value)

    path = write(tmp_path, "f.fa", data)
    with open(path, "rb") as handle:
        assert read_sequences(handle).source == str(path)
    with open(path) as handle, pytest.raises(TypeError, match="binary"):
        read_sequences(handle)
    with pytest.raises(TypeError, match="BytesIO"):
        read_sequences(data)  # type: ignore[arg-type]


def test_missing_file(tmp_path):
    path = tmp_path / "nope.fa"
    with pytest.raises(InputError) as info:
        read_sequences(path)
    check_error(info.value, source=str(path))
    with pytest.raises(InputError):
        read_sequences(tmp_path)  # a directory


# ----------------------------------------------------------------------------- errors

ERROR_CASES = [
    # (data, message part, fields)
    (b"", "empty file", {}),
    (gzip.compress(b""), "empty file", {}),
    (b"\n  \r\n\n", "expected '>' or '@' at the start of a record", {"line": 1}),
    (b"\n\nhello\n>a\nACGT\n", "expected '>' or '@' at the start of a record", {"line": 3}),
    (b">a\nMKV\n>b\n\n>c\nMKV\n", "empty sequence", {"record": 2, "record_id": "b", "line": 3}),
    (b">a\nMKV\n>b x\nMKV\n>a y\nMKV\n", "duplicate id 'a' (first at record 1)", {"record": 3, "record_id": "a", "line": 5}),
    (b">a\nMKV\n>\nMKV\n", "empty id", {"record": 2, "line": 3}),
    (b">a\nMKV\n>b\nMK\nVL1W\n", "invalid character '1' for protein or dna", {"record": 2, "record_id": "b", "position": 5, "line": 5}),
    (b">a\nMKV\n>b\nMK-V\n", "invalid character '-'", {"record": 2, "record_id": "b", "position": 3, "line": 4}),
    (b">a\nMK\tV \x01\n", "invalid character '\\x01'", {"record": 1, "record_id": "a", "position": 4, "line": 2}),
    (b">a\nMK\xc3\xa9V\n", "invalid character '\xe9'", {"record": 1, "record_id": "a", "position": 3}),
    (b">a\nMK\x00V\n", "binary data, not FASTA/FASTQ", {"line": 2}),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "binary data, not FASTA/FASTQ", {}),
    (b">a\nMK\xff\xfeV\n", "binary data, not FASTA/FASTQ", {"line": 2}),
    (gzip.compress(b">a\nMKV\n" * 50)[:-10], "truncated or corrupt gzip data", {}),
    (b"\x1f\x8bnot really gzip", "truncated or corrupt gzip data", {}),
    (b"@r1\nACGT\nACGT\n+\nIIIIIIII\n", "missing '+' line", {"record": 1, "record_id": "r1", "line": 3}),
    (b"@r1\nACGT\n+\nIIII\n@r2\nACGT\n+\nIII\n", "quality length 3 differs from sequence length 4", {"record": 2, "record_id": "r2", "line": 8}),
    (b"@r1\nACGT\n+\nIIII\n@r2\nACGT\n", "truncated FASTQ record", {"record": 2, "record_id": "r2"}),
    (b"@r1\nACGT\n+\nIIII\n>r2\nACGT\n+\nIIII\n", "expected '@'", {"record": 2, "line": 5}),
    (b"@r1\nAC GT\n+\nII I\n", "invalid quality character ' '", {"record": 1, "record_id": "r1", "line": 4, "position": 3}),
    (b"@r1\nACGT\n+\nIIII\n@r1\nACGT\n+\nIIII\n", "duplicate id 'r1' (first at record 1)", {"record": 2, "record_id": "r1", "line": 5}),
    (b"@r1\nACZT\n+\nIIII\n", "invalid character 'Z'", {"record": 1, "record_id": "r1", "position": 3, "line": 2}),
    (b"BZh91AY&SY", "bzip2", {}),
]


@pytest.mark.parametrize("data, message, fields", ERROR_CASES)
def test_error_messages(tmp_path, data, message, fields):
    path = write(tmp_path, "bad input.fa", data)
    kwargs = {"alphabet": "dna"} if b"ACZT" in data else {}
    with pytest.raises(InputError) as info:
        read_sequences(path, **kwargs)
    text = check_error(info.value, source=str(path), **fields)
    assert message in text
    # The same input from a stream names "<input>" and gives the same location.
    with pytest.raises(InputError) as again:
        read_bytes(data, **kwargs)
    assert str(again.value) == text.replace(str(path), "<input>", 1)


def test_first_error_in_file_order():
    # A bad character in record 1 comes before the duplicate id in record 3.
    with pytest.raises(InputError) as info:
        read_bytes(b">a\nMK1\n>b\nMKV\n>a\nMKV\n")
    check_error(info.value, record=1, record_id="a", position=3)
    # A duplicate id in record 2 comes before the bad character in record 3.
    with pytest.raises(InputError) as info:
        read_bytes(b">a\nMKV\n>a\nMKV\n>c\nMK1\n")
    check_error(info.value, record=2, record_id="a")
    assert "duplicate" in str(info.value)


def test_non_printable_ids_stay_on_one_line():
    with pytest.raises(InputError) as info:
        read_bytes(">a\u2028b\nMKV\n>a\u2028b\nMK\n".encode())
    check_error(info.value, record=2)
    assert not any(c in str(info.value) for c in "\u2028\n")


# ----------------------------------------------------------------------------- alphabet


def test_alphabet_detection_and_forcing():
    dna = b">a\nACGTACGTNN\n>b\nacgu\n"
    protein = b">a\nEMKVLEQ\n>b\nACGT\n"
    assert read_bytes(dna).alphabet == "dna"
    assert read_bytes(protein).alphabet == "protein"
    # Forcing protein on nucleotides is allowed: they are protein letters too.
    forced = read_bytes(dna, alphabet="protein")
    assert forced.alphabet == "protein" and forced.sequences == ["ACGTACGTNN", "ACGU"]
    assert read_bytes(dna, alphabet="dna").alphabet == "dna"
    with pytest.raises(InputError) as info:
        read_bytes(protein, alphabet="dna")
    text = check_error(info.value, record=1, record_id="a", position=1, line=2)
    assert "invalid character 'E' for dna" in text
    with pytest.raises(InputError) as info:
        read_bytes(b">a\nMKV1\n", alphabet="protein")
    assert "invalid character '1' for protein" in str(info.value)


@pytest.mark.parametrize("bad", ["rna", "", "DNA ", 3])
def test_unknown_alphabet(bad):
    with pytest.raises(ValueError, match="alphabet"):
        read_bytes(b">a\nACGT\n", alphabet=bad)
    with pytest.raises(ValueError, match="alphabet"):
        records_from_python(["ACGT"], alphabet=bad)


# ----------------------------------------------------------------------------- real files


def independent_count(path: pathlib.Path) -> tuple[int, int]:
    """Records ('>' lines) and residues (other non-blank bytes) counted without the parser."""
    records = residues = 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b">"):
                records += 1
            else:
                residues += len(line.strip())
    return records, residues


@pytest.mark.parametrize(
    "name, count, alphabet",
    [
        ("adeno_fiber.faa", 242, "protein"),
        ("genes_CP040672.fna", 100, "dna"),
        ("proteome_HG003687.faa", 2100, "protein"),
        ("reads_cdiph.fa", 1000, "dna"),
    ],
)
def test_real_files(name, count, alphabet, data_dir):
    path = data_dir / name
    records_count, residues = independent_count(path)
    assert records_count == count
    records = read_sequences(path)
    assert len(records) == count
    assert records.alphabet == alphabet
    assert int(records.lengths.sum()) == residues
    check_records(records)
    # The first id is the first header's first token.
    with open(path, "rb") as handle:
        assert records.ids[0] == handle.readline()[1:].split()[0].decode()


def test_large_file_plain_and_gzip(tmp_path):
    rng = np.random.default_rng(1)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    parts = []
    for k in range(5000):
        seq = letters[rng.integers(0, 20, size=200)].tobytes()
        parts.append(b">s%d some description\n" % k + b"\n".join(seq[i : i + 60] for i in range(0, 200, 60)) + b"\n")
    data = b"".join(parts)
    assert len(data) > 1_000_000
    path = write(tmp_path, "big.fa", data)
    gz = write(tmp_path, "big.fa.gz", gzip.compress(data, compresslevel=1))
    for source in (path, gz):
        records = read_sequences(source)
        assert len(records) == 5000 and records.lengths.sum() == 5000 * 200


# ----------------------------------------------------------------------------- Python input


def test_records_from_python_strings():
    records = records_from_python(["acgt", "GG CC\n"])
    assert records.ids == ["seq1", "seq2"]
    assert records.descriptions == ["", ""]
    assert records.sequences == ["ACGT", "GGCC"]
    assert records.alphabet == "dna"
    assert records.source == "<input>"
    named = records_from_python(("MKV", "LLW"), ids=["x", "y"], alphabet="protein")
    assert named.ids == ["x", "y"] and named.alphabet == "protein"


def test_records_from_python_skbio():
    skbio = pytest.importorskip("skbio")
    seqs = [
        skbio.Protein("MKVL", metadata={"id": "p1", "description": "first"}),
        skbio.DNA("ACGT"),  # no id: default by position
        skbio.Sequence("WWY", metadata={"id": "s3"}),
    ]
    records = records_from_python(seqs)
    assert records.ids == ["p1", "seq2", "s3"]
    assert records.descriptions == ["first", "", ""]
    assert records.sequences == ["MKVL", "ACGT", "WWY"]
    assert records.alphabet == "protein"
    assert records_from_python(seqs, ids=["a", "b", "c"]).ids == ["a", "b", "c"]
    with pytest.raises(TypeError, match="list"):
        records_from_python(skbio.DNA("ACGT"))


def test_records_from_python_matches_file_reading(data_dir):
    records = read_sequences(data_dir / "adeno_fiber.faa")
    again = records_from_python(records.sequences, ids=records.ids)
    assert again.sequences == records.sequences and again.ids == records.ids
    assert again.alphabet == records.alphabet


@pytest.mark.parametrize(
    "args, kwargs, message, fields",
    [
        ((["MKV", "MK1V"],), {}, "invalid character '1'", {"record": 2, "record_id": "seq2", "position": 3}),
        ((["MKV", "MKV"],), {"ids": ["a", "a"]}, "duplicate id 'a' (first at record 1)", {"record": 2, "record_id": "a"}),
        ((["MKV", "MKV"],), {"ids": ["a", ""]}, "empty id", {"record": 2}),
        ((["MKV", "MKV"],), {"ids": ["a", "b c"]}, "contains whitespace", {"record": 2}),
        ((["MKV", " \n"],), {}, "empty sequence", {"record": 2, "record_id": "seq2"}),
        (([],), {}, "no records", {}),
        ((["ACGT", "ACEGT"],), {"alphabet": "dna"}, "invalid character 'E' for dna", {"record": 2, "position": 3}),
    ],
)
def test_records_from_python_errors(args, kwargs, message, fields):
    with pytest.raises(InputError) as info:
        records_from_python(*args, **kwargs)
    text = check_error(info.value, source="<input>", **fields)
    assert message in text
    assert info.value.line is None


def test_records_from_python_type_errors():
    with pytest.raises(TypeError, match="single sequence"):
        records_from_python("ACGT")
    with pytest.raises(TypeError, match="expected str"):
        records_from_python(["ACGT", 5])
    with pytest.raises(TypeError):
        records_from_python(["ACGT"], ids="a")
    with pytest.raises(ValueError, match="2 ids for 1 sequences"):
        records_from_python(["ACGT"], ids=["a", "b"])


# ----------------------------------------------------------------------------- properties

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read_or_error(data: bytes, **kwargs) -> SequenceRecords | None:
    """Read ``data``: records or an InputError (one line); anything else fails the test."""
    start = time.perf_counter()
    try:
        records = read_bytes(data, **kwargs)
    except InputError as err:
        assert "\n" not in str(err) and "\r" not in str(err)
        records = None
    else:
        check_records(records)
    assert time.perf_counter() - start < 30.0  # a guard against hangs, not a speed test
    return records


@SETTINGS
@given(
    prefix=st.sampled_from([b"", b">", b"@", b">a\n", b"@a\nAC\n+\n", b"\x1f\x8b"]),
    body=st.binary(max_size=300),
    compress=st.booleans(),
)
def test_random_bytes(prefix, body, compress):
    data = prefix + body
    read_or_error(gzip.compress(data) if compress else data)


ids_st = st.text(alphabet="abcXYZ019_|.-", min_size=1, max_size=6)
residues_st = st.text(alphabet="ACDEFGHIKLMNPQRSTVWYacgtn*", min_size=1, max_size=40)
records_st = st.lists(st.tuples(ids_st, residues_st), min_size=1, max_size=6, unique_by=lambda r: r[0])


def to_fasta(records, width: int, crlf: bool = False) -> bytes:
    nl = "\r\n" if crlf else "\n"
    out = []
    for ident, seq in records:
        out.append(f">{ident} desc of {ident}{nl}")
        out.extend(seq[i : i + width] + nl for i in range(0, len(seq), width))
    return "".join(out).encode()


@SETTINGS
@given(
    records=records_st,
    fastq=st.booleans(),
    mutations=st.lists(
        st.tuples(
            st.sampled_from(["insert", "delete", "truncate"]),
            st.integers(min_value=0, max_value=10_000),
            st.sampled_from(list(b"\n\r\t >@+-1\x00\xff\xc3ZzJ*")),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_near_fasta(records, fastq, mutations):
    if fastq:
        data = "".join(f"@{i}\n{s}\n+\n{'I' * len(s)}\n" for i, s in records).encode()
    else:
        data = to_fasta(records, 7)
    buf = bytearray(data)
    for kind, where, byte in mutations:
        if not buf:
            break
        at = where % (len(buf) + 1)
        if kind == "insert":
            buf[at:at] = bytes([byte])
        elif kind == "delete":
            del buf[at : at + 1]
        else:
            del buf[at:]
    read_or_error(bytes(buf))


@SETTINGS
@given(records=records_st, width=st.integers(min_value=1, max_value=50), crlf=st.booleans(), fastq=st.booleans())
def test_round_trip(tmp_path_factory, records, width, crlf, fastq):
    if fastq:
        data = "".join(f"@{i} desc of {i}\n{s}\n+\n{'#' * len(s)}\n" for i, s in records).encode()
    else:
        data = to_fasta(records, width, crlf)
    plain = read_bytes(data)
    assert plain.ids == [i for i, _ in records]
    assert plain.descriptions == [f"desc of {i}" for i, _ in records]
    assert plain.sequences == [s.upper() for _, s in records]
    check_records(plain)
    path = tmp_path_factory.mktemp("rt") / "seqs"
    path.write_bytes(gzip.compress(data))
    packed = read_sequences(path)
    assert (packed.ids, packed.descriptions, packed.sequences, packed.alphabet) == (
        plain.ids,
        plain.descriptions,
        plain.sequences,
        plain.alphabet,
    )
    again = records_from_python(plain.sequences, ids=plain.ids, alphabet=plain.alphabet)
    assert again.sequences == plain.sequences


# ---------------------------------------------------------------------------------
# FASTA read in whole-text passes (sequences.FASTA_AT_ONCE) against record by record
# ---------------------------------------------------------------------------------

_HEADER_BITS = ["id", "x", "sp|P1|A_B", "é", "", " ", "\t", "\r", "  desc", "\tand more",
                "a  b\tc ", "\x0b", "\x0c", "dup", ">", "\u00a0nb"]
_BODY_BITS = ["ACGT", "acgu", "MKVLA", "wyB", "N", "", " ", "\t", "\r", "\n", "\n\n",
              "\x0b", "\x0c", "*", "-", "1", ">", "\x01", "é"]


def _read_both(data: bytes, monkeypatch, alphabet=None):
    """``read_sequences`` on ``data`` with the whole-text pass and record by
    record: each either its records or its error's message."""
    from pairalign import sequences

    out = []
    for at_once in (True, False):
        monkeypatch.setattr(sequences, "FASTA_AT_ONCE", at_once)
        try:
            r = read_bytes(data, alphabet=alphabet)
            out.append((r.ids, r.descriptions, r.sequences, r.alphabet, r.source))
        except InputError as exc:
            out.append(str(exc))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lead=st.sampled_from(["", "\n", " \n", "\n\n  ", "  "]),
       records=st.lists(st.tuples(st.lists(st.sampled_from(_HEADER_BITS), max_size=4),
                                  st.lists(st.sampled_from(_BODY_BITS), max_size=6)),
                        min_size=1, max_size=6),
       newline=st.sampled_from(["\n", "\r\n"]), last_newline=st.booleans(),
       alphabet=st.sampled_from([None, "protein", "dna"]))
def test_fasta_read_at_once_as_record_by_record(monkeypatch, lead, records, newline,
                                                last_newline, alphabet):
    """Any FASTA text (blank lines, CRLF, whitespace in headers and sequences,
    empty or duplicate ids, empty records, bytes outside the alphabet, UTF-8,
    no final newline): the whole-text pass gives the records, or the error,
    that reading record by record gives."""
    text = lead + "".join(
        ">" + "".join(head) + newline + "".join(body).replace("\n", newline) + newline
        for head, body in records)
    if not last_newline:
        text = text.rstrip("\r\n")
    fast, slow = _read_both(text.encode("utf-8"), monkeypatch, alphabet)
    assert fast == slow


_DESC_BITS = ["", " desc", "\tand more", "  a  b\tc ", " é", "\r", " \x0b", " x\x0cy", " >"]
_GOOD_BODY = ["ACGT", "acgu", "MKVLA", "wyB", "N", " ", "\t", "\r", "\n", "\n\n", "\x0b"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lead=st.sampled_from(["", "\n", " \n", "  "]),
       records=st.lists(st.tuples(st.sampled_from(["", " ", "\t"]), st.sampled_from(_DESC_BITS),
                                  st.lists(st.sampled_from(_GOOD_BODY), min_size=1, max_size=6)),
                        min_size=1, max_size=6),
       newline=st.sampled_from(["\n", "\r\n"]), last_newline=st.booleans())
def test_fasta_read_at_once_as_record_by_record_on_good_input(monkeypatch, lead, records,
                                                              newline, last_newline):
    """FASTA text with unique ids, whitespace in headers and sequences, CRLF,
    blank lines, no final newline: the same records either way, most of
    them (those with a residue each) found by the whole-text pass."""
    from pairalign import sequences

    text = lead + "".join(
        ">" + pad + f"r{k}" + desc + newline + "".join(body).replace("\n", newline) + newline
        for k, (pad, desc, body) in enumerate(records))
    if not last_newline:
        text = text.rstrip("\r\n")
    data = text.encode("utf-8")
    fast, slow = _read_both(data, monkeypatch)
    assert fast == slow
    found = sequences._fasta_at_once(data, data.index(b">"), "<input>", None)
    assert (found is not None) == (not isinstance(slow, str))


def test_fasta_read_at_once_on_the_shared_files(monkeypatch, data_dir):
    """The project's FASTA files read the same either way."""
    for name in ("proteome_HG003687.faa", "adeno_fiber.faa", "genes_CP040672.fna"):
        fast, slow = _read_both((data_dir / name).read_bytes(), monkeypatch)
        assert not isinstance(fast, str) and fast == slow


@pytest.mark.parametrize("data, ids, seqs, descriptions", [
    (b">a desc\rACGT\r>b\nGGGG\n", ["a", "b"], ["ACGT", "GGGG"], ["desc", ""]),
    (b">a\rACGT\nGG\n", ["a"], ["ACGTGG"], [""]),
    (b">a\rMKV\r\n>b\r\nWW\r\n", ["a", "b"], ["MKV", "WW"], ["", ""]),
    (b">a x \rACGT\r", ["a"], ["ACGT"], ["x"]),
    (b"@r\rACGT\r+\rIIII\r", ["r"], ["ACGT"], [""]),
])
def test_a_lone_carriage_return_ends_a_line(data, ids, seqs, descriptions, monkeypatch):
    """CR alone ends a line, as CR LF and LF do (Python's universal newlines):
    a header's CR once made the next lines its description, and their
    records vanished with no error."""
    for got in _read_both(data, monkeypatch):
        assert not isinstance(got, str), got
        assert (got[0], got[2], got[1]) == (ids, seqs, descriptions)


def test_a_long_run_of_blanks_in_a_header_reads_in_linear_time(monkeypatch):
    """A header's description with 200,000 blanks inside: the split of the
    whole text took time quadratic in the run (minutes here); it must take
    well under a second, so a generous bound tells a hang from a slow host."""
    import threading

    data = b">a b" + b" " * 200_000 + b"c \n" + b"MKV\n" * 3 + b">d\nWW\n"
    done = []
    worker = threading.Thread(target=lambda: done.append(_read_both(data, monkeypatch)),
                              daemon=True)
    worker.start()
    worker.join(30)
    assert done, "still splitting the header after 30 s"
    for got in done[0]:
        assert got[0] == ["a", "d"] and got[1][0] == "b" + " " * 200_000 + "c"


def test_a_fastq_plus_line_naming_another_record_is_refused():
    """The '+' line may be empty or repeat the record's id; another id means a
    corrupt or mis-joined file."""
    assert read_bytes(b"@r x\nACGT\n+r\nIIII\n").sequences == ["ACGT"]
    with pytest.raises(InputError, match=r"line 3: record 1 \(r\): the '\+' line names 's'"):
        read_bytes(b"@r\nACGT\n+s\nIIII\n")


def test_an_unpaired_surrogate_is_named_as_it_is():
    with pytest.raises(InputError, match="position 3: invalid character '\ufffd'"):
        records_from_python(["AC\ud800GT"])
