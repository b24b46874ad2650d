"""Which files the IO went to: per file and per directory (rolled up), IOs and bytes by op and
process, the writeback (flusher) share, the share in flight in each spike episode, latency
percentiles; over the whole trace or only during spikes, writeback or a time range."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import duckdb

from blkscope.analyze.correlation import writeback_intervals
from blkscope.analyze.views import relations
from blkscope.errors import InputFormatError
from blkscope.progress import ProgressCallback

PERCENTILES = (50, 90, 99)
# A bio is in flight in a window when queued before its end and completed after its start (the
# episodes table's definition); a bio never seen completing is in flight to the end.
IN_FLIGHT = "q_time_ns < w.end_ns AND coalesce(c_time_ns, 9223372036854775807) > w.start_ns"


@dataclass(frozen=True)
class During:
    """Which IO to count: all, 'spikes' (the latency episodes), 'writeback', or a range (ns)."""

    what: str = "all"
    start_ns: int | None = None
    end_ns: int | None = None

    def describe(self) -> str:
        if self.what == "range":
            return f"{self.start_ns}..{self.end_ns} ns"
        return self.what


def _windows(con: duckdb.DuckDBPyConnection, during: During) -> list[tuple[Any, ...]] | None:
    """(dev_major, dev_minor, start_ns, end_ns) rows the IO must be in flight in; None: all."""
    if during.what == "all":
        return None
    if during.what == "range":
        return [(None, None, during.start_ns, during.end_ns)]
    if during.what == "spikes":
        if "episodes" not in relations(con):
            raise InputFormatError(
                "episodes",
                "the dataset has no latency episodes table",
                hint="run blkscope analyze first",
            )
        return con.execute("SELECT dev_major, dev_minor, start_ns, end_ns FROM episodes").fetchall()
    spans = writeback_intervals(con)
    return [
        (dev[0], dev[1], int(a), int(b)) for dev, arr in spans.by_device.items() for a, b in arr
    ]


def scoped(con: duckdb.DuckDBPyConnection, during: During) -> str:
    """Define temp view files_scope (bio_files rows in scope) and return its name."""
    windows = _windows(con, during)
    # the last call left a view or a table (DuckDB refuses to drop one as the other)
    kind = con.execute(
        "SELECT 'VIEW' FROM duckdb_views() WHERE view_name = 'files_scope' "
        "UNION ALL SELECT 'TABLE' FROM duckdb_tables() WHERE table_name = 'files_scope'"
    ).fetchall()
    for (what,) in kind:
        con.execute(f"DROP {what} files_scope")
    if windows is None:
        con.execute("CREATE OR REPLACE TEMP VIEW files_scope AS SELECT * FROM bio_files")
        return "files_scope"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE files_windows (dev_major INT, dev_minor INT, "
        "start_ns BIGINT, end_ns BIGINT)"
    )
    if windows:
        con.executemany("INSERT INTO files_windows VALUES (?, ?, ?, ?)", windows)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE files_scope AS SELECT * FROM bio_files b WHERE EXISTS ("
        "SELECT 1 FROM files_windows w WHERE (w.dev_major IS NULL OR (w.dev_major = b.dev_major "
        f"AND w.dev_minor = b.dev_minor)) AND {IN_FLIGHT})"
    )
    return "files_scope"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


_PER_FILE = """
WITH per_bio AS (
    SELECT coalesce(path, '<unmapped>') AS path, kind, q_eid, any_value(inode) AS inode,
           any_value(q2c_ns) AS q2c_ns, sum(bytes) AS bytes
    FROM files_scope GROUP BY ALL
), lat AS (
    SELECT path, kind, count(*) AS ios, any_value(inode) AS inode,
           quantile_disc(q2c_ns, [0.5, 0.9, 0.99]) AS q2c
    FROM per_bio GROUP BY ALL
), ops AS (
    SELECT coalesce(path, '<unmapped>') AS path, kind, sum(bytes)::BIGINT AS bytes,
           (sum(bytes) FILTER (op_class = 'read'))::BIGINT AS read_bytes,
           (sum(bytes) FILTER (op_class = 'write'))::BIGINT AS write_bytes,
           (sum(bytes) FILTER (op_class NOT IN ('read', 'write')))::BIGINT AS other_bytes,
           (sum(bytes) FILTER (writeback))::BIGINT AS writeback_bytes,
           count(DISTINCT q_eid) FILTER (op_class = 'read') AS reads,
           count(DISTINCT q_eid) FILTER (op_class = 'write') AS writes
    FROM files_scope GROUP BY ALL
), procs AS (
    SELECT path, kind, list({'comm': comm, 'bytes': bytes} ORDER BY bytes DESC, comm) AS processes
    FROM (SELECT coalesce(path, '<unmapped>') AS path, kind, comm, sum(bytes)::BIGINT AS bytes
          FROM files_scope GROUP BY ALL)
    GROUP BY ALL
)
SELECT path, kind, inode, ios, reads, writes, bytes, coalesce(read_bytes, 0) AS read_bytes,
       coalesce(write_bytes, 0) AS write_bytes, coalesce(other_bytes, 0) AS other_bytes,
       coalesce(writeback_bytes, 0) AS writeback_bytes,
       q2c[1] AS q2c_p50_ns, q2c[2] AS q2c_p90_ns, q2c[3] AS q2c_p99_ns, processes
FROM ops JOIN lat USING (path, kind) JOIN procs USING (path, kind)
ORDER BY bytes DESC, path
"""

_EPISODES = """
SELECT w.dev_major, w.dev_minor, w.episode_id, w.start_ns, w.end_ns,
       coalesce(b.path, '<unmapped>') AS path, b.kind, sum(b.bytes)::BIGINT AS bytes
FROM episodes w JOIN bio_files b
  ON b.dev_major = w.dev_major AND b.dev_minor = w.dev_minor AND {in_flight}
GROUP BY ALL ORDER BY w.dev_major, w.dev_minor, w.episode_id, bytes DESC, path
"""


def file_usage(
    con: duckdb.DuckDBPyConnection,
    during: During,
    top: int = 20,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Every file's IO in scope, the directories rolled up, writeback and episode shares."""

    def step(done: int, doing: str) -> None:
        if progress is not None:
            progress("files", done, 3, unit="steps", label=f"files: {doing}")

    if "bio_files" not in relations(con):
        raise InputFormatError(
            "file_extents",
            "the dataset has no file map",
            hint="capture with `blkscope capture --files PATH`, or attach a map: "
            "blkscope files DATASET --map CAPTURE_FOLDER|filefrag.txt|debugfs.txt",
        )
    step(0, "bios in scope")
    scoped(con, during)
    step(1, "joining bios to file extents")
    files = _rows(con, _PER_FILE)
    step(2, "spike episodes")
    total = sum(f["bytes"] for f in files)
    writeback_total = sum(f["writeback_bytes"] for f in files)
    for f in files:
        f["share"] = f["bytes"] / total if total else 0.0
        f["writeback_share"] = f["writeback_bytes"] / writeback_total if writeback_total else 0.0
    by_kind: dict[str, int] = {}
    for f in files:
        by_kind[f["kind"]] = by_kind.get(f["kind"], 0) + f["bytes"]
    return {
        "during": during.describe(),
        "bytes": total,
        "writeback_bytes": writeback_total,
        "by_kind": [
            {"kind": k, "bytes": v, "share": v / total if total else 0.0}
            for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])
        ],
        "files": files,
        "directories": directories(files),
        "writeback": [
            {
                "path": f["path"],
                "kind": f["kind"],
                "bytes": f["writeback_bytes"],
                "share": f["writeback_share"],
            }
            for f in sorted(files, key=lambda f: (-f["writeback_bytes"], f["path"]))
            if f["writeback_bytes"]
        ],
        "episodes": _episode_shares(con, top) if during.what in ("all", "spikes") else [],
    }


def directories(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bytes, writeback bytes and IOs of the files under each folder, every level up to /."""
    dirs: dict[str, dict[str, Any]] = {}
    for f in files:
        if f["kind"] not in ("data", "directory") or not f["path"].startswith("/"):
            continue
        folder = posixpath.dirname(f["path"]) if f["kind"] == "data" else f["path"]
        while True:
            d = dirs.setdefault(
                folder, {"path": folder, "files": 0, "bytes": 0, "writeback_bytes": 0, "ios": 0}
            )
            d["files"] += 1
            d["bytes"] += f["bytes"]
            d["writeback_bytes"] += f["writeback_bytes"]
            d["ios"] += f["ios"]
            if folder in ("/", ""):
                break
            folder = posixpath.dirname(folder)
    return sorted(dirs.values(), key=lambda d: (-d["bytes"], d["path"]))


def _episode_shares(con: duckdb.DuckDBPyConnection, top: int) -> list[dict[str, Any]]:
    """Per latency episode: the files of the bytes in flight, each with its share."""
    if "episodes" not in relations(con):
        return []
    out: dict[tuple[int, int, int], dict[str, Any]] = {}
    for r in _rows(
        con,
        _EPISODES.format(
            in_flight=IN_FLIGHT.replace("q_time", "b.q_time").replace("c_time", "b.c_time")
        ),
    ):
        key = (r["dev_major"], r["dev_minor"], r["episode_id"])
        ep = out.setdefault(
            key,
            {
                "dev_major": key[0],
                "dev_minor": key[1],
                "episode_id": key[2],
                "start_ns": r["start_ns"],
                "end_ns": r["end_ns"],
                "bytes": 0,
                "files": [],
            },
        )
        ep["bytes"] += r["bytes"]
        ep["files"].append({"path": r["path"], "kind": r["kind"], "bytes": r["bytes"]})
    for ep in out.values():
        for f in ep["files"]:
            f["share"] = f["bytes"] / ep["bytes"] if ep["bytes"] else 0.0
        ep["files"] = ep["files"][:top]
    return list(out.values())
