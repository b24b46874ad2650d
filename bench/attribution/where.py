"""Where the attribution captures live: $BLKSCOPE_ATTRIBUTION_ROOT, else a folder in the user's
cache (37 captures of 45 s take about 300 MB; never in the repository)."""

from __future__ import annotations

import os
from pathlib import Path

CAPTURES = Path(
    os.environ.get("BLKSCOPE_ATTRIBUTION_ROOT", "~/.cache/blkscope-attribution")
).expanduser()
