"""The package's floor plan, checked: each module imports only from its own layer or the ones
below it, analyze/ and reports/ never import ingest/, and nothing imports cli/ but the entry
points. Imports inside functions and under TYPE_CHECKING count too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "blkscope"

# Lowest first. A module may import its own layer and those below; ingest, analyze and capture
# (one layer) do not import each other.
LAYERS: list[set[str]] = [
    {"errors", "units", "schemas", "concepts", "wallclock", "progress", "progress_columns", "safe_text",
     "interrupts", "frames", "blk_io_trace", "_core", "version"},
    {"store"},  # the dataset on disk: manifest, atomic writer, folder swap
    # inputs in; tables made from tables; files/ (issue 16) makes and reads file maps for both
    # capture and ingest, so it sits with them (its usage statistic is analyze/file_usage.py)
    {"ingest", "analyze", "capture", "files"},
    {"dataset"},  # the handle: one manifest read, one connection, frames
    {"pipeline"},  # ingest if needed, analyse if needed
    {"reports"},
    {"fleet"},  # many captures: each built by the pipeline, summarised by reports
    {"__init__"},  # the library API: blkscope.open, blkscope.compare
    {"cli"},
    {"__main__"},
]  # fmt: skip
LAYER = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


def room_of(module: str) -> str:
    """'blkscope.analyze.views' -> 'analyze'; 'blkscope' and its own names (`from blkscope
    import open`) -> '__init__'."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    # a compiled module (blkscope._core) is known by its stub
    is_room = any(
        (PACKAGE / name).exists() for name in (parts[1], f"{parts[1]}.py", f"{parts[1]}.pyi")
    )
    return parts[1] if is_room else "__init__"


def imports(package: Path = PACKAGE) -> list[tuple[str, str, int]]:
    """(importing module's room:name, imported blkscope module, line) for every import."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        module = ".".join(rel.parts)
        room = room_of(module.removesuffix(".__init__")) if rel.parts[1:] else "__init__"
        if rel.parts == ("blkscope", "__init__"):
            room = "__init__"
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                if node.module == "blkscope":
                    names = [f"blkscope.{a.name}" for a in node.names]
            for name in names:
                if name == "blkscope" or name.startswith("blkscope."):
                    found.append((f"{room}:{module}", name, node.lineno))
    return found


def test_every_room_has_a_layer() -> None:
    rooms = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    rooms = {r for r in rooms if not r.startswith((".", "_")) or r in ("__init__", "__main__")}
    assert rooms - set(LAYER) == set()


def test_no_module_imports_a_layer_above_it() -> None:
    upward = []
    for where, target, line in imports():
        room, module = where.split(":")
        to = room_of(target)
        if to == room:
            continue
        if LAYER[to] > LAYER[room]:
            upward.append(f"{module}:{line} imports {target}")
    assert upward == []


def test_ingest_analyze_and_capture_do_not_import_each_other() -> None:
    stages = {"ingest", "analyze", "capture"}
    across = [
        f"{where.split(':')[1]}:{line} imports {target}"
        for where, target, line in imports()
        if {where.split(":")[0], room_of(target)} <= stages
        and where.split(":")[0] != room_of(target)
    ]
    assert across == []


def below_ingest(package: Path = PACKAGE) -> list[str]:
    """Imports of ingest/ or cli/ by analyze/ or reports/."""
    return [
        f"{where.split(':')[1]}:{line} imports {target}"
        for where, target, line in imports(package)
        if where.split(":")[0] in ("analyze", "reports") and room_of(target) in ("ingest", "cli")
    ]


def test_analyze_and_reports_never_import_ingest_or_cli() -> None:
    assert below_ingest() == []


def test_only_the_entry_points_import_cli() -> None:
    importers = {
        where.split(":")[1]
        for where, target, _ in imports()
        if room_of(target) == "cli" and where.split(":")[0] != "cli"
    }
    assert importers == {"blkscope.__main__"}


def test_the_check_catches_an_import_inside_a_function(tmp_path: Path) -> None:
    """The lazy imports (inside functions) are where an upward one would hide."""
    views = tmp_path / "blkscope" / "analyze" / "views.py"
    views.parent.mkdir(parents=True)
    views.write_text("def f():\n    from blkscope.ingest.folder import ingest_folder\n")
    assert below_ingest(tmp_path / "blkscope") == [
        "blkscope.analyze.views:2 imports blkscope.ingest.folder"
    ]


# Module names used in more than one room, each for one concept: a table's schema
# (schemas/NAME.py) and the code that builds it, or a command (cli/NAME.py) and the library
# module it is thin over. Any other repeated name means two things and should be renamed.
SAME_CONCEPT = {
    "__init__": "every package",
    "__main__": "the entry points: python -m blkscope and python -m blkscope.cli",
    "events": "the events table: schemas/ declares it, analyze/stream/ reads it",
    "findings": "the findings tables: schemas/ declares them, analyze/ finds them",
    "check": "the CI gate: reports/check.py (one dataset), fleet/check.py (every partition)",
    "query": "SQL over data: analyze/query.py (one dataset), fleet/query.py (a fleet)",
    "report": "`report`: cli/report.py (blkscope report), fleet/report.py (fleet report)",
    "fleet": "the fleet: schemas/fleet.py its tables, cli/fleet.py its commands",
    "ingest": "ingest: schemas/ingest.py the tables it writes, cli/ingest.py the command",
}


def test_no_two_modules_share_a_name_with_different_meanings() -> None:
    by_name: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        by_name.setdefault(path.stem, []).append(str(path.relative_to(PACKAGE)))
    repeated = {name: where for name, where in by_name.items() if len(where) > 1}
    assert {n: w for n, w in repeated.items() if n not in SAME_CONCEPT} == {}
    assert set(SAME_CONCEPT) - set(repeated) == set()  # a stale entry goes


def test_the_version_is_pyprojects() -> None:
    """blkscope.version.__version__ (what --version, manifests and reports print) is the
    version pyproject.toml gives the package."""
    from blkscope.version import __version__

    pyproject = (PACKAGE.parents[1] / "pyproject.toml").read_text()
    assert re.findall(r'^version = "(.*)"$', pyproject, re.M) == [__version__]
