#!/bin/bash
# capture_tracepoints.sh OUTDIR DEV -- WORKLOAD...
#
# Record the same block IO at once through
#   - the ftrace blk tracer in binary mode, as `blkscope capture --method ftrace` does
#     (OUTDIR/blk: trace.blktrace.N, blkparse.txt, capture.json),
#   - the block tracepoints in a private tracefs instance (OUTDIR/ftrace.txt: its `trace` file,
#     trace_clock mono, read after the run),
#   - `perf record -e block:... -k mono` (OUTDIR/perf.txt: `perf script --ns`),
#     (both without block_dirty_buffer/block_touch_buffer: millions of lines, no IO),
#   - trace-cmd report of that instance (OUTDIR/trace-cmd.txt: `trace-cmd extract -k` then
#     `trace-cmd report -t`; `trace-cmd record` cannot enable ftrace on this kernel),
#   - biosnoop_tp.bt (OUTDIR/biosnoop.txt) for the truth check.
# With BLK_TEXT=1 the blk tracer runs by hand instead, and its ring buffer is read three times
# after the run: OUTDIR/blk-text.txt (text with ftrace's context), OUTDIR/blk-classic.txt
# (options/blk_classic) and OUTDIR/trace.blktrace.N (options/bin, converted as blkscope
# capture does): the same records, so their times agree to the nanosecond.
#
# Root; run it under `flock /tmp/blkscope-tracefs.lock` (tracefs is shared). Every tracefs
# setting it changes is put back on exit. DEV is a name in /sys/block (use your own loop device).
set -u
OUT=$(realpath -m "$1"); DEV=$2; shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
SHARED_TOOLS=${SHARED_TOOLS:-$REPO/../shared/capture-tools}
T=/sys/kernel/tracing
NAME=blkscope-tp-$$
I=$T/instances/$NAME
mkdir -p "$OUT"
SAVED=()
save() { SAVED+=("$1=$(sed -e 's/.*\[\(.*\)\].*/\1/' -e 's/ (expanded.*//' "$1")"); }
cleanup() {
    [ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo 0 > "$I/events/block/enable"; rmdir "$I"; }
    for ((k=${#SAVED[@]}-1; k>=0; k--)); do echo "${SAVED[k]#*=}" > "${SAVED[k]%%=*}"; done
    [ -n "${PERF:-}" ] && kill -INT "$PERF" 2>/dev/null
    [ -n "${SNOOP:-}" ] && kill -INT "$SNOOP" 2>/dev/null
    wait 2>/dev/null
}
trap cleanup EXIT

mkdir "$I"
echo 0 > "$I/tracing_on"
echo mono > "$I/trace_clock"
for o in bin raw hex; do echo 0 > "$I/options/$o"; done
echo 1 > "$I/options/context-info"; echo 1 > "$I/options/irq-info"
echo 65536 > "$I/buffer_size_kb"
# every block event but the buffer_head ones (millions of lines under buffered writes, no IO)
EVENTS=()
for e in "$I"/events/block/*/; do
    e=$(basename "$e")
    case $e in block_dirty_buffer|block_touch_buffer) continue;; esac
    echo 1 > "$I/events/block/$e/enable"; EVENTS+=(-e "block:$e")
done
echo 1 > "$I/tracing_on"
bpftrace "$SHARED_TOOLS/biosnoop_tp.bt" > "$OUT/biosnoop.txt" 2>/dev/null & SNOOP=$!
perf record -q -a -k mono "${EVENTS[@]}" -o "$OUT/perf.data" 2>/dev/null & PERF=$!
sleep 2
if [ "${BLK_TEXT:-0}" = 1 ]; then
    # the blk tracer in text mode, by hand: blkscope capture only records its binary records
    for f in current_tracer options/bin trace_clock buffer_size_kb tracing_on \
             "/sys/block/$DEV/trace/enable"; do
        case $f in /*) save "$f";; *) save "$T/$f";; esac
    done
    echo 0 > $T/tracing_on; echo nop > $T/current_tracer; echo 0 > $T/options/bin
    echo mono > $T/trace_clock; echo 65536 > $T/buffer_size_kb
    echo 1 > "/sys/block/$DEV/trace/enable"; echo blk > $T/current_tracer; echo > $T/trace
    echo 1 > $T/tracing_on
    "$@"
    sync; sleep 1
    echo 0 > $T/tracing_on
    cat $T/trace > "$OUT/blk-text.txt"
    echo 1 > $T/options/blk_classic; cat $T/trace > "$OUT/blk-classic.txt"
    echo 0 > $T/options/blk_classic
    # the very same records in binary, as blkscope capture converts them (trace.blktrace.N)
    echo 1 > $T/options/bin; cat $T/trace > "$OUT/raw.bin"; echo 0 > $T/options/bin
    cp $T/saved_cmdlines "$OUT/cmdlines.txt"
    PYTHONPATH=$REPO python3 - "$OUT" <<'PY'
import sys, time
from pathlib import Path
from blkscope.capture.blkbin import convert, read_cmdlines
out = Path(sys.argv[1])
raw = (out / "raw.bin").read_bytes()
while raw.startswith(b"#"):  # the `trace` file's text header comes before the records
    raw = raw[raw.index(b"\n") + 1 :]
(out / "raw.bin").write_bytes(raw)
pair = (time.clock_gettime_ns(time.CLOCK_MONOTONIC), time.time_ns())
convert(out / "raw.bin", out, "trace", read_cmdlines(out / "cmdlines.txt"), pair)
(out / "raw.bin").unlink()
PY
    echo 0 > "/sys/block/$DEV/trace/enable"; echo nop > $T/current_tracer
else
    PYTHONPATH=$REPO python3 -m blkscope.cli capture --method ftrace --device "$DEV" \
        -o "$OUT/blk" --force -- "$@"
fi
sleep 1
echo 0 > "$I/tracing_on"
kill -INT "$PERF" "$SNOOP"; wait; PERF=; SNOOP=
cat "$I/trace" > "$OUT/ftrace.txt"
# trace-cmd extract -k keeps the settings; tracing_on of the top level is put back regardless
save "$T/tracing_on"
trace-cmd extract -k -B "$NAME" -o "$OUT/trace.dat" > /dev/null 2>&1 \
    && trace-cmd report -t -i "$OUT/trace.dat" > "$OUT/trace-cmd.txt" 2>/dev/null
perf script --ns -i "$OUT/perf.data" > "$OUT/perf.txt" 2>/dev/null
rm -f "$OUT/perf.data" "$OUT/trace.dat"
ls -la "$OUT"
