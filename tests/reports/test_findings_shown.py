"""The bundled capture's findings on its page and in summary.json: episodes (not metric spikes),
the writeback verdict with its numbers next to the episode table, and why each episode is
attributed as it is."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.dataset import Dataset
from blkscope.reports.make_report import Written
from tests.reports.page_parser import parse

VERDICT = (
    "Writeback explains the episodes: 4 of 6 latency episodes coincide with writeback "
    "(writeback log; 2.7 would by chance), peaking 0.08 s after writeback starts; 67% of the "
    "latency above p99 falls during writeback, which runs 1.2% of the time."
)


def _text(w: Written) -> list[str]:
    return [t.strip() for t in parse(w.report.read_text()).text if t.strip()]


def test_the_headline_counts_episodes_and_carries_the_verdict(mq_report: Written) -> None:
    lines = parse(mq_report.report.read_text()).headlines
    assert lines[2:] == [
        "Lost events: 0 missing from the trace (gaps in its sequence numbers); 0 completions with "
        "no issue (C without D).",
        "6 latency episodes (10 metric spikes; causes: writeback 67%, unexplained 33%); worst "
        "at 25.18 s (23:38:14 UTC): user:prober 76.7 ms, cause writeback.",
        VERDICT,
        "Periodic: kworker_writes every 5.12 s (matches vm.dirty_writeback_centisecs, jbd2 "
        "commit interval); writeback_events every 5.12 s (matches vm.dirty_writeback_centisecs, "
        "jbd2 commit interval).",
    ]


def test_the_verdict_and_its_numbers_sit_next_to_the_episode_table(mq_report: Written) -> None:
    html = mq_report.report.read_text()
    section = html[html.index("<h3>Latency episodes and writeback</h3>") :]
    section = section[: section.index("</section>")]
    assert f'<p class="verdict">{VERDICT}</p>' in section
    text = [t.strip() for t in parse(f'<section class="device" id="d">{section}').text
            if t.strip()]  # fmt: skip
    numbers = dict(zip(text[text.index("evidence") + 2 :: 2], text[text.index("evidence") + 3 :: 2],
                       strict=False))  # fmt: skip
    assert numbers["latency episodes"] == "6"
    assert numbers["of which coincide with writeback"] == "4"
    assert numbers["would coincide by chance (expected)"] == "2.70"
    assert numbers["share of the time writeback runs"] == "1.2%"  # not "1%", not "0%"
    assert numbers["share of the latency above p99 during writeback"] == "67%"
    assert section.index('class="verdict"') < section.index('class="episodes"')


def test_each_episode_says_why_it_was_attributed(mq_report: Written) -> None:
    text = _text(mq_report)
    # the one the issue found confusing: writeback with no writeback IO in flight
    assert (
        "writeback writes: 0 of 338 bios in flight, 0% of their bytes; 1 writeback work item "
        "overlapped; peak 0.07 s after the writeback wakeup began"
    ) in text
    assert (
        "writeback writes: 208 of 841 bios in flight, 96% of their bytes; 21 writeback work "
        "items overlapped; peak 0.09 s after the writeback wakeup began"
    ) in text
    assert (
        "no writeback overlapped; writeback writes: 0 of 221 bios in flight, 0% of their bytes "
        "(under 25%); journal bios: 0"
    ) in text
    # every metric that spiked in the window is on one row
    assert text.count("q2c, user:prober") == 4 and text.count("user:prober") >= 2


def test_summary_json_counts_episodes(mq_report: Written) -> None:
    (dev,) = mq_report.summary_doc["devices"]
    assert (dev["spikes"], dev["metric_spikes"]) == (6, 10)
    assert dev["cause_shares"] == {"writeback": 0.6667, "unexplained": 0.3333}
    worst = dev["worst_episode"]
    assert (worst["metrics"], worst["worst_metric"], worst["peak_latency_ns"]) == (
        "q2c, user:prober",
        "user:prober",
        76_672_000,
    )
    assert worst["start_utc"] == "2026-11-21T23:38:13.326334Z"
    verdict = dev["writeback_verdict"]
    assert (verdict["episodes"], verdict["episodes_with_writeback"], verdict["explains"]) == (
        6,
        4,
        True,
    )


def test_check_gates_on_episodes(mq_report: Written) -> None:
    result = CliRunner().invoke(
        app, ["check", str(mq_report.dataset), "--max", "spikes=5", "--max", "periods=2"]
    )
    assert result.exit_code == 1
    rows = [line.split()[2:] for line in result.stdout.splitlines()[1:-1]]
    assert rows == [["spikes", "<=", "5", "6", "FAIL"], ["periods", "<=", "2", "2", "PASS"]]


def test_stages_during_episodes_come_from_the_episode_windows(mq_report: Written) -> None:
    from blkscope.reports.model import load_report

    (dev,) = load_report(Dataset(mq_report.dataset)).devices
    assert dev.episode_stages is not None
    assert dev.episode_stages["D2C"]["max_ns"] == 36_650_363  # the slowest IO, at 19.8 s
    assert dev.episode_stages["Q2C"]["max_ns"] == 53_065_207  # at 25.2 s


def test_the_time_charts_share_one_legend_with_episodes_and_writeback(mq_report: Written) -> None:
    html = mq_report.report.read_text()
    # latency, throughput and depth charts: one figure legend each
    assert html.count(">latency episode<") == 3
    assert html.count(">writeback work (log)<") == 3
    assert len(re.findall(r'data-chart="periodogram"', html)) == 1
