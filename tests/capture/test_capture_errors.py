"""`blkscope capture` refuses bad requests with the exact message and fix, before any change."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.capture import tracefs
from blkscope.capture.ftrace_blk import per_cpu_buffer_kb
from blkscope.capture.runner import CaptureOptions, restore_from, run_capture
from blkscope.cli import app
from blkscope.errors import CaptureError


def _refused(opts: CaptureOptions) -> CaptureError:
    with pytest.raises(CaptureError) as err:
        run_capture(opts)
    return err.value


def test_not_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    err = _refused(CaptureOptions(["vda"], tmp_path / "c", duration_s=1))
    assert str(err) == "blkscope capture: must run as root (it changes tracefs settings)"
    assert err.hint == "run it with sudo, e.g. `sudo blkscope capture --device sda ...`"
    assert not (tmp_path / "c").exists()


def test_nothing_bounds_the_capture(tmp_path: Path) -> None:
    err = _refused(CaptureOptions(["vda"], tmp_path / "c"))
    assert str(err) == "blkscope capture: nothing bounds the capture"
    assert err.hint == "give --duration SECONDS, a command after --, or both"


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend to be root: these checks run before anything is changed."""
    monkeypatch.setattr("os.geteuid", lambda: 0)


@pytest.mark.skipif(not Path("/sys/block").is_dir(), reason="no /sys/block")
@pytest.mark.usefixtures("as_root")
def test_unknown_device(tmp_path: Path) -> None:
    err = _refused(CaptureOptions(["nosuchdisk9"], tmp_path / "c", duration_s=1))
    assert str(err) == "/dev/nosuchdisk9: no such block device"
    assert err.hint is not None and err.hint.startswith("use a name from /sys/block: ")
    err = _refused(CaptureOptions(["../vda"], tmp_path / "c", duration_s=1))
    assert str(err) == "/dev/../vda: no such block device"


def _a_device() -> str:
    found = sorted(p.name for p in Path("/sys/block").iterdir() if (p / "trace/enable").exists())
    if not found:
        pytest.skip("no block device with a trace folder")
    return found[0]


@pytest.mark.usefixtures("as_root")
def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    out = tmp_path / "c"
    out.mkdir()
    (out / "capture.json").write_text("{}")
    err = _refused(CaptureOptions([_a_device()], out, duration_s=1))
    assert str(err) == f"{out}: already holds files; refusing to overwrite"
    assert err.hint == "pass --force to replace an earlier capture, or pick another -o"
    assert (out / "capture.json").read_text() == "{}"


@pytest.mark.usefixtures("as_root")
def test_force_never_deletes_a_folder_that_is_not_a_capture(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep")
    err = _refused(CaptureOptions([_a_device()], tmp_path, duration_s=1, force=True))
    assert str(err) == f"{tmp_path}: is not a capture folder; --force only replaces captures"
    assert (tmp_path / "precious.txt").read_text() == "keep"


def test_cli_prints_error_and_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    result = CliRunner().invoke(
        app, ["capture", "--device", "vda", "--duration", "1", "-o", str(tmp_path / "c")]
    )
    assert result.exit_code == 1
    assert result.output == (
        "error: blkscope capture: must run as root (it changes tracefs settings)\n"
        "hint: run it with sudo, e.g. `sudo blkscope capture --device sda ...`\n"
    )


def test_tracefs_missing_and_unmountable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tracefs, "TRACEFS_CANDIDATES", (tmp_path / "no" / "tracing",))
    with pytest.raises(CaptureError) as err:
        tracefs.ensure_tracefs(tracefs.TracefsJournal())
    assert str(err.value) == (
        f"{tmp_path}/no/tracing: tracefs is not mounted and could not be mounted"
    )
    assert err.value.hint == (
        "the kernel needs CONFIG_FTRACE and CONFIG_BLK_DEV_IO_TRACE; try "
        "`mount -t tracefs nodev /sys/kernel/tracing`"
    )


def test_ring_buffer_total_stays_bounded() -> None:
    assert per_cpu_buffer_kb(8192, 2) == 8192
    assert per_cpu_buffer_kb(8192, 256) == 4096  # 256 CPUs x 4 MiB = 1 GiB
    assert per_cpu_buffer_kb(8192, 100000) == 256


@pytest.mark.usefixtures("as_root")
def test_force_keeps_a_killed_captures_journal(tmp_path: Path) -> None:
    (tmp_path / "capture.json").write_text("{}")
    (tmp_path / "tracefs_saved.json").write_text("{}")
    err = _refused(CaptureOptions([_a_device()], tmp_path, duration_s=1, force=True))
    assert str(err) == (
        f"{tmp_path}/tracefs_saved.json: a killed capture's tracefs changes are still to be undone"
    )
    assert err.hint == f"run `blkscope capture-restore {tmp_path}` first"


@pytest.mark.usefixtures("as_root")
def test_capture_restore_without_journal(tmp_path: Path) -> None:
    with pytest.raises(CaptureError) as err:
        restore_from(tmp_path)
    assert str(err.value) == f"{tmp_path}/tracefs_saved.json: nothing to restore"
