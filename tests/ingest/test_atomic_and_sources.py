"""Interrupted ingests leave the previous dataset intact; every compression reads the same, and
the same once its head was sniffed."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.errors import BlkscopeError, InputFormatError
from blkscope.ingest import block_events, sources
from blkscope.ingest.blkparse import text_stream
from blkscope.ingest.block_events import ingest_blkparse
from tests.conftest import MQ30, read_zst

runner = CliRunner()


@pytest.fixture(scope="module")
def mq30_text() -> bytes:
    return read_zst(MQ30 / "blkparse.txt.zst")


def test_interrupt_mid_ingest_keeps_the_previous_dataset(
    tmp_path: Path, mq30_text: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(mq30_text)
    out = tmp_path / "ds"
    ingest_blkparse([str(src)], out)
    before = (out / "manifest.json").read_text()
    monkeypatch.setattr(sources, "CHUNK_BYTES", 1 << 20)
    # inputs are chunked where their kind is told (blkparse or tracepoint text)
    monkeypatch.setattr(
        block_events,
        "iter_numbered_chunks",
        lambda source: sources.iter_numbered_chunks(source, 1 << 20),
    )
    original = text_stream.BlkparseTextParser.finish
    calls = {"n": 0}

    def interrupted(self: text_stream.BlkparseTextParser, scanned: Any, is_last: bool) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, scanned, is_last)

    monkeypatch.setattr(text_stream.BlkparseTextParser, "finish", interrupted)
    result = runner.invoke(app, ["ingest", str(src), "-o", str(out)])
    assert result.exit_code == 130
    assert result.stderr == "interrupted: nothing is left half-written\n"
    assert calls["n"] == 3
    assert (out / "manifest.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in.txt"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "compress",
    [gzip.compress, lzma.compress, bz2.compress, None],
    ids=["gzip", "xz", "bzip2", "zstd-file"],
)
def test_compressed_inputs_give_the_same_events(
    tmp_path: Path, mq30_text: bytes, compress: Any
) -> None:
    if compress is None:
        src = MQ30 / "blkparse.txt.zst"
    else:
        src = tmp_path / "in.any"
        src.write_bytes(compress(mq30_text))
    ingest_blkparse([str(src)], tmp_path / "ds")
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["inputs"][0]["lines"] == 75560
    assert (
        manifest["inputs"][0]["compression"]
        == {gzip.compress: "gzip", lzma.compress: "xz", bz2.compress: "bzip2", None: "zstd"}[
            compress
        ]
    )
    events = pq.read_table(tmp_path / "ds" / "events.parquet")
    assert events.num_rows == 75532
    assert events["time_ns"][-1].as_py() == 34_489_643_432


def test_two_inputs_are_numbered_and_hashed(tmp_path: Path, mq30_text: bytes) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    lines = mq30_text.split(b"\n")
    a.write_bytes(b"\n".join(lines[:100]) + b"\n")
    b.write_bytes(b"\n".join(lines[100:300]) + b"\n")
    manifest = ingest_blkparse([str(a), str(b)], tmp_path / "ds")
    assert [i["sha256"] for i in manifest["inputs"]] == [
        hashlib.sha256(a.read_bytes()).hexdigest(),
        hashlib.sha256(b.read_bytes()).hexdigest(),
    ]
    events = pq.read_table(tmp_path / "ds" / "events.parquet")
    assert events.group_by("input_id").aggregate([("line_no", "max")]).sort_by(
        "input_id"
    ).to_pylist() == [
        {"input_id": 0, "line_no_max": 100},
        {"input_id": 1, "line_no_max": 200},
    ]


def test_a_corrupt_zstd_stream_is_a_clear_error(tmp_path: Path) -> None:
    data = (MQ30 / "blkparse.txt.zst").read_bytes()
    src = tmp_path / "cut.zst"
    src.write_bytes(data[: len(data) // 2])
    result = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {src}: zstd stream is corrupt or truncated")
    assert not (tmp_path / "ds").exists()


_COMPRESSORS = {
    "none": lambda data: data,
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bzip2": bz2.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
}


@pytest.mark.parametrize("head", [b"BZh", b"BZh9 plain", b"\x1f\x8b plain", b"BZh1\x31\x41"])
def test_a_plain_input_that_begins_like_a_magic_stays_plain(tmp_path: Path, head: bytes) -> None:
    path = tmp_path / "input"
    path.write_bytes(head + b"\n0 1 2\n")
    source = sources.open_source(str(path))
    try:
        assert (source.compression, source.stream.read()) == ("none", head + b"\n0 1 2\n")
    finally:
        source.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(max_size=3000),
    compression=st.sampled_from(sorted(_COMPRESSORS)),
    head=st.integers(min_value=1, max_value=4000),
    reads=st.lists(st.integers(min_value=-1, max_value=700), max_size=8),
)
def test_a_sniffed_source_gives_every_byte_and_hashes_the_file_once(
    tmp_path: Path, data: bytes, compression: str, head: int, reads: list[int]
) -> None:
    # what recognised the input read its head: its reader gets every byte from the start, and
    # the hash and byte count are the raw file's, each byte counted once
    # a plain input that begins as a compressed format does is that format's (as `file` says)
    assume(compression != "none" or not any(m.match(data) for m, _ in sources._MAGICS))
    raw = _COMPRESSORS[compression](data)
    path = tmp_path / "input"
    path.write_bytes(raw)
    source = sources.open_source(str(path))
    try:
        assert source.sniff(head) == data[:head]
        got = b"".join(source.stream.read(n) for n in reads) + source.stream.read()
        assert source.stream.read(10) == b""
    finally:
        source.close()
    with pytest.raises(ValueError):  # read again once closed: an error, never a short input
        source.stream.read(1)
    assert got == data
    assert source.compression == compression
    assert (source.bytes_read, source.sha256()) == (len(raw), hashlib.sha256(raw).hexdigest())


def _chunks_or_error(chunks: Any) -> list[tuple[int, bytes]] | str:
    try:
        return [(first, bytes(chunk)) for first, chunk in chunks]
    except BlkscopeError as exc:
        return str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.binary(max_size=90).map(lambda b: b.replace(b"\n", b"")), max_size=60),
    last_newline=st.booleans(),
    chunk_bytes=st.integers(min_value=1, max_value=300),
    max_line=st.integers(min_value=1, max_value=200),
)
def test_a_mapped_file_is_cut_as_its_stream_is(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    last_newline: bool,
    chunk_bytes: int,
    max_line: int,
) -> None:
    # a plain file is read mapped into memory: the same chunks, line numbers, errors, hash and
    # byte count as reading it as a stream
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    assume(data)
    path = tmp_path_factory.mktemp("mapped") / "t.txt"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sources, "MAX_LINE_BYTES", max_line)
        streamed_source = sources.open_source(str(path))
        mapped_source = sources.open_source(str(path))
        try:
            streamed = _chunks_or_error(sources._streamed_chunks(streamed_source, chunk_bytes))
            mapped_chunks = sources.iter_numbered_chunks(mapped_source, chunk_bytes)
            assert mapped_chunks.__name__ == "_mapped_chunks"  # type: ignore[attr-defined]
            mapped = _chunks_or_error(mapped_chunks)
        finally:
            streamed_source.close()
            mapped_source.close()
    assert mapped == streamed
    if not isinstance(mapped, str):
        assert mapped_source.sha256() == hashlib.sha256(data).hexdigest()
        assert mapped_source.bytes_read == len(data)


def test_a_mapped_file_cut_shorter_while_read_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"0123456789\n" * 1000)
    source = sources.open_source(str(path))
    try:
        chunks = sources.iter_numbered_chunks(source, 4096)
        assert next(chunks)[0] == 1
        with path.open("r+b") as f:
            f.truncate(5000)
        with pytest.raises(InputFormatError) as caught:
            next(chunks)
    finally:
        source.close()
    assert str(caught.value) == (
        f"{path}: changed while being read: 11,000 bytes when opened, 5,000 now"
    )


def test_a_mapped_file_that_grows_while_read_is_read_to_its_new_end(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"0123456789\n" * 1000)
    source = sources.open_source(str(path))
    try:
        chunks = sources.iter_numbered_chunks(source, 4096)
        got = [bytes(next(chunks)[1])]
        with path.open("ab") as f:
            f.write(b"abc\n" * 3000)
        got += [bytes(chunk) for _, chunk in chunks]
    finally:
        source.close()
    assert b"".join(got) == path.read_bytes()
    assert source.sha256() == hashlib.sha256(path.read_bytes()).hexdigest()
