"""What capture may take (printed at start) and what it could not record (in its summary)."""

from __future__ import annotations

from pathlib import Path

from blkscope.capture.limits import disk_cap_mib, kernel_buffer_kib, limits_line, not_recorded


def test_kernel_buffers_per_source() -> None:
    # blktrace: -b 1024 KiB x -n 4 relay buffers per CPU per device, + the writeback ring
    assert kernel_buffer_kib("blktrace", 65536, 1024, 2, 1, True) == 1024 * 4 * 2 + 256 * 2
    # the blk tracer: --buffer-kb per CPU, the sum held under 1 GiB (96 CPUs: 10,922 KiB each)
    assert kernel_buffer_kib("ftrace-blk", 65536, 1024, 2, 3, False) == 65536 * 2
    assert kernel_buffer_kib("tracepoints", 65536, 1024, 96, 1, False) == 10922 * 96
    assert limits_line(1024, 1024, 65536 * 2 + 512) == (
        "limits: the block trace stops at 1,024 MiB on disk; kernel trace buffers hold at "
        "most 128.5 MiB"
    )
    assert limits_line(300, 1024, 1024).endswith(
        "stops at 300 MiB on disk (90% of the free space, under --max-size); kernel trace "
        "buffers hold at most 1.0 MiB"
    )


def test_disk_cap_is_under_the_free_space(tmp_path: Path) -> None:
    huge = 1 << 40  # 1 TiB of --max-size: more than this disk has free
    cap = disk_cap_mib(tmp_path, huge)
    assert 1 <= cap < huge
    assert disk_cap_mib(tmp_path, 1) == 1


def test_what_could_not_be_recorded_is_named() -> None:
    m = {
        "iostat": False,
        "vmstat": True,
        "writeback_source": None,
        "block_source": "ftrace-blk",
        "blktrace_unavailable_because": "debugfs is not mounted",
    }
    assert not_recorded(m) == [
        "iostat.txt: iostat is not installed (package sysstat)",
        "writeback events: this kernel's tracefs has no writeback tracepoints or instances",
        "blktrace (debugfs is not mounted): block events came from ftrace-blk instead",
    ]
    full = {"iostat": True, "vmstat": True, "writeback_source": "tracefs-instance",
            "block_source": "blktrace"}  # fmt: skip
    assert not_recorded(full) == []
