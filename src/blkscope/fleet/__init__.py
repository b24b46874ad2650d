"""Fleets: many captures from many hosts as one hive-partitioned dataset.

`FLEET/host=H/capture=C/` is a whole blkscope dataset (ingested and analysed by the same library
functions as `blkscope report`) plus the fleet tables of `blkscope.schemas.fleet`. Partitions are
built one per capture, in a local process pool or as Spark tasks, and each appears by one rename;
DuckDB and Spark SQL read the same files as tables of the same names.
"""
