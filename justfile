# blkscope developer tasks. `just` runs lint and tests.

default: lint test

# ruff (lint + format check) and mypy on the package
lint:
    ruff check blkscope tests fixtures bench
    ruff format --check blkscope tests fixtures bench
    mypy

# the full test suite (the same command the README and CI run)
test:
    python -m pytest

# ingest and analyze a >= 4 M-line trace: lines/s, MB/s, peak RSS, vs wc -l and blkparse -d + btt
bench *ARGS:
    python bench/bench_ingest.py {{ARGS}}

# the README's main job on the bundled fixture capture
demo:
    blkscope report fixtures/mq-writeback-30s -o build/report.html
