"""Which files, with bad input: hand-made maps with lines that fit no format (counted, or the
first one stops --strict), a map of another device, files deleted or sparse at mapping time,
and paths with newlines and markup: a clear statement or a safe rendering, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.errors import InputFormatError, ParseError
from blkscope.files.attach import HandPlacement, load_maps
from blkscope.files.handmade import HandMap, hand_rows, read_filefrag, read_hand_map
from blkscope.files.mapper import MapBudget, _Walk, map_paths
from blkscope.files.place import placement_of
from blkscope.reports.files_section import which_files_html
from blkscope.reports.files_text import one_line

DATA = Path(__file__).parents[1] / "data" / "files"
REPO = Path(__file__).parents[2]
FILEFRAG = (DATA / "loop-gpt-ext4.maps" / "filefrag-p1.txt").read_text()


def test_filefrag_line_that_fits_nothing_is_counted_or_stops_strict(tmp_path: Path) -> None:
    lines = FILEFRAG.splitlines()
    lines.insert(3, "   0:        0..     oops")
    bad = tmp_path / "ff.txt"
    bad.write_text("\n".join(lines) + "\n")
    hand = HandMap()
    read_hand_map(str(bad), hand, strict=False)
    assert hand.errors == [
        {"file": str(bad), "line_no": 4, "raw": "   0:        0..     oops",
         "reason": "not a filefrag -v line"}
    ]  # fmt: skip
    assert len(hand.extents) == 1442  # every extent row but the bad one, delalloc left out
    with pytest.raises(ParseError) as err:
        read_hand_map(str(bad), HandMap(), strict=True)
    assert str(err.value) == f"{bad}:4: not a filefrag -v line"


def test_a_file_that_is_no_map_is_named(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(InputFormatError) as err:
        read_hand_map(str(other), HandMap(), strict=False)
    assert str(err.value) == f"{other}: not a file map"


def test_icheck_without_a_block_size_says_what_to_add() -> None:
    hand = HandMap(owners={100: 12})
    with pytest.raises(InputFormatError) as err:
        hand_rows(hand, (7, 0), 0, None)
    assert err.value.message() == "icheck gives block numbers but nothing says how big a block is"
    assert err.value.hint == "add `debugfs -R stats DEV` output, or pass --block-size"


def test_a_map_of_another_device_is_refused() -> None:
    with pytest.raises(InputFormatError) as err:
        load_maps([DATA / "loop-gpt-ext4"], [(8, 0)], HandPlacement(), strict=False)
    assert str(err.value) == (
        f"{DATA / 'loop-gpt-ext4'}: the map is of device 7,1, but the trace holds device 8,0"
    )


def test_hand_made_map_with_two_traced_devices_needs_device(tmp_path: Path) -> None:
    ff = tmp_path / "ff.txt"
    ff.write_text(FILEFRAG)
    with pytest.raises(InputFormatError) as err:
        load_maps([ff], [(7, 0), (7, 1)], HandPlacement(), strict=False)
    assert err.value.message() == (
        "cannot tell which traced device the hand-made map is of (2 devices in the trace)"
    )


@pytest.fixture
def on_disk(tmp_path: Path) -> tuple[Path, dict[tuple[int, int], str]]:
    """A folder on a block-device filesystem, and that disk as the traced one."""
    place = placement_of(os.stat(tmp_path).st_dev)
    if place is None:
        pytest.skip("the temp folder is on no block device")
    return tmp_path, {(place.disk_major, place.disk_minor): place.disk}


def _write(path: Path, data: bytes, offset: int = 0) -> None:
    with open(path, "wb") as f:
        f.seek(offset)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())  # a placed extent, not a delayed allocation


def test_fiemap_of_sparse_deleted_and_hostile_files(
    on_disk: tuple[Path, dict[tuple[int, int], str]],
) -> None:
    folder, traced = on_disk
    _write(folder / "sparse", b"x" * 4096, offset=10 << 20)
    hostile = folder / "evil\n<script>alert(1)"  # no slash: a name, not a folder
    _write(hostile, b"y" * 8192)
    rows, report = map_paths([str(folder)], traced, MapBudget(), None)
    if report["skipped"].get("cannot map: Operation not supported"):
        pytest.skip("this filesystem has no FIEMAP")
    data = {r["path"]: r for r in rows if r["kind"] == "data"}
    sparse = data[str(folder / "sparse")]
    assert (sparse["file_offset"], sparse["sectors"]) == (10 << 20, 8)  # only the written block
    assert data[str(hostile)]["sectors"] == 16  # the name kept exactly, newline and all
    assert report["files_mapped"] == 3  # the folder and both files
    walk = _Walk(traced, MapBudget())
    walk.map_one(str(folder / "gone"))
    assert dict(walk.skipped) == {"deleted before it could be mapped": 1}
    assert walk.rows == []


def test_a_budget_stops_the_walk_and_says_so(
    on_disk: tuple[Path, dict[tuple[int, int], str]],
) -> None:
    folder, traced = on_disk
    for i in range(5):
        _write(folder / f"f{i}", b"z")
    _, report = map_paths([str(folder)], traced, MapBudget(max_files=3), None)
    assert report["files_mapped"] == 3
    assert report["left_out"] == [f"file budget (3 files) reached: stopped walking in {folder}"]


def test_hostile_paths_render_on_one_line_and_escaped() -> None:
    path = "/srv/evil\n<script>alert(1)</script>\x1b[2J"
    assert one_line(path) == "/srv/evil\\n<script>alert(1)</script>\\x1b[2J"
    usage = {
        "bytes": 4096, "writeback_bytes": 4096,
        "by_kind": [{"kind": "data", "bytes": 4096, "share": 1.0}],
        "files": [{"path": path, "kind": "data", "bytes": 4096, "share": 1.0, "ios": 1,
                   "writeback_bytes": 4096, "q2c_p99_ns": 1000}],
        "writeback": [{"path": path, "kind": "data", "bytes": 4096, "share": 1.0}],
        "episodes": [],
    }  # fmt: skip
    html = which_files_html(usage)
    assert "<script>" not in html
    assert html.count("/srv/evil\\n&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J") == 2


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "blkscope.cli", *args], capture_output=True, text=True, env=env
    )


@pytest.mark.slow
def test_cli_files_json_during_a_range_and_bad_options(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    assert _cli("ingest", str(DATA / "loop-gpt-ext4"), "-o", str(ds)).returncode == 0
    done = _cli("files", str(ds), "--json")
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)
    assert usage["bytes"] == 87_617_536
    early = json.loads(_cli("files", str(ds), "--during", "0s..5s", "--json").stdout)
    assert early["during"] == "0..5000000000 ns"
    assert 0 < early["bytes"] < usage["bytes"]
    wb = json.loads(_cli("files", str(ds), "--during", "writeback", "--json").stdout)
    assert wb["writeback_bytes"] == usage["writeback_bytes"]
    bad = _cli("files", str(ds), "--during", "lunch")
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        "error: option --during: expected spikes, writeback or START..END, got 'lunch'"
    )
    bare = tmp_path / "bare"
    shutil.copytree(ds, bare)
    manifest = json.loads((bare / "manifest.json").read_text())
    del manifest["tables"]["file_extents"]
    (bare / "manifest.json").write_text(json.dumps(manifest))
    none = _cli("files", str(bare))
    assert none.returncode == 2
    assert none.stderr.startswith("error: file_extents: the dataset has no file map\n")


_NAMES = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
_EXTENT = st.tuples(st.integers(0, 1 << 30), st.integers(0, 1 << 30), st.integers(1, 1 << 20))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NAMES, st.lists(_EXTENT, max_size=4)), max_size=4),
       st.sampled_from([1024, 4096]))  # fmt: skip
def test_filefrag_text_round_trips(files: list[tuple[str, list[Any]]], unit: int) -> None:
    """Any name (markup, ' is ', colons...) and extents, printed as filefrag -v prints them,
    read back as the same extents in bytes."""
    text = ["Filesystem type is: ef53"]
    want = []
    for name, extents in files:
        text.append(f"File size of {name} is 123 (1 block of {unit} bytes)")
        text.append(" ext:     logical_offset:        physical_offset: length:   expected: flags:")
        for i, (logical, physical, length) in enumerate(extents):
            flags = "last,eof" if i == len(extents) - 1 else ""
            text.append(f"{i:4d}: {logical:10d}..{logical + length - 1:10d}: "
                        f"{physical:10d}..{physical + length - 1:10d}: {length:6d}: "
                        f"            {flags}")  # fmt: skip
            want.append((name, logical * unit, physical * unit, length * unit, flags))
        text.append(f"{name}: {len(extents)} extent{'s' if len(extents) != 1 else ''} found")
    hand = HandMap()
    read_filefrag("ff.txt", "\n".join(text) + "\n", hand, strict=True)
    assert hand.extents == want


def test_a_long_blank_run_in_a_bad_extent_row_is_refused_at_once() -> None:
    """The fuzz campaign's file-map hang (seed 12, input 11787): an extent row with 100,000
    blanks before a last field that does not fit took minutes in a regex that could split the
    blanks three ways; now each blank run has one place to go, and the row is refused."""
    row = "   2:     6144..   10239:      16384..     20479:   4096:" + " " * 100_000
    text = "\n".join(
        [
            "File size of a is 4096 (1 block of 4096 bytes)",
            row + "40192:x y",
            row + "40192:   last,eof",
        ]
    )
    hand = HandMap()
    read_filefrag("ff.txt", text + "\n", hand, strict=False)
    assert [(e["line_no"], e["reason"]) for e in hand.errors] == [(2, "not a filefrag -v line")]
    assert hand.extents == [("a", 6144 * 4096, 16384 * 4096, 4096 * 4096, "last,eof")]
