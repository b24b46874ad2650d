"""The test device of the attribution captures: an emulated slow disk, all in tmpfs.

    /dev/shm/blkscope-attr/lower.img  (tmpfs: other agents' IO on vda cannot leak in)
      -> LOWER loop (buffered) -> ext4 without a journal -> disk.img
      -> UPPER loop (--direct-io=on) -> ext4 (lazytime), where the prober and injectors work

Only UPPER is traced. LOWER's blk-throttle limits (IOPS and bytes per second, each direction,
in every cgroup the rig uses) make it behave like a small disk: IO from every process queues
there, so the causes cost real time instead of a few microseconds of memcpy. UPPER's queue depth
(nr_requests) is cut to a SATA-like 32, so reads and writes share its tags as on a real disk.
Slowing LOWER for a window is the `device` cause: seen from UPPER, D2C rises.

With lazytime a quiet window holds only the prober's write and flush on UPPER, and ext4's 5 s
journal commit of a few blocks: no writeback.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from undo import Undo

BASE = Path("/dev/shm/blkscope-attr")
BLKIO = Path("/sys/fs/cgroup/blkio")
MEMCG = Path("/sys/fs/cgroup/memory")
PROBER_CGROUP = BLKIO / "blkscope-attr-prober"
COMPETITOR_CGROUP = BLKIO / "blkscope-attr-competitor"
# v1 blk-throttle limits each cgroup on its own, and the loop driver charges LOWER's IO to the
# cgroup that issued it on UPPER: the emulated disk's limits are set in each of these.
SPEED_CGROUPS = (BLKIO, PROBER_CGROUP, COMPETITOR_CGROUP)
DIRTIER_MEMCG = MEMCG / "blkscope-attr-dirtier"

LOWER_MIB = 1100
UPPER_MIB = 1024
READ_FILE_MIB = 256  # read by the competing readers
DIRTY_FILE_MIB = 256  # overwritten (blocks already allocated) by the writeback dirtiers
WRITE_FILE_MIB = 128  # overwritten by the competing writers


@dataclass(frozen=True)
class DeviceSpeed:
    """The emulated disk: blk-throttle limits on LOWER for the root cgroup, each direction."""

    iops: int = 1000
    bps: int = 100 << 20


@dataclass(frozen=True)
class RigSpec:
    """What a scenario needs from the test device."""

    scheduler: str = "none"
    rotational: int | None = None  # bfq idles for sync queues only on "rotational" devices
    mount_options: str = "lazytime,data=ordered"
    queue_depth: int = 32
    speed: DeviceSpeed = field(default_factory=DeviceSpeed)
    sysctls: dict[str, int] = field(default_factory=dict)  # vm.* names without "vm."


@dataclass(frozen=True)
class Rig:
    """The devices and paths a driver works with (JSON-ready through asdict)."""

    lower: str  # e.g. loop0
    lower_majmin: str  # e.g. 7:0
    upper: str
    upper_majmin: str
    mount: str  # where UPPER's ext4 is mounted
    read_file: str
    dirty_file: str
    write_file: str
    prober_cgroup: str
    competitor_cgroup: str
    dirtier_memcg: str
    spec: dict

    def as_dict(self) -> dict:
        return asdict(self)


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def set_value(path: Path, value: str, undo: Undo, restore: str | None = None) -> None:
    """Write value to a sysfs/procfs file, journaling how to put it back first."""
    old = restore if restore is not None else path.read_text().strip()
    undo.push("write", str(path), old)
    path.write_text(value)


def majmin(dev: str) -> str:
    return Path(f"/sys/block/{dev}/dev").read_text().strip()


def set_speed(lower_majmin: str, speed: DeviceSpeed, undo: Undo | None = None) -> None:
    """Throttle LOWER in SPEED_CGROUPS; with undo, journal the removal (value 0) first."""
    for cgroup in SPEED_CGROUPS:
        for name, value in (
            ("read_iops_device", speed.iops),
            ("write_iops_device", speed.iops),
            ("read_bps_device", speed.bps),
            ("write_bps_device", speed.bps),
        ):
            path = cgroup / f"blkio.throttle.{name}"
            if undo is not None:
                undo.push("write", str(path), f"{lower_majmin} 0")
            path.write_text(f"{lower_majmin} {value}")


def build(spec: RigSpec, undo: Undo) -> Rig:
    """Make the stacked devices, file systems, files, cgroups and settings of spec."""
    BASE.mkdir(parents=True, exist_ok=True)
    undo.push("rmdir", str(BASE))
    lower_img = BASE / "lower.img"
    undo.push("rm", str(lower_img))
    sh("truncate", "-s", f"{LOWER_MIB}M", str(lower_img))
    lower_dev = sh("losetup", "-f", "--show", str(lower_img))
    undo.push("detach", lower_dev)
    # No journal on LOWER: UPPER's flush is an fsync of disk.img there, and a journal commit in
    # a second jbd2 thread (CPU-starved on a busy machine) would be a slow device of its own.
    sh("mkfs.ext4", "-q", "-F", "-O", "^has_journal", lower_dev)
    lower_mnt = BASE / "lower"
    lower_mnt.mkdir(exist_ok=True)
    undo.push("rmdir", str(lower_mnt))
    sh("mount", "-o", "lazytime", lower_dev, str(lower_mnt))
    undo.push("umount", str(lower_mnt))
    disk = lower_mnt / "disk.img"
    # Written in full so that UPPER's direct IO never converts unwritten extents on LOWER.
    sh("dd", "if=/dev/zero", f"of={disk}", "bs=1M", f"count={UPPER_MIB}", "conv=fsync",
       "status=none")  # fmt: skip
    # A loop device backed by LOWER itself (no file system between) was tried: its flushes took
    # ten times longer at the median.
    upper_dev = sh("losetup", "-f", "--show", "--direct-io=on", str(disk))
    undo.push("detach", upper_dev)
    sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", upper_dev)
    upper_mnt = BASE / "upper"
    upper_mnt.mkdir(exist_ok=True)
    undo.push("rmdir", str(upper_mnt))
    sh("mount", "-o", spec.mount_options, upper_dev, str(upper_mnt))
    undo.push("umount", str(upper_mnt))
    files = {}
    for name, mib in (("readme", READ_FILE_MIB), ("dirty.bin", DIRTY_FILE_MIB),
                      ("wtarget.bin", WRITE_FILE_MIB)):  # fmt: skip
        path = upper_mnt / name
        sh("dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "oflag=direct",
           "status=none")  # fmt: skip
        files[name] = str(path)
    sh("sync", "-f", str(upper_mnt))

    lower, upper = Path(lower_dev).name, Path(upper_dev).name
    lower_mm, upper_mm = majmin(lower), majmin(upper)
    queue = Path(f"/sys/block/{upper}/queue")
    set_value(queue / "scheduler", spec.scheduler, undo, restore="none")
    set_value(queue / "nr_requests", str(spec.queue_depth), undo)
    if spec.rotational is not None:
        set_value(queue / "rotational", str(spec.rotational), undo)
    for cgroup in (PROBER_CGROUP, COMPETITOR_CGROUP, DIRTIER_MEMCG):
        cgroup.mkdir(exist_ok=True)
        undo.push("rmdir", str(cgroup))
    set_speed(lower_mm, spec.speed, undo)
    for name, value in spec.sysctls.items():
        set_sysctl(name, value, undo)
    return Rig(
        lower=lower,
        lower_majmin=lower_mm,
        upper=upper,
        upper_majmin=upper_mm,
        mount=str(upper_mnt),
        read_file=files["readme"],
        dirty_file=files["dirty.bin"],
        write_file=files["wtarget.bin"],
        prober_cgroup=str(PROBER_CGROUP),
        competitor_cgroup=str(COMPETITOR_CGROUP),
        dirtier_memcg=str(DIRTIER_MEMCG),
        spec=asdict(spec),
    )


# vm.dirty_background_bytes and _ratio exclude each other (writing one zeroes the other), as do
# vm.dirty_bytes and vm.dirty_ratio: restoring means writing back whichever of the pair was set.
_PAIRS = {
    "dirty_background_bytes": "dirty_background_ratio",
    "dirty_background_ratio": "dirty_background_bytes",
    "dirty_bytes": "dirty_ratio",
    "dirty_ratio": "dirty_bytes",
}


def set_sysctl(name: str, value: int, undo: Undo) -> None:
    path = Path("/proc/sys/vm") / name
    pair = _PAIRS.get(name)
    if pair is not None:
        pair_path = path.with_name(pair)
        old, old_pair = path.read_text().strip(), pair_path.read_text().strip()
        if old == "0":  # the pair's other member is the one in force
            undo.push("write", str(pair_path), old_pair)
        else:
            undo.push("write", str(path), old)
        path.write_text(str(value))
        return
    set_value(path, str(value), undo)
