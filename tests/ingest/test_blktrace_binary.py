"""blktrace binary reader: same events as blkparse's text of the same files, and clear errors."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.errors import InputFormatError
from blkscope.ingest.blktrace.decode import decode
from blkscope.ingest.blktrace.records import RECORD, RECORD_BYTES, event_inputs, read_records
from blkscope.ingest.block_events import ingest_blkparse, ingest_events
from blkscope.ingest.sources import close_inputs, path_of
from tests.golden import golden_table

DATA = Path(__file__).parents[1] / "data" / "formats"
GOLDEN = Path(__file__).parents[1] / "golden" / "formats"
CAPTURES = Path(__file__).parents[2] / ".." / "shared" / "captures"


def _compared(table: pa.Table) -> pa.Table:
    """Every column except where the row came from (line vs record numbers, the source)."""
    skip = ("line_no", "input_id", "source")
    return table.select([c for c in table.column_names if c not in skip])


def _decode(prefix: Path) -> pa.Table:
    files = [read_records(p) for p in sorted(glob.glob(f"{prefix}.blktrace.*"))]
    return decode(files, list(range(len(files)))).events


@pytest.mark.parametrize("sample", ["mq30", "loop"])
def test_sample_matches_blkparse_text_row_for_row(sample: str, tmp_path: Path) -> None:
    # The .blkparse.txt beside each sample is blkparse 1.2.0's output for those very files.
    ingest_blkparse([str(DATA / f"{sample}.blkparse.txt")], tmp_path / "text")
    text = pq.read_table(tmp_path / "text" / "events.parquet")
    binary = _decode(DATA / sample)
    assert binary.num_rows == text.num_rows == {"mq30": 397, "loop": 514}[sample]
    # Same order too: blkparse prints by time, then by CPU except on a tie (see next test).
    assert _compared(binary).equals(_compared(text))


def test_loop_sample_has_the_hard_shapes() -> None:
    rows = _decode(DATA / "loop").to_pylist()
    flush_issue = next(r for r in rows if r["action"] == "D" and r["rwbs"] == "FN")
    assert (flush_issue["sector"], flush_issue["nsectors"], flush_issue["comm"]) == (
        None,
        None,
        "kworker/0:1H",
    )
    flush_done = next(r for r in rows if r["action"] == "C" and r["rwbs"] == "FN")
    assert (flush_done["sector"], flush_done["nsectors"], flush_done["error"]) == (0, 0, 0)
    split = next(r for r in rows if r["action"] == "X")
    assert split["split_sector"] - split["sector"] == 128
    assert split["nsectors"] is None
    unplug = next(r for r in rows if r["action"] == "U")
    assert unplug["depth"] == 16


def test_mq30_sample_clock_and_notes(tmp_path: Path) -> None:
    manifest = ingest_events([str(DATA / "mq30")], tmp_path / "ds")
    clock = pq.read_table(tmp_path / "ds" / "trace_clock.parquet").to_pylist()
    # The first event is 24.804678989 s into the capture (its blkparse.txt says so); the wall
    # note is stamped at the capture's start.
    assert clock == [
        {
            "base_time_ns": 585147491082,
            "dev_major": 254,
            "dev_minor": 0,
            "cpu": 0,
            "note_time_ns": 560342812093,
            "wall_ns": 1795304269326334032,
        }
    ]
    # clock.txt of that capture: "560418451909 1795304269401973848" (mono, wall taken together).
    assert clock[0]["wall_ns"] - clock[0]["note_time_ns"] == 1795304269401973848 - 560418451909
    # The notes are stamped at the whole capture's first event, before this window's first one.
    assert manifest["trace_clock"]["smallest_record_time_ns"] == 560342812093
    assert manifest["trace_clock"]["other_notes"] == 133
    assert manifest["trace_clock"]["message_notes"] == 0
    assert [i["records"] for i in manifest["inputs"]] == [313, 217]
    assert manifest["events"]["count"] == 397


def test_pid_without_process_note_prints_null_like_blkparse(tmp_path: Path) -> None:
    for path in sorted(glob.glob(f"{DATA / 'mq30'}.blktrace.*")):
        f = read_records(path)
        r = f.records
        is_name_note = (((r["action"] >> 16) & (1 << 10)) != 0) & ((r["action"] & 0xFF) == 0)
        with open(tmp_path / Path(path).name, "wb") as out:
            for i in np.flatnonzero(~is_name_note).tolist():
                start = int(f.offsets[i])
                out.write(f.data[start : start + RECORD_BYTES + int(r["pdu_len"][i])].tobytes())
    first = _decode(tmp_path / "mq30").slice(0, 1).to_pylist()[0]
    # blkparse -i prints "254,0 1 19168 0.000000000 11562 Q WS 320898552 + 8 [(null)]".
    assert (first["pid"], first["action"], first["comm"]) == (11562, "Q", "(null)")


def _copy_sample(tmp_path: Path) -> Path:
    target = tmp_path / "trace.blktrace.0"
    shutil.copy(DATA / "mq30.blktrace.0", target)
    return target


def test_big_endian_file_is_refused(tmp_path: Path) -> None:
    path = _copy_sample(tmp_path)
    f = read_records(str(path))
    with open(path, "wb") as out:
        for i in range(len(f.records)):
            rec = f.records[i : i + 1].astype(RECORD.newbyteorder(">"))
            out.write(rec.tobytes() + f.pdu(i))
    with pytest.raises(InputFormatError) as err:
        read_records(str(path))
    assert str(err.value) == (
        f"{path}: big-endian blktrace file: only little-endian (x86, arm64) traces are supported"
    )


def test_corrupted_magic_names_the_record(tmp_path: Path) -> None:
    path = _copy_sample(tmp_path)
    data = bytearray(path.read_bytes())
    f = read_records(str(path))
    offset = int(f.offsets[3])
    data[offset : offset + 4] = b"\x00\x00\x00\x00"
    path.write_bytes(bytes(data))
    with pytest.raises(InputFormatError) as err:
        read_records(str(path))
    assert str(err.value) == (
        f"{path}: corrupted blktrace file: bad magic 0x00000000 in record 4 "
        f"at byte offset {offset} (expected 0x65617407)"
    )


def test_wrong_version_and_truncation(tmp_path: Path) -> None:
    path = _copy_sample(tmp_path)
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[:-5]))
    with pytest.raises(InputFormatError) as err:
        read_records(str(path))
    assert str(err.value) == (
        f"{path}: truncated blktrace file: record 313 at byte offset 16328 "
        "is cut short (43 of its bytes present)"
    )
    data[0] = 0x06
    path.write_bytes(bytes(data))
    with pytest.raises(InputFormatError) as err:
        read_records(str(path))
    assert str(err.value) == (
        f"{path}: unsupported blktrace version 6 in record 1 (only version 7 is supported)"
    )


def _event_inputs(inputs: list[str]) -> tuple[list[str], bool]:
    """event_inputs' paths (the files it opened, closed)."""
    found, binary = event_inputs(inputs)
    close_inputs(found)
    return [path_of(i) for i in found], binary


def test_inputs_resolve_prefix_files_and_refuse_mixing(tmp_path: Path) -> None:
    prefix = str(DATA / "mq30")
    assert _event_inputs([prefix]) == ([f"{prefix}.blktrace.0", f"{prefix}.blktrace.1"], True)
    assert _event_inputs([f"{prefix}.blktrace.1"]) == ([f"{prefix}.blktrace.1"], True)
    assert _event_inputs([f"{prefix}.blkparse.txt"]) == ([f"{prefix}.blkparse.txt"], False)
    with pytest.raises(InputFormatError) as err:
        event_inputs([f"{prefix}.blkparse.txt", prefix])
    assert str(err.value) == (
        f"{prefix}.blkparse.txt: cannot mix blkparse text with blktrace "
        f"binaries ({prefix}.blktrace.0) in one ingest"
    )


def test_cli_ingests_a_prefix(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", str(DATA / "loop"), "-o", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "514 events" in result.output
    assert pq.read_table(tmp_path / "ds" / "events.parquet").num_rows == 514


@pytest.mark.slow
@pytest.mark.skipif(not CAPTURES.exists(), reason="shared captures not present")
@pytest.mark.parametrize("capture", ["mq-writeback-30s", "mq-writeback-60s", "loop-split-merge"])
def test_shared_capture_binary_equals_text(capture: str, tmp_path: Path) -> None:
    folder = CAPTURES / capture
    text_manifest = ingest_blkparse([str(folder / "blkparse.txt.zst")], tmp_path / "text")
    bin_manifest = ingest_events([str(folder / "trace")], tmp_path / "bin")
    assert bin_manifest["events"] == text_manifest["events"]
    text = pq.read_table(tmp_path / "text" / "events.parquet")
    binary = pq.read_table(tmp_path / "bin" / "events.parquet")
    # Not only the same rows sorted by (time_ns, cpu, seq): the same order as blkparse printed,
    # down to the line number each event is printed on.
    assert _compared(binary).equals(_compared(text))
    assert binary["line_no"].equals(text["line_no"])


def test_bfq_messages_kept_and_other_events_match_blkparse(tmp_path: Path) -> None:
    # bfq tags its messages with a cgroup id; blkparse 1.2.0 silently drops those, we keep them.
    events = _decode(DATA / "bfq")
    is_message = pc.equal(events["action"], "m")
    ingest_blkparse([str(DATA / "bfq.blkparse.txt")], tmp_path / "text")
    text = pq.read_table(tmp_path / "text" / "events.parquet")
    assert _compared(events.filter(pc.invert(is_message))).equals(_compared(text))
    messages = events.filter(is_message).select(["cpu", "seq", "time_ns", "pid", "rwbs", "message"])
    expected = golden_table(GOLDEN / "bfq_messages.csv", messages)
    assert messages.num_rows == 108
    assert messages.equals(expected)


def test_every_shape_matches_blkparse(tmp_path: Path) -> None:
    # syn.blktrace.0 (make_synthetic_blktrace.py) holds remap A, PC (SCSI) Q/I/D/C/R, zero-byte
    # Q/D/C, discard, FUA, error 65531, a message, a pid without a note, UT depth > u32, an ABORT
    # and a cgroup-tagged Q; syn.blkparse.txt is blkparse 1.2.0's output for it (events only).
    ingest_blkparse([str(DATA / "syn.blkparse.txt")], tmp_path / "text")
    text = pq.read_table(tmp_path / "text" / "events.parquet")
    trace = decode([read_records(str(DATA / "syn.blktrace.0"))], [0])
    assert trace.skipped_by_code == {16: 1}  # ABORT: "Bad fs action" in blkparse too
    events = trace.events
    # blkparse 1.2.0 rejects the cgroup-tagged Q ("Bad fs action 1020101"); newer ones print it.
    cgroup_q = pc.fill_null(
        pc.and_(pc.equal(events["action"], "Q"), pc.equal(events["sector"], 9000)), False
    )
    assert events.filter(cgroup_q).num_rows == 1
    assert _compared(events.filter(pc.invert(cgroup_q))).equals(_compared(text))
    rows = {(r["action"], r["rwbs"]): r for r in events.to_pylist()}
    assert (rows["A", "W"]["remap_dev_minor"], rows["A", "W"]["remap_sector"]) == (17, 1000)
    assert (rows["I", "W"]["pc_bytes"], rows["I", "W"]["pdu"]) == (512, "0a 0b 0c 0d 0e 0f")
    assert (rows["m", "N"]["seq"], rows["m", "N"]["pid"]) == (0, 0)
    assert rows["UT", "W"]["depth"] == 3
