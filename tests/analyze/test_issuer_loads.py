"""The issuers' loads per second kept as the pass writes the bios (compiled.CompletedBios,
rust/src/stats/loads.rs) against the SQL over `bios` they replaced (evidence._ISSUER_BINS), on
every sample and both fixtures, device by device; and the normal loads the findings take from
either."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from blkscope.analyze import evidence
from blkscope.ingest.block_events import ingest_blkparse
from tests.analyze.test_q2q import _sample_inputs, _stream_dataset


def _devices(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int]]:
    return con.sql("SELECT DISTINCT dev_major, dev_minor FROM bios ORDER BY ALL").fetchall()


@pytest.mark.parametrize(("name", "inputs"), _sample_inputs(), ids=lambda v: str(v)[:40])
def test_the_kept_bins_are_the_sqls(tmp_path: Path, name: str, inputs: list[str]) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse(inputs, ds)
    con = _stream_dataset(ds)
    devices = _devices(con)
    assert devices, name
    for device in devices:
        kept = con.execute(evidence._KEPT_ISSUER_BINS, list(device)).fetchall()
        defined = con.execute(evidence._ISSUER_BINS, list(device)).fetchall()
        assert sorted(kept, key=repr) == sorted(defined, key=repr), (name, device)
    con.close()


def test_a_fixtures_normal_loads(tmp_path: Path) -> None:
    """Real values, the same from the kept bins and from the bios: the mq-writeback fixture's
    busiest second of any load on vda is the writeback's, its sums exact."""
    inputs = dict(_sample_inputs())["mq-writeback-30s"]
    ds = tmp_path / "ds"
    ingest_blkparse(inputs, ds)
    con = _stream_dataset(ds)
    query = evidence._LOAD_BINS + " ORDER BY bytes DESC, kind, pid, bin LIMIT 1"
    kept = con.execute(query.format(issuers=evidence._KEPT_ISSUER_BINS), [254, 0]).fetchall()
    defined = con.execute(query.format(issuers=evidence._ISSUER_BINS), [254, 0]).fetchall()
    # second 25: 183 writeback bios, 622.4 MiB, 2.84 s in flight together
    assert (
        kept
        == defined
        == [("writeback", -1, 25, 17_783_838_879_100_928.0, 2_835_855_010.0, 652_640_256.0, 183.0)]
    )
    con.close()
