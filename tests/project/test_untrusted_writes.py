"""A capture folder or dataset from another machine cannot make blkscope write files.

Three ways it could: a crafted `tracefs_saved.json` given to `capture-restore` (root), table
names from a manifest pasted into SQL, and `blkscope sql` statements that reach the file system.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.capture import tracefs
from blkscope.capture.tracefs import TracefsJournal
from blkscope.cli import app
from blkscope.errors import CaptureError
from blkscope.ingest.block_events import ingest_blkparse
from tests.conftest import MQ30

runner = CliRunner()
HINT = "this file was not written by blkscope capture on this machine; check it by hand"


@pytest.fixture
def fake_tracefs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder standing in for the tracefs mount, so no real setting is touched."""
    root = tmp_path / "tracing"
    (root / "options").mkdir(parents=True)
    (root / "instances").mkdir()
    files = {
        "trace": "",
        "current_tracer": "nop",
        "available_tracers": "blk function_graph function nop",
        "trace_clock": "[local] global counter uptime perf mono mono_raw boot x86-tsc",
        "saved_cmdlines_size": "128",
        "tracing_on": "1",
    }
    for name, value in files.items():
        (root / name).write_text(value + "\n")
    (root / "options" / "bin").write_text("0\n")
    (root / "buffer_size_kb").write_text("7 (expanded: 1408)\n")
    monkeypatch.setattr(tracefs, "TRACEFS_CANDIDATES", (root,))
    return root


def _journal(folder: Path, saved: object, made_dirs: object = (), mounted: object = None) -> Path:
    record = folder / "tracefs_saved.json"
    doc = {"saved": saved, "made_dirs": list(made_dirs), "mounted": mounted}  # type: ignore[call-overload]
    record.write_text(json.dumps(doc))
    return record


def _refusal(record: Path) -> str:
    with pytest.raises(CaptureError) as err:
        TracefsJournal.load(record)
    assert err.value.hint == HINT
    return str(err.value)


def test_journal_of_real_settings_restores_them(fake_tracefs: Path, tmp_path: Path) -> None:
    inst = fake_tracefs / "instances" / "blkscope-wb-4242"
    inst.mkdir()
    record = _journal(
        tmp_path,
        [
            [str(fake_tracefs / "current_tracer"), "blk"],
            [str(fake_tracefs / "options/bin"), "1"],
            [str(fake_tracefs / "buffer_size_kb"), "7 (expanded: 1408)"],
        ],
        made_dirs=[str(inst)],
    )
    assert TracefsJournal.load(record).restore() == []
    assert (fake_tracefs / "current_tracer").read_text() == "blk\n"
    assert (fake_tracefs / "options" / "bin").read_text() == "1\n"
    assert (fake_tracefs / "buffer_size_kb").read_text() == "1408\n"  # never the shown string
    assert not inst.exists() and not record.exists()


def test_journal_naming_another_file_is_refused(fake_tracefs: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    record = _journal(tmp_path, [[str(victim), "0"]])
    assert _refusal(record) == (
        f"{record}: refusing to restore: '{victim}' is not a tracefs setting blkscope capture changes"
    )
    escape = f"{fake_tracefs}/../victim.txt"
    record = _journal(tmp_path, [[escape, "0"]])
    assert "is not a tracefs setting" in _refusal(record)
    record = _journal(tmp_path, [["/sys/block/../../etc/trace/enable", "1"]])
    assert "is not a tracefs setting" in _refusal(record)
    assert victim.read_text() == "keep\n"


def test_journal_value_a_setting_cannot_hold_is_refused(fake_tracefs: Path, tmp_path: Path) -> None:
    record = _journal(tmp_path, [[str(fake_tracefs / "current_tracer"), "blk\nfunction"]])
    assert _refusal(record) == (
        f"{record}: refusing to restore: 'blk\\nfunction' is not a value "
        f"{fake_tracefs}/current_tracer can hold"
    )


def test_journal_removing_another_folder_is_refused(fake_tracefs: Path, tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    for made in (precious, fake_tracefs / "instances" / "someone-elses"):
        record = _journal(tmp_path, [], made_dirs=[str(made)])
        assert _refusal(record) == (
            f"{record}: refusing to restore: '{made}' is not a tracefs instance blkscope "
            "capture makes"
        )
    assert precious.is_dir()


def test_journal_unmounting_another_path_is_refused(fake_tracefs: Path, tmp_path: Path) -> None:
    boot = tracefs.boot_id()
    record = _journal(tmp_path, [], mounted={"path": "/home", "mount_id": 1, "boot_id": boot})
    assert _refusal(record) == (
        f"{record}: refusing to restore: '/home' is not where blkscope capture mounts tracefs"
    )
    # a candidate, not a tracefs mount
    record = _journal(
        tmp_path, [], mounted={"path": str(fake_tracefs), "mount_id": 1, "boot_id": boot}
    )
    assert (
        _refusal(record) == f"{record}: refusing to restore: {fake_tracefs} is not a tracefs mount"
    )


SYSTEM_TRACEFS = Path("/sys/kernel/tracing")


@pytest.mark.skipif(
    tracefs.tracefs_mount_id(SYSTEM_TRACEFS) is None, reason="no tracefs mounted here"
)
def test_16_journal_unmounting_the_systems_own_tracefs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 finding 16: `"mounted": "/sys/kernel/tracing"` was taken, and capture-restore
    would have unmounted the system's own tracefs. Only the mount capture made (its id, this
    boot) is unmounted."""
    monkeypatch.setattr(tracefs, "TRACEFS_CANDIDATES", (SYSTEM_TRACEFS,))
    record = _journal(tmp_path, [], mounted=str(SYSTEM_TRACEFS))
    assert _refusal(record) == (
        f"{record}: refusing to restore: 'mounted' is '{SYSTEM_TRACEFS}', not the mount id and "
        "boot id blkscope capture records"
    )
    now = tracefs.tracefs_mount_id(SYSTEM_TRACEFS)
    for mount_id, boot in ((now + 1, tracefs.boot_id()), (now, "another-boot")):  # type: ignore[operator]
        record = _journal(
            tmp_path,
            [],
            mounted={"path": str(SYSTEM_TRACEFS), "mount_id": mount_id, "boot_id": boot},
        )
        assert _refusal(record) == (
            f"{record}: refusing to restore: the tracefs mount at {SYSTEM_TRACEFS} (id {now}) is "
            f"not the one blkscope capture made (id {mount_id!r} in boot {boot!r})"
        )


@pytest.mark.parametrize(
    ("setting", "value", "why"),
    [
        ("current_tracer", "wakeup", "available_tracers offers blk function_graph function nop"),
        (
            "trace_clock",
            "jiffies",
            "trace_clock offers local global counter uptime perf mono mono_raw boot x86-tsc",
        ),
        ("saved_cmdlines_size", "40000", "the kernel takes at most 32768"),
    ],
)
def test_16_journal_value_this_machine_never_showed_is_refused(
    fake_tracefs: Path, tmp_path: Path, setting: str, value: str, why: str
) -> None:
    """Issue 33 finding 16: any word was taken for current_tracer (and trace_clock)."""
    record = _journal(tmp_path, [[str(fake_tracefs / setting), value]])
    assert _refusal(record) == (
        f"{record}: refusing to restore: {value!r} is not a value {fake_tracefs}/{setting} can "
        f"hold here: {why}"
    )


def test_16_journal_buffer_bigger_than_the_memory_is_refused(
    fake_tracefs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 finding 16: 12-digit buffer sizes were taken."""
    monkeypatch.setattr(tracefs, "_memory_kb", lambda: 4_000_000)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    path = fake_tracefs / "buffer_size_kb"
    record = _journal(tmp_path, [[str(path), "999999999999"]])
    assert _refusal(record) == (
        f"{record}: refusing to restore: '999999999999' is not a value {path} can hold here: "
        "more than its memory holds (2,000,000 KiB per CPU on 2 CPUs)"
    )
    record = _journal(tmp_path, [[str(path), "7 (expanded: 2000001)"]])
    assert "more than its memory holds" in _refusal(record)
    record = _journal(tmp_path, [[str(path), "2000000"]])
    assert TracefsJournal.load(record).restore() == []
    assert path.read_text() == "2000000\n"


@pytest.mark.parametrize(
    "doc",
    ["[]", '{"saved": [["a"]]}', '{"saved": {"a": "b"}}', "{not json", '{"saved": [[1, 2]]}'],
)
def test_journal_of_the_wrong_shape_is_refused(
    fake_tracefs: Path, tmp_path: Path, doc: str
) -> None:
    record = tmp_path / "tracefs_saved.json"
    record.write_text(doc)
    with pytest.raises(CaptureError) as err:
        TracefsJournal.load(record)
    assert str(err.value).startswith(f"{record}: ")


def test_capture_restore_cli_names_the_file(
    fake_tracefs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    record = _journal(tmp_path, [[str(victim), "0"]])
    result = runner.invoke(app, ["capture-restore", str(tmp_path)])
    assert result.exit_code != 0
    assert "tracefs settings restored" not in result.output
    assert result.output.startswith(f"error: {record}: refusing to restore: ")
    assert victim.read_text() == "keep\n"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("untrusted") / "ds"
    ingest_blkparse([str(MQ30 / "blkparse.txt.zst")], out)
    return out


INJECTED = "x AS SELECT 1; COPY (SELECT 'pwned') TO '{target}'; CREATE OR REPLACE VIEW y"


def test_manifest_table_names_never_reach_sql(dataset: Path, tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    shutil.copytree(dataset, evil)
    target = tmp_path / "pwned.txt"
    manifest = json.loads((evil / "manifest.json").read_text())
    name = INJECTED.format(target=target)
    manifest["tables"][name] = {"file": "events.parquet", "rows": 1}
    (evil / "manifest.json").write_text(json.dumps(manifest))
    for command in (
        ["sql", str(evil), "SELECT 1"],
        ["report", str(evil), "-o", str(tmp_path / "r.html")],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code != 0
        assert result.output.startswith(
            f"error: {evil}/manifest.json: unknown table {name!r} in 'tables'\n"
        )
    assert not target.exists()


def test_manifest_table_file_outside_the_dataset(dataset: Path, tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    shutil.copytree(dataset, evil)
    manifest = json.loads((evil / "manifest.json").read_text())
    manifest["tables"]["events"]["file"] = "../other/events.parquet"
    (evil / "manifest.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["sql", str(evil), "SELECT count(*) FROM events"])
    assert result.exit_code != 0
    assert result.output.startswith(
        f"error: {evil}/manifest.json: table 'events' names file '../other/events.parquet', "
        "not 'events.parquet'\n"
    )


def test_table_file_linked_out_of_the_dataset(dataset: Path, tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    shutil.copytree(dataset, evil)
    outside = tmp_path / "outside.parquet"
    (evil / "events.parquet").rename(outside)
    (evil / "events.parquet").symlink_to(outside)
    result = runner.invoke(app, ["sql", str(evil), "SELECT count(*) FROM events"])
    assert result.exit_code != 0
    assert result.output.startswith(
        f"error: {evil}/events.parquet: is a link to {outside}, outside the dataset\n"
    )


@pytest.mark.parametrize(
    ("query", "verb"),
    [
        ("COPY (SELECT 'pwned') TO '{out}/pwned.csv'", "COPY"),
        ("SELECT 1; COPY events TO '{out}/pwned.parquet'", "COPY"),
        ("EXPORT DATABASE '{out}/exported'", "EXPORT"),
        ("ATTACH '{out}/pwned.db' AS x", "ATTACH"),
        ("INSTALL httpfs", "INSTALL"),
        ("LOAD httpfs", "LOAD"),
        ("SET enable_external_access = true", "SET"),
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ],
)
def test_sql_refuses_statements_that_write(
    dataset: Path, tmp_path: Path, query: str, verb: str
) -> None:
    result = runner.invoke(app, ["sql", str(dataset), query.format(out=tmp_path)])
    assert result.exit_code == 2  # a refused statement is bad input
    assert result.output == (
        f"error: {verb} statements are refused: blkscope sql only reads the dataset\n"
        "hint: save a result with --csv or --json and a shell redirect\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/shadow')",
        "SELECT * FROM read_text('{ds}/../../../etc/passwd')",
        "SELECT * FROM glob('/*')",
    ],
)
def test_sql_reads_nothing_outside_the_dataset(dataset: Path, query: str) -> None:
    result = runner.invoke(app, ["sql", str(dataset), query.format(ds=dataset)])
    assert result.exit_code == 2
    assert "Permission Error: Cannot access file" in result.output
    assert "root:" not in result.output
    assert result.output.endswith(
        "hint: blkscope sql reads only the dataset's own tables; "
        "save a result with --csv or --json and a shell redirect\n"
    )


def test_sql_still_reads_the_dataset(dataset: Path) -> None:
    result = runner.invoke(
        app, ["sql", str(dataset), "SELECT count(*) AS n FROM events WHERE action = 'Q'", "--csv"]
    )
    assert result.exit_code == 0, result.output
    assert result.output == "n\n11039\n"


def test_links_out_of_a_capture_folder_are_named_not_read(tmp_path: Path) -> None:
    """A capture folder from another machine with links to this one's files: a file link
    (iostat.txt -> a real iostat log elsewhere) and a folder link (logs -> the fixtures, a
    whole tree of real inputs). Each is listed as skipped with the reason; nothing behind them
    reaches the dataset. Before, survey() followed both and ingested what they named."""
    cap = tmp_path / "cap"
    cap.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", cap / "blkparse.txt.zst")
    (cap / "iostat.txt").symlink_to(MQ30 / "iostat.txt")
    (cap / "logs").symlink_to(MQ30.parent)
    result = runner.invoke(app, ["ingest", str(cap), "-o", str(tmp_path / "ds"), "--json"])
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    skipped = {s["name"]: s["reason"] for s in manifest["skipped"]}
    reason = "a symbolic link out of the capture folder: not read"
    assert skipped["iostat.txt"] == skipped["logs"] == reason
    assert not any(name.startswith("logs/") for name in skipped)  # the link was not entered
    assert "iostat_log" not in manifest["tables"]
    assert sorted(manifest["tables"]) == [
        "blkparse_summary",
        "events",
        "ingest_errors",
        "last_plugs",
    ]
