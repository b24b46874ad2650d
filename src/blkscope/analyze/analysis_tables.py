"""Which tables an analysis writes, known without loading the analysis (its streaming pass,
the SQL views, the findings): commands over an analysed dataset ask this first."""

from __future__ import annotations

import functools

# The streaming pass's own tables; every other comes from a view's `-- materialize: table`
# header or from the findings step.
STREAMED = ("requests", "bios")


@functools.cache
def analysis_tables() -> frozenset[str]:
    """Every table `blkscope analyze` writes."""
    from blkscope.analyze.findings import FINDINGS_TABLES
    from blkscope.analyze.views import materialized

    built = (v.table or v.name for v in materialized("table"))
    return frozenset([*STREAMED, *built, *FINDINGS_TABLES])
