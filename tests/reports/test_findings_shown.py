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
    "Writeback explains the episodes: 3 of 6 latency episodes are attributed to writeback "
    "(flusher writes: 1.4 would coincide with it by chance, p = 0.15), peaking 0.12 s after "
    "writeback starts; 84% of the latency above p99 falls during writeback, which runs 2.1% of "
    "the time."
)


def _text(w: Written) -> list[str]:
    return [t.strip() for t in parse(w.report.read_text()).text if t.strip()]


def test_the_headline_counts_episodes_and_carries_the_verdict(mq_report: Written) -> None:
    lines = parse(mq_report.report.read_text()).headlines
    assert lines[2:] == [
        "Lost events: 0 missing from the trace (gaps in its sequence numbers); 0 completions with "
        "no issue (C without D).",
        "6 latency episodes (10 metric spikes; causes: writeback 50%, unexplained 33%, "
        "competing_io 17%); worst at 25.18 s (23:38:14 UTC): user:prober 76.7 ms, cause "
        "writeback.",
        VERDICT,
        # timer-started flusher bursts: the writeback timer's knob, not jbd2's (issue 31)
        "Periodic: kworker_writes every 5.12 s (matches vm.dirty_writeback_centisecs); "
        "writeback_events every 5.12 s (matches vm.dirty_writeback_centisecs).",
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
    assert numbers["of which attributed to writeback"] == "3"
    assert numbers["would coincide with writeback by chance (expected)"] == "1.45"
    assert numbers["chance of that many coinciding (p-value)"] == "0.15"
    assert numbers["bytes the flusher wrote on the device"] == "1.4 GiB"
    assert numbers["share of the time writeback runs"] == "2.1%"  # not "2%", not "0%"
    assert numbers["share of the latency above p99 during writeback"] == "84%"
    assert numbers["the rule"].startswith("writeback explains a device's episodes when the flusher")
    assert section.index('class="verdict"') < section.index('class="episodes"')


def test_each_episode_says_why_it_was_attributed(mq_report: Written) -> None:
    text = _text(mq_report)
    reasons = [x for x in text if x.startswith("user:prober (python3 pid 11562): ")]
    assert len(reasons) == 6
    # the start-up episode: the workload's reader writing its 256 MiB file, named with its pid
    assert (
        "in flight while it waited: python3 pid 11563 (write 32 bios of 8 MiB, read 2 bios of "
        "4 KiB): 100.0% of the bytes and 91% of the IOs in flight"
    ) in reasons[0]
    # writeback is named for its bytes in flight, not for a work item that overlapped
    assert (
        "in flight while it waited: writeback (write 111 bios, 670.0 MiB (4 KiB to 8 MiB)): 98% "
        "of the bytes and 79% of the IOs in flight, 56.9 MiB on average (normally 0 B)"
    ) in reasons[4]
    # each rejected candidate says why
    assert (
        "rejected: writeback (0% of the bytes in flight were flusher writes; pages written by "
        "work items: unknown); journal (0% of the bytes in flight were jbd2's); competing_io "
        "(no other process had IO in flight)"
    ) in reasons[2]
    # every metric that spiked in the window is on one row
    assert text.count("q2c, user:prober") == 4 and text.count("user:prober") >= 2


def test_summary_json_counts_episodes(mq_report: Written) -> None:
    (dev,) = mq_report.summary_doc["devices"]
    assert (dev["spikes"], dev["metric_spikes"]) == (6, 10)
    assert dev["cause_shares"] == {"writeback": 0.5, "unexplained": 0.3333, "competing_io": 0.1667}
    worst = dev["worst_episode"]
    assert (worst["metrics"], worst["worst_metric"], worst["peak_latency_ns"]) == (
        "q2c, user:prober",
        "user:prober",
        76_672_000,
    )
    assert worst["start_utc"] == "2026-11-21T23:38:13.326334Z"
    assert (worst["victim"], worst["victim_pid"], worst["cause"]) == (
        "user:prober (python3 pid 11562)",
        11562,
        "writeback",
    )
    verdict = dev["writeback_verdict"]
    assert (verdict["episodes"], verdict["episodes_with_writeback"], verdict["explains"]) == (
        6,
        3,
        True,
    )
    assert verdict["flusher_bytes"] == 1_466_978_304


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
    # the five time charts (latency, heat map, throughput, depth, LBA): one legend each
    assert html.count("></span>latency episode</span>") == 5
    assert html.count("></span>writeback work (log)</span>") == 5
    assert len(re.findall(r'data-chart="periodogram"', html)) == 1
