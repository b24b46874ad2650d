INCLUDE _partition_bios, bios, exact_quantiles;
INCLUDE IF EXISTS partitions;

-- IO per partition of the traced disks: which partition the latency lives on.
-- Needs the partitions table (blkscope partitions DATASET LISTING) and _partition_bios (the
-- p99 is quantile_disc's, by exact_quantiles: no partition's latencies held in memory).
CREATE VIEW partition_io(
    dev_major INTEGER,    -- traced disk major
    dev_minor INTEGER,    -- traced disk minor
    partition VARCHAR,    -- partition name
    disk VARCHAR,         -- disk name in the listing
    start_sector BIGINT,  -- first sector on the disk
    sectors BIGINT,       -- length in 512-byte sectors
    bios BIGINT,          -- bios that start inside it
    bytes BIGINT,         -- their bytes (a BIGINT: a sum is HUGEINT)
    writes BIGINT,        -- of which writes
    q2c_p99_ns BIGINT,    -- 99th percentile queue-to-complete
    q2c_max_ns BIGINT     -- slowest bio
) AS
WITH io AS (
    SELECT
        p.disk_major, p.disk_minor, p.name, p.disk, p.start_sector, p.sectors,
        count(b.q_time_ns) AS bios, (coalesce(sum(b.nsectors), 0) * 512)::BIGINT AS bytes,
        count(*) FILTER (b.op = 'W') AS writes, max(b.q2c_ns) AS q2c_max_ns
    FROM partitions p
    LEFT JOIN bios b
      ON b.dev_major = p.disk_major AND b.dev_minor = p.disk_minor
     AND b.sector >= p.start_sector AND b.sector < p.start_sector + p.sectors
    GROUP BY ALL
)
SELECT
    io.disk_major AS dev_major,
    io.disk_minor AS dev_minor,
    io.name       AS partition,
    io.disk,
    io.start_sector,
    io.sectors,
    io.bios,
    io.bytes,
    io.writes,
    q.v AS q2c_p99_ns,
    io.q2c_max_ns
FROM io
LEFT JOIN exact_quantiles('internal._partition_bios', [990]) q
  ON q.g IS NOT DISTINCT FROM {'disk_major': io.disk_major, 'disk_minor': io.disk_minor, 'name': io.name,
                               'disk': io.disk, 'start_sector': io.start_sector, 'sectors': io.sectors}
ORDER BY dev_major, dev_minor, io.start_sector;
