# blkscope developer tasks. `just` runs lint and tests.

default: lint test

# ruff (lint + format check) and mypy on the package; cargo fmt, clippy and the crate's tests
lint:
    ruff check src tests fixtures bench
    ruff format --check src tests fixtures bench
    mypy
    cd rust && cargo fmt --check
    cd rust && cargo clippy --all-targets -- -D warnings
    cd rust && cargo test

# the full test suite (the same command the README and CI run)
test:
    python -m pytest

# blkscope ingest + analyze vs blkparse -d + btt on a real capture and its 10x copy (built once,
# cached): wall, CPU, peak RSS and issue 12's ratios. `just bench --quick`: 1x only; `just bench
# --json`; `just bench bombs`: the hostile-input bench (bench/bombs.py)
bench *ARGS:
    python bench/bench.py {{ARGS}}

# the README's main job on the bundled fixture capture
demo:
    blkscope report fixtures/mq-writeback-30s -o demo/report.html

# issue 14's input bombs (1 GiB zeros/'A'/blank lines as .zst, 200 MiB blank lines, 5 M garbage
# lines, an iostat stamp a month off) through `blkscope ingest`: time and peak RSS, never
# asserted; the same as `just bench bombs`
bench-bombs *ARGS:
    python bench/bench.py bombs {{ARGS}}

# issue 31's ground truth: score blkscope's named cause of each latency episode against the
# injected causes of the captures in $BLKSCOPE_ATTRIBUTION_ROOT (default ~/.cache/blkscope-attribution) (bench/attribution/README.md).
# `--rebuild` makes the captures again (root, ~1 min each); `--json`; `--only NAME,...`
bench-attribution *ARGS:
    python bench/attribution/score.py {{ARGS}}
