"""Which files: the real loop-gpt-ext4 capture (GPT loop disk, ext4 on both partitions, the
tagged RocketMQ-like workload on each) attributed to files, checked against the tags read
back from the disk itself, against hand-made filefrag/debugfs maps, and with bad inputs."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from blkscope.analyze.file_usage import During, file_usage
from blkscope.dataset import Dataset
from blkscope.files.attach import HandPlacement, attach_maps
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze

DATA = Path(__file__).parents[1] / "data" / "files"
CAPTURE = DATA / "loop-gpt-ext4"
MAPS = DATA / "loop-gpt-ext4.maps"
DISK = (7, 1)
P1, P2 = 2048, 329728  # partition starts, from /sys/class/block/loop1p{1,2}/start


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("files") / "ds"
    ingest_folder(CAPTURE, out)
    analyze(out).close()
    return out


def _copy(dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(dataset, out)
    return out


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


def test_folder_ingest_brings_the_capture_file_map(dataset: Path) -> None:
    con = Dataset(dataset).con
    kinds = dict(_rows(con, "SELECT kind, count(*) FROM file_extents GROUP BY 1"))
    assert kinds == {"data": 2272, "directory": 4, "journal": 2, "metadata": 24}
    starts = _rows(con, "SELECT DISTINCT fs_device, partition_start FROM file_extents ORDER BY 2")
    assert starts == [("loop1p1", P1), ("loop1p2", P2)]


def test_sampled_sectors_on_the_disk_hold_the_tag_of_the_file_bio_files_names(
    dataset: Path,
) -> None:
    """1,500 sectors the bios touched, read back from the disk image after the capture
    (tools/files_truth.py): whose tag is there, against the file the map names."""
    con = Dataset(dataset).con
    with open(MAPS / "tag_truth.csv") as f:
        truth = [(int(r["sector"]), r["tag"]) for r in csv.DictReader(f)]
    assert len(truth) == 1500
    con.execute("CREATE TABLE truth (sector BIGINT, tag VARCHAR)")
    con.executemany("INSERT INTO truth VALUES (?, ?)", truth)
    verdicts = dict(_rows(con, """
        SELECT CASE
            WHEN e.kind IS NULL THEN 'unmapped'
            WHEN t.tag = '' AND e.kind <> 'data' THEN 'structure, no tag'
            WHEN t.tag = '' THEN 'file block past its end, no tag'
            WHEN t.tag = CASE WHEN e.partition_start = 2048 THEN 'p1' ELSE 'p2' END
                         || regexp_extract(e.path, '[^/]*$') THEN 'right file'
            ELSE 'wrong file' END AS verdict, count(*)
        FROM truth t LEFT JOIN file_extents e
          ON t.sector >= e.sector AND t.sector < e.sector + e.sectors
        GROUP BY 1"""))  # fmt: skip
    # no sample holds another file's tag and none is unmapped; the journal holds no file's data
    assert verdicts == {
        "right file": 1404,
        "structure, no tag": 86,
        "file block past its end, no tag": 10,
    }
    assert verdicts["right file"] / (verdicts["right file"] + 10) > 0.99
    # the 10 untagged file sectors lie past the end of a consume-queue file (20-byte appends
    # leave the rest of its last block zero): filefrag's sizes say so
    sizes = {}
    for part in (1, 2):
        for m in re.finditer(
            r"File size of .*/mq/(\S+) is (\d+) ", (MAPS / f"filefrag-p{part}.txt").read_text()
        ):
            sizes[f"loop1p{part}", m[1]] = int(m[2])
    past = _rows(con, """
        SELECT e.fs_device, regexp_extract(e.path, '[^/]*$'),
               e.file_offset + (t.sector - e.sector) * 512
        FROM truth t JOIN file_extents e ON t.sector >= e.sector AND t.sector < e.sector + e.sectors
        WHERE t.tag = '' AND e.kind = 'data'""")  # fmt: skip
    assert len(past) == 10
    assert all(name.startswith("cq") and offset >= sizes[dev, name] for dev, name, offset in past)


def test_byte_shares_add_up_and_the_journal_and_metadata_are_labelled(dataset: Path) -> None:
    con = Dataset(dataset).con
    (bio_bytes,) = _rows(con, "SELECT sum(nsectors) * 512 FROM bios WHERE sector IS NOT NULL")[0]
    usage = file_usage(con, During())
    assert usage["bytes"] == bio_bytes == 87_617_536
    shares = {k["kind"]: k["bytes"] for k in usage["by_kind"]}
    assert shares == {"data": 82_481_152, "journal": 5_091_328, "metadata": 28_672,
                      "directory": 16_384}  # fmt: skip
    assert sum(shares.values()) == bio_bytes
    assert "unmapped" not in shares
    journal = [f for f in usage["files"] if f["kind"] == "journal"]
    assert [(f["path"], f["processes"][0]["comm"]) for f in journal] == [
        ("<loop1p2: journal>", "jbd2/loop1p2-8"),
        ("<loop1p1: journal>", "jbd2/loop1p1-8"),
    ]
    metadata = {f["path"] for f in usage["files"] if f["kind"] == "metadata"}
    assert "<loop1p1: block bitmap, group 0>" in metadata


def test_the_seed_question_which_files_periodic_writeback_wrote(dataset: Path) -> None:
    usage = file_usage(Dataset(dataset).con, During())
    wb = usage["writeback"]
    assert sum(w["bytes"] for w in wb) == usage["writeback_bytes"] == 10_518_528
    assert abs(sum(w["share"] for w in wb) - 1.0) < 1e-12
    top = [(w["path"].removeprefix("/work/h16scratch/"), w["bytes"]) for w in wb[:4]]
    assert top == [
        ("g1.p1/mq/index", 6_242_304),
        ("g1.p2/mq/index", 3_248_128),
        ("g1.p1/mq/commitlog", 327_680),
        ("g1.p2/mq/commitlog", 131_072),
    ]
    # the never-synced consume queues went out only by writeback
    cq = [f for f in usage["files"] if "/mq/cq" in f["path"]]
    assert len(cq) == 128
    assert all(f["writeback_bytes"] == f["write_bytes"] > 0 for f in cq)


def test_every_bio_lands_in_its_own_partitions_files(dataset: Path) -> None:
    con = Dataset(dataset).con
    crossed = _rows(con, f"""
        SELECT count(*) FROM bio_files f JOIN bios b USING (q_eid)
        WHERE f.kind <> 'unmapped'
          AND (b.sector >= {P2}) <> (f.fs_device = 'loop1p2')""")  # fmt: skip
    assert crossed == [(0,)]


def _bio_files(dataset: Path, where: str) -> list[tuple[Any, ...]]:
    con = Dataset(dataset).con
    return _rows(con, f"""
        SELECT q_eid, regexp_replace(path, '^/work/h16scratch/g1\\.p[12]', ''), file_offset, bytes
        FROM bio_files WHERE {where} ORDER BY ALL""")  # fmt: skip


@pytest.mark.parametrize(("part", "start"), [(1, P1), (2, P2)])
def test_filefrag_maps_give_the_same_bio_files_as_the_capture_map(
    dataset: Path, tmp_path: Path, part: int, start: int
) -> None:
    own = _bio_files(dataset, f"kind = 'data' AND fs_device = 'loop1p{part}'")
    hand = _copy(dataset, tmp_path)
    attach_maps(hand, [MAPS / f"filefrag-p{part}.txt"], [DISK], HandPlacement(None, start))
    assert _bio_files(hand, "kind = 'data'") == own
    assert len(own) > 1000


def test_debugfs_maps_give_the_same_bytes_per_inode(dataset: Path, tmp_path: Path) -> None:
    """icheck/ncheck of the touched blocks of p1: every inode (files, folders, the journal)
    gets the bytes the capture's own map gives it (bitmaps and other blocks no inode owns are
    unmapped in a debugfs map: icheck finds no owner)."""
    own = _rows(Dataset(dataset).con, """
        SELECT inode, sum(bytes) FROM bio_files
        WHERE fs_device = 'loop1p1' AND kind IN ('data', 'journal', 'directory')
        GROUP BY 1 ORDER BY 1""")  # fmt: skip
    hand = _copy(dataset, tmp_path)
    attach_maps(hand, [MAPS / "debugfs-p1.txt"], [DISK], HandPlacement(None, P1))
    con = Dataset(hand).con
    got = _rows(con, "SELECT inode, sum(bytes) FROM bio_files WHERE kind <> 'unmapped' "
                     "GROUP BY 1 ORDER BY 1")  # fmt: skip
    assert got == own
    assert len(own) == 71  # root and mq folders, journal, 68 files
    journal = _rows(con, "SELECT DISTINCT path FROM bio_files WHERE kind = 'journal'")
    assert journal == [("<journal>",)]


def test_the_report_has_a_which_files_section_with_escaped_paths(
    dataset: Path, tmp_path: Path
) -> None:
    from blkscope.reports.model import load_report
    from blkscope.reports.page import render_page

    html = render_page(load_report(Dataset(dataset)), None)
    section = html[html.index('<section class="files" id="which-files">') :]
    assert "<h3>Writeback bursts (10.0 MiB of flusher writes) went to</h3>" in section
    assert section.count("/work/h16scratch/g1.p1/mq/index") == 2  # top files, writeback
    # a hostile path in the map reaches the page escaped, on one line
    hostile = _copy(dataset, tmp_path)
    con = duckdb.connect()
    evil = "/srv/evil\n<script>alert(1)</script>"
    con.execute(
        f"COPY (SELECT * REPLACE (CASE WHEN path LIKE '%g1.p1/mq/index' THEN '{evil}' "
        f"ELSE path END AS path) FROM read_parquet('{dataset}/file_extents.parquet')) "
        f"TO '{hostile}/file_extents.parquet' (FORMAT parquet)"
    )
    page = render_page(load_report(Dataset(hostile)), None)
    assert "<script>alert" not in page
    assert page.count("/srv/evil\\n&lt;script&gt;alert(1)&lt;/script&gt;") == 2


def test_during_spikes_counts_the_bytes_in_flight_in_the_episodes(dataset: Path) -> None:
    con = Dataset(dataset).con
    whole = file_usage(con, During())
    (episode,) = whole["episodes"]  # one latency episode, 4 s to 5 s
    assert (episode["start_ns"], episode["end_ns"]) == (4_000_000_000, 5_000_000_000)
    spikes = file_usage(con, During("spikes"))
    assert spikes["bytes"] == episode["bytes"] == sum(f["bytes"] for f in episode["files"])
    assert abs(sum(f["share"] for f in episode["files"]) - 1.0) < 1e-12
    assert [f["path"].rsplit("/", 3)[-3:] for f in episode["files"][:2]] == [
        ["g1.p1", "mq", "commitlog"],
        ["g1.p2", "mq", "commitlog"],
    ]
