"""Which tables an analysis writes, known without loading the analysis (its streaming pass,
the SQL views, the findings): commands over an analysed dataset ask this first."""

from __future__ import annotations

import functools

# The streaming pass's own tables; every other is the rows of an SQL object declared
# `(LIKE table)` (views.builders) or comes from the findings step.
STREAMED = ("requests", "bios")


@functools.cache
def analysis_tables() -> frozenset[str]:
    """Every table `blkscope analyze` writes."""
    from blkscope.analyze.findings import FINDINGS_TABLES
    from blkscope.analyze.views import builders

    return frozenset([*STREAMED, *builders(), *FINDINGS_TABLES])
