"""The SQL modules of analyze/sql: each declares what it includes and what it returns, and the
declarations are what DuckDB gets and what the objects return; one registration, in dependency
order, creates each object once."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import cast

import duckdb
import pytest

from blkscope.analyze import compiled, views
from blkscope.analyze.build import analyze_dataset, step_modules
from blkscope.analyze.sql_modules import Column, SqlModuleError, parse_module, sql_modules
from blkscope.analyze.stream.depth_run import DEPTH_BIN_SUMS, DEPTH_TIME
from blkscope.analyze.stream.iodist import IO_COUNTS
from blkscope.analyze.stream.iostat_counts import IOSTAT_DONE, IOSTAT_MERGES
from blkscope.analyze.stream.q2q import Q2Q_VIEW, STAGE_COUNTS
from blkscope.analyze.stream.row_counts import BIO_ROW_COUNTS, REQUEST_ROW_COUNTS
from blkscope.analyze.views import (
    builders,
    connect,
    modules,
    needed_by,
    optional_modules,
    optional_tables,
    register,
)
from blkscope.concepts import (
    FLUSHER_COMM_PREFIXES,
    JOURNAL_COMM_PREFIXES,
    OBSERVER_COMMS,
    STAGE_TIME_COLUMNS,
)
from blkscope.dataset import Dataset
from blkscope.errors import DatasetError
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.ingest.folder import ingest_folder
from blkscope.schemas import TABLES
from blkscope.store.manifest import read_manifest
from tests.analyze.conftest import DATA
from tests.conftest import capture_folder

# the streaming pass's and the compiled steps' relations of the analysis connection, which
# modules include like tables
PASSED = {
    name.split(".")[1]
    for name in (
        IO_COUNTS,
        DEPTH_TIME,
        DEPTH_BIN_SUMS,
        Q2Q_VIEW,
        STAGE_COUNTS,
        BIO_ROW_COUNTS,
        REQUEST_ROW_COUNTS,
        IOSTAT_DONE,
        IOSTAT_MERGES,
        *compiled.TABLES,
    )
}
MACROS = {o.name: m.name for m in modules().values() for o in m.objects if o.kind == "macro"}


def _reads(module_name: str) -> set[str]:
    """What a module's bodies read: names after FROM or JOIN, the relations handed to
    exact_quantiles, and the macro modules whose macros they call (comments left out)."""
    module = modules()[module_name]
    known = set(TABLES) | set(modules()) | PASSED
    found: set[str] = set()
    for sql_object in module.objects:
        body = "\n".join(line.split("--")[0] for line in sql_object.body.splitlines())
        names = re.findall(r"\b(?:FROM|JOIN)\s+(?:internal\.)?(\w+)", body, flags=re.I)
        names += re.findall(r"\bexact_quantiles\(\s*'(?:internal\.)?(\w+)'", body)
        found |= {n for n in names if n in known}
        found |= {MACROS[m] for m in re.findall(r"\b(\w+)\(", body) if m in MACROS}
    return found - {module_name}


def test_includes_name_exactly_what_each_module_reads() -> None:
    assert len(modules()) == 37
    wrong = {name: (sorted(m.includes), sorted(_reads(name))) for name, m in modules().items()
             if set(m.includes) != _reads(name)}  # fmt: skip
    assert wrong == {}
    assert modules()["_bio_stages"].includes == ("_bio_groups", "_bio_q2q", "stages", "buckets")
    assert modules()["writeback_events"].optional == ("writeback",)


def test_no_sql_reads_or_sets_a_session_variable() -> None:
    """Parameters are arguments of table macros: they show where they travel."""
    package = Path(views.__file__).parents[1]
    found = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*"))
        if path.suffix in (".sql", ".py")
        and re.search(r"getvariable|SET\s+VARIABLE", path.read_text(), re.I)
    ]
    assert found == []


def test_modules_come_after_what_they_include() -> None:
    order = list(modules())
    for name, module in modules().items():
        for include in module.includes:
            if include in order:
                assert order.index(include) < order.index(name), (name, include)


def test_private_objects_live_in_schema_internal_and_others_in_main() -> None:
    for module in modules().values():
        for sql_object in module.objects:
            private = sql_object.name.split(".")[-1].startswith("_")
            assert sql_object.private == private, sql_object.name
            assert sql_object.name.startswith("internal.") == private, sql_object.name


def test_every_object_column_and_parameter_has_a_doc() -> None:
    undocumented = [
        f"{o.name}.{c.name}"
        for m in modules().values()
        for o in m.objects
        for c in (*o.columns, *o.params)
        if not c.doc.strip() and o.name != "bio_stage_list"  # its parameters: as bio_stage_ns
    ]
    assert undocumented == []
    assert [o.name for m in modules().values() for o in m.objects if not o.doc.strip()] == []


def _spy_on_create(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements views.create runs from now on (it still runs them)."""
    created: list[str] = []
    real = views.create

    def spy(con: duckdb.DuckDBPyConnection, sql: str) -> None:
        created.append(sql)
        real(con, sql)

    monkeypatch.setattr(views, "create", spy)
    return created


def test_a_module_whose_table_is_missing_is_left_out_without_an_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    con = duckdb.connect()
    con.register("empty_events", TABLES["events"].empty_table())  # only events, no rows
    con.execute("CREATE TABLE events AS SELECT * FROM empty_events")
    created = _spy_on_create(monkeypatch)
    left = register(con, set(), ["_request_events", "_depth_build", "writeback_events"])
    assert left == ["_depth_build", "writeback_events"]
    assert [s.split()[2] for s in created] == ["internal._request_events"]


def test_what_done_holds_is_never_created_again(monkeypatch: pytest.MonkeyPatch) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE events AS SELECT * FROM range(0) t(time_ns)")
    done: set[str] = set()
    assert register(con, done, ["exact_quantiles"]) == []
    assert done == {"buckets", "exact_quantiles"}
    created = _spy_on_create(monkeypatch)
    register(con, done, ["exact_quantiles", "op_class"])
    assert [s.split("(")[0] for s in created] == [
        "CREATE MACRO op_class", "CREATE MACRO bio_op_class", "CREATE MACRO is_flusher",
        "CREATE MACRO is_journal", "CREATE MACRO is_observer", "CREATE MACRO is_writeback_write",
    ]  # fmt: skip
    with pytest.raises(duckdb.CatalogException):  # a second CREATE fails: never OR REPLACE
        con.execute(modules()["buckets"].objects[0].statement())


def test_optional_modules_follow_the_includes_of_modules_over_modules() -> None:
    assert optional_tables() == {"biosnoop", "file_extents", "partitions", "series", "writeback"}
    tables = [name for name in TABLES if name != "writeback"]
    assert optional_modules(tables) == {"writeback_events", "_writeback_windows"}
    assert optional_modules(TABLES) == set()


def test_the_stored_statistics_are_the_objects_declared_like_them() -> None:
    assert {name: o.name for name, o in builders().items()} == {
        "stage_stats": "internal._stage_stats_build",
        "iostat": "internal._iostat_build",
        "latency_hist": "internal._latency_hist_build",
        "latency_heatmap": "internal._latency_heatmap_build",
        "depth": "internal._depth_build",
        "depth_bins": "internal._depth_bins_build",
        "io_dist": "internal._io_dist_build",
        "bio_counts": "internal._bio_counts_build",
        "request_counts": "internal._request_counts_build",
    }
    assert [p.name for p in builders()["iostat"].params] == ["interval_ns", "origin_ns"]
    tables = [o.name for m in modules().values() for o in m.objects if o.kind == "table"]
    assert tables == ["internal._bio_groups", "internal._stage_buckets"]


def test_a_view_that_does_not_bind_is_an_error_naming_it_and_duckdbs_message() -> None:
    """Its inputs exist but lack a column it reads (a table written by another version)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE requests AS SELECT 1 AS dev_major")
    with pytest.raises(DatasetError) as caught:
        register(con, set(), ["_iostat_requests"], source="old-ds")
    assert str(caught.value) == (
        "old-ds: view _iostat_requests does not bind: "
        'Binder Error: Referenced column "kind" not found in FROM clause!'
    )
    assert caught.value.hint == (
        "tables written by another blkscope version? run `blkscope analyze` again"
    )


def test_the_caching_operator_is_off_on_cursors_too(tmp_path: Path) -> None:
    """DuckDB 2.0's caching operator fails now and then on dictionary-encoded Parquet columns;
    analyze builds its statistics on cursors of the analysis connection, which must have it off
    as well (a plain SET is per connection: stage_stats failed so on caps-partitions)."""
    ingest_blkparse([str(DATA / "mq30-flush.blkparse.txt")], tmp_path / "ds")
    con = connect(tmp_path / "ds", read_manifest(tmp_path / "ds"))
    setting = "SELECT current_setting('enable_caching_operators')"
    with con.cursor() as cur:
        assert con.sql(setting).fetchall() == cur.sql(setting).fetchall() == [(False,)]
    con.close()


def test_a_dataset_creates_each_module_when_a_statement_first_names_it(tmp_path: Path) -> None:
    """Opening a dataset binds no view; a statement gets the modules it names and what they
    include, a cursor's too, and one that reads the catalog gets every module an eager
    connection has."""
    ingest_blkparse([str(DATA / "mq30-flush.blkparse.txt")], tmp_path / "ds")
    with Dataset(tmp_path / "ds") as ds:
        lazy = cast(views.ModulesOnUse, ds.con)
        assert lazy.created == set()
        assert ds.con.execute("SELECT count(*) FROM time_bins").fetchall()[0][0] > 0
        assert "time_bins" in lazy.created
        assert "op_class" not in lazy.created
        with ds.con.cursor() as cur:
            cur.sql("SELECT op_class('W', 'W', 0)").fetchall()
        assert "op_class" in lazy.created
        ds.con.execute("SELECT view_name FROM duckdb_views()").fetchall()
        eager: set[str] = set()
        connect(ds.path, ds.manifest, done=eager).close()
        assert lazy.created == eager


def test_a_view_that_does_not_bind_fails_at_its_first_use(tmp_path: Path) -> None:
    """The same error as when every view was created at the dataset's opening."""
    con = duckdb.connect()
    con.execute("CREATE TABLE requests AS SELECT 1 AS dev_major")
    lazy = views.ModulesOnUse(con, set(), "old-ds")
    with pytest.raises(DatasetError, match="old-ds: view _iostat_requests does not bind: "):
        lazy.execute("SELECT * FROM internal._iostat_requests")


def _declared(con: duckdb.DuckDBPyConnection, name: str, columns: tuple[Column, ...]) -> None:
    """Fail unless what name returns on con is the declared columns, in order."""
    returned = [tuple(r[:2]) for r in con.execute(f"DESCRIBE SELECT * FROM {name}").fetchall()]
    assert returned == [(c.name, c.type) for c in columns], name


@pytest.fixture(scope="module")
def one_analysis(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[str], dict[str, list[tuple[str, str]]], list[str]]:
    """Every CREATE of one analysis of the bundled mq-writeback-30s capture (it brings a
    writeback log, biosnoop and a user series), the columns of each view and table just
    after it was created (the analysis's own steps exist only while it runs; the public views
    it does not read, once a statement reads the analysed dataset's catalog), and every CREATE
    of that."""
    out = tmp_path_factory.mktemp("one-analysis") / "mq.dataset"
    ingest_folder(capture_folder("mq-writeback-30s"), out)
    statements: list[str] = []
    columns: dict[str, list[tuple[str, str]]] = {}
    real = views.create

    def counted(con: duckdb.DuckDBPyConnection, sql: str) -> None:
        real(con, sql)
        statements.append(sql)
        kind, name = sql.split()[1:3] if sql.split()[1] != "OR" else sql.split()[3:5]
        if kind in ("VIEW", "TABLE"):
            described = con.execute(f"DESCRIBE SELECT * FROM {name}").fetchall()
            columns[name.strip('"')] = [(r[0], r[1]) for r in described]
        if name.startswith("internal._iostat_build("):  # it reads the compiled busy periods
            call = "internal._iostat_build(1000000000, 0)"
            described = con.execute(f"DESCRIBE SELECT * FROM {call}").fetchall()
            columns["internal._iostat_build"] = [(r[0], r[1]) for r in described]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(views, "create", counted)
        analyze_dataset(out, read_manifest(out))
        analysed, statements = statements, []
        with Dataset(out) as ds:  # a statement reading the catalog creates every module
            ds.con.execute("SELECT view_name FROM duckdb_views()")
    return analysed, columns, statements


def _created(statement: str) -> str:
    """The name a CREATE statement creates."""
    words = statement.split()
    if "MACRO" in statement.split("\n")[0]:
        return statement.split("(")[0].split()[-1]
    return words[2 if words[1] != "OR" else 4].strip('"')


@pytest.mark.slow
def test_each_object_and_table_is_created_once_per_analysis(
    one_analysis: tuple[list[str], dict[str, list[tuple[str, str]]], list[str]],
) -> None:
    """The analysis creates, once each, the modules its steps read (build.step_modules) and
    what they include; the analysed dataset, opened, creates every module over its tables for a
    statement that reads its catalog."""
    statements, _, opened = one_analysis
    names = [_created(s) for s in statements]
    assert [n for n, k in Counter(names).items() if k > 1] == []
    objects = {o.name for m in modules().values() for o in m.objects}
    missing = {"bio_files", "_partition_bios", "partition_io"}  # no file map, no partitions
    expected = {o.name for m in modules().values() if m.name not in missing for o in m.objects}
    steps = needed_by(step_modules(), modules().values())
    read = {o.name for m in modules().values() if m.name in steps for o in m.objects}
    assert set(names) & objects == read & expected
    assert "_window_latency" not in steps and "io_ratios" not in steps  # compare's, the summary's
    assert (set(names) | {_created(s) for s in opened}) & objects == expected
    # and each table of the dataset once: the ingested ones when connected, the rest when written
    stored = set(names) - objects
    assert stored == set(read_manifest_tables(statements))


def read_manifest_tables(statements: list[str]) -> list[str]:
    return [s.split()[4].strip('"') for s in statements if "read_parquet(" in s]


def test_each_view_and_table_returns_its_declared_columns(
    one_analysis: tuple[list[str], dict[str, list[tuple[str, str]]], list[str]],
) -> None:
    """A view or table module returns the columns it declares, with their types; one declared
    (LIKE table) returns the stored table's columns, in its order."""
    _, columns, _ = one_analysis
    checked = 0
    for module in modules().values():
        for o in module.objects:
            if o.kind == "macro" or o.name not in columns:
                continue
            declared = [(c.name, c.type) for c in o.columns]
            if o.like is not None:
                assert [c for c, _ in columns[o.name]] == TABLES[o.like].names, o.name
            else:
                assert columns[o.name] == declared, o.name
            checked += 1
    # and bio_files, partition_io, _partition_bios: tests/analyze/test_public_sql.py
    assert checked == 25


@pytest.mark.slow
def test_table_macros_return_their_declared_columns(
    mq_dataset: Path, one_analysis: tuple[list[str], dict[str, list[tuple[str, str]]], list[str]]
) -> None:
    _, analysed, _ = one_analysis  # iostat's macro exists only while analyze runs
    assert [c for c, _ in analysed["internal._iostat_build"]] == TABLES["iostat"].names
    with Dataset(mq_dataset) as ds:
        for call in ("_spike_latencies(250000000, 'd2c')", "_spike_windows(250000000, 'd2c')",
                     "_spike_window_tops(250000000, 'd2c', 3)", "_series_windows(250000000)"):  # fmt: skip
            described = ds.con.execute(f"DESCRIBE SELECT * FROM internal.{call}").fetchall()
            columns = modules()[call.split("(")[0]].main.columns
            assert [tuple(r[:2]) for r in described] == [(c.name, c.type) for c in columns]
    con = duckdb.connect()
    register(con, set(), ["exact_quantiles"])
    con.execute("CREATE TABLE t AS SELECT 1 AS g, 5::BIGINT AS v")
    returned = con.execute("DESCRIBE SELECT * FROM exact_quantiles('t', [500])").fetchall()
    declared = [(c.name, c.type) for c in modules()["exact_quantiles"].main.columns]
    assert [tuple(r[:2]) for r in returned] == [("g", "INTEGER"), *declared[1:]]
    assert declared[0] == ("g", "ANY")  # the input's g


def test_scalar_macros_return_their_declared_types() -> None:
    con = duckdb.connect()
    register(con, set(), ["op_class", "stages", "buckets"])
    calls = {
        "op_class": "op_class('W', 'WS', 8::BIGINT)",
        "bio_op_class": "bio_op_class('write', 'WS')",
        "is_flusher": "is_flusher('kworker/u8:2')",
        "is_journal": "is_journal('jbd2/vda-8')",
        "is_observer": "is_observer('bpftrace')",
        "is_writeback_write": "is_writeback_write('kworker/u8:2', 'W', 'W', 8::BIGINT)",
        "bio_stage_ns": "bio_stage_ns(2, 3, 5, NULL::BIGINT, false, 1::BIGINT, 4::BIGINT, 9::BIGINT)",
        "bio_stage_codes": "bio_stage_codes()",
        "bio_stage_list": "bio_stage_list(2, 3, 5, NULL::BIGINT, false, 1::BIGINT, 4::BIGINT, 9::BIGINT)",
        "stage_name": "stage_name(8)",
        "or_shifted": "or_shifted(5::BIGINT, 1)",
        "bit_width": "bit_width(5::BIGINT)",
        "log2_floor": "log2_floor(5::BIGINT)",
        "log2_bucket": "log2_bucket(5::BIGINT)",
        "magnitude_bucket": "magnitude_bucket(5000::BIGINT)",
        "value_bucket": "value_bucket(-5000::BIGINT)",
        "value_bucket_log2": "value_bucket_log2(5000::BIGINT)",
    }
    scalar = {o.name: o for n in ("op_class", "stages", "buckets") for o in modules()[n].objects}
    assert set(calls) == set(scalar)
    for name, call in calls.items():
        assert con.execute(f"SELECT typeof({call})").fetchall()[0][0] == scalar[name].returns, name


def test_the_macros_and_the_python_constants_say_the_same() -> None:
    """concepts.py keeps the comm prefixes (for the ingest's Arrow filters), the observer's
    names (for the report) and the stage times (for the streaming pass) that the SQL macros
    spell out."""
    con = duckdb.connect()
    register(con, set(), ["op_class"])
    for prefix in FLUSHER_COMM_PREFIXES:
        assert con.execute(f"SELECT is_flusher('{prefix}x')").fetchall() == [(True,)]
    for prefix in JOURNAL_COMM_PREFIXES:
        assert con.execute(f"SELECT is_journal('{prefix}x')").fetchall() == [(True,)]
    assert con.execute("SELECT is_flusher('kworker/0:1'), is_journal('jbd')").fetchall() == [
        (False, False)
    ]
    for comm in OBSERVER_COMMS:
        assert con.execute(f"SELECT is_observer('{comm}')").fetchall() == [(True,)], comm
    observers = con.execute(
        "SELECT count(*) FROM (SELECT unnest(?) AS comm) WHERE is_observer(comm)",
        [["iostat-exporter", "fio", "kworker/u8:2", "blkscope", None]],
    ).fetchall()
    assert observers == [(1,)]  # exact names only; a null comm is not the observer
    stages = modules()["stages"].objects[0]
    assert stages.name == "bio_stage_ns"
    assert tuple(p.name for p in stages.params) == STAGE_TIME_COLUMNS


def test_a_module_is_read_from_its_declaration() -> None:
    module = parse_module(
        "_x",
        """INCLUDE bios, buckets;  -- a comment is no name
INCLUDE IF EXISTS partitions;

-- What _x is:
-- two lines.
CREATE VIEW internal._x(
    a INTEGER,                       -- the a
    g STRUCT(x INTEGER, y VARCHAR),  -- a struct: its commas are its own
    b VARCHAR                        -- the b,
                                     -- continued
) AS
SELECT 1 AS a, {'x': 1, 'y': 'z'} AS g, 'b' AS b -- not a doc
FROM bios;
""",
    )
    assert module.includes == ("bios", "buckets", "partitions")
    assert module.optional == ("partitions",)
    (x,) = module.objects
    assert (x.kind, x.name, x.doc) == ("view", "internal._x", "What _x is:\ntwo lines.")
    assert x.columns == (
        Column("a", "INTEGER", "the a"),
        Column("g", "STRUCT(x INTEGER, y VARCHAR)", "a struct: its commas are its own"),
        Column("b", "VARCHAR", "the b, continued"),
    )
    assert x.statement() == (
        "CREATE VIEW internal._x AS\nSELECT 1 AS a, {'x': 1, 'y': 'z'} AS g, 'b' AS b "
        "-- not a doc\nFROM bios"
    )
    macro = parse_module(
        "m",
        """-- doc
CREATE MACRO twice(
    x  -- a number
) RETURNS BIGINT AS
2 * x;
""",
    ).main
    assert (macro.params, macro.returns, macro.body) == (
        (Column("x", "", "a number"),),
        "BIGINT",
        "2 * x",
    )
    assert macro.statement() == "CREATE MACRO twice(x) AS\n2 * x"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE VIEW y(\n    a INTEGER\n) AS\nSELECT 1 AS a;\n",
         "sql/x.sql: a view module creates one object, x"),
        ("CREATE VIEW x(\n    a\n) AS\nSELECT 1 AS a;\n", "sql/x.sql: column 'a' without a type"),
        ("CREATE VIEW x(\n    a INTEGER\n) AS\nSELECT 1 AS a\n",
         "sql/x.sql: a statement without its `;`: 'CREATE VIEW x('"),
        ("SELECT 1;\n", "sql/x.sql: expected INCLUDE or CREATE, got 'SELECT 1'"),
        ("CREATE VIEW internal.x(\n    a INTEGER\n) AS\nSELECT 1 AS a;\n",
         "sql/x.sql: internal.x: private names start with _ in internal."),
    ],
)  # fmt: skip
def test_a_module_that_breaks_the_form_is_refused(text: str, message: str) -> None:
    with pytest.raises(SqlModuleError) as caught:
        parse_module("x", text, "sql/x.sql")
    assert str(caught.value) == message


def test_modules_that_include_each_other_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "loopy" / "sql"
    folder.mkdir(parents=True)
    (tmp_path / "loopy" / "__init__.py").write_text("")
    for name, other in (("a", "b"), ("b", "a")):
        (folder / f"{name}.sql").write_text(
            f"INCLUDE {other};\n\n-- {name}\nCREATE VIEW {name}(\n    x INTEGER  -- x\n) AS\n"
            "SELECT 1 AS x;\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SqlModuleError) as caught:
        sql_modules("loopy")
    assert str(caught.value) == "loopy: modules include each other: a -> b -> a"
