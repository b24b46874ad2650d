"""io_dist's counts, kept by the streaming pass (rust/src/pass/iodist.rs) as it walks each
device's Qs and Ds in time order: the sizes, and the seek from where the device's previous Q (D)
ended to this one's start. The `io_dist` table (sql/_io_dist_build.sql) only names and orders
them: the two windows over every Q and D of a device (one sort on one thread each) are gone."""

from __future__ import annotations

# the table of the analysis connection the counts are left in (read by sql/_io_dist_build.sql)
IO_COUNTS = "internal._io_dist_counts"
