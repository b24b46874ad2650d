"""iostat's counts, kept as the analysis goes (rust/src/stats/iostat.rs) rather than read back
from its files: per device and interval of the iostat table, the requests the disk statistics
count (`_iostat_requests`: their number, sectors and awaits, summed on the writer's thread as
the pass hands it each batch of requests) and the merges (M and F events, counted by the pass
as it meets them). Their busy periods are still swept after the pass (compiled.busy_islands):
a million islands held during the pass would raise its peak memory. sql/_iostat_build.sql lays them out in the
intervals; its `interval_ns` and `origin_ns` must be the ones counted with, which the analysis
passes to both."""

from __future__ import annotations

# the tables of the analysis connection the counts are left in: the `done` sums (each exact
# sum as NAME_hi * 2^32 + NAME_lo) and the merges
IOSTAT_DONE = "internal._iostat_done"
IOSTAT_MERGES = "internal._iostat_merges"
