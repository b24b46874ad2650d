"""NAME.summary.json and `blkscope report --json` follow the JSON Schema shipped in the package
(src/blkscope/reports/summary.schema.json), and every key it lists is one SUMMARY_SCHEMA documents."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.reports.make_report import Written
from blkscope.reports.summary_json import SUMMARY_SCHEMA


def schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        (resources.files("blkscope.reports") / "summary.schema.json").read_text()
    )
    return doc


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())


def test_the_fixture_summary_validates(mq_report: Written) -> None:
    jsonschema.validate(json.loads(mq_report.summary.read_text()), schema())


def test_report_json_prints_the_summary_it_wrote(tmp_path: Path, cut_dataset: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(cut_dataset), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    jsonschema.validate(printed, schema())
    assert printed == json.loads((tmp_path / "r.summary.json").read_text())


def test_two_reports_in_one_folder_keep_their_own_summaries(
    tmp_path: Path, cut_dataset: Path
) -> None:
    for name in ("a.html", "b.html"):
        result = CliRunner().invoke(app, ["report", str(cut_dataset), "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.glob("*.summary.json")) == [
        "a.summary.json",
        "b.summary.json",
    ]


def test_the_schema_lists_the_documented_keys() -> None:
    top = schema()["properties"]
    device = top["devices"]["items"]["properties"]
    listed = set(top) | {f"devices[].{k}" for k in device}
    assert listed == set(SUMMARY_SCHEMA)
