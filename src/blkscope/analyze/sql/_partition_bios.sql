INCLUDE bios;
INCLUDE IF EXISTS partitions;

-- The Q2C latency of every bio that starts inside a partition of a traced disk, keyed by the
-- partition (the rows whose p99 partition_io reports; exact_quantiles groups on g, ranks v).
-- Needs the partitions table (blkscope partitions DATASET LISTING).
CREATE VIEW internal._partition_bios(
    g STRUCT(disk_major INTEGER, disk_minor INTEGER, "name" VARCHAR, disk VARCHAR, start_sector BIGINT, sectors BIGINT),  -- the partition
    v BIGINT                                                                                                              -- a bio's queue-to-complete, ns
) AS
SELECT
    {'disk_major': p.disk_major, 'disk_minor': p.disk_minor, 'name': p.name, 'disk': p.disk,
     'start_sector': p.start_sector, 'sectors': p.sectors} AS g,
    b.q2c_ns AS v
FROM partitions p
JOIN bios b
  ON b.dev_major = p.disk_major AND b.dev_minor = p.disk_minor
 AND b.sector >= p.start_sector AND b.sector < p.start_sector + p.sectors
WHERE b.q2c_ns IS NOT NULL;
