-- IO per partition of the traced disks: which partition the latency lives on.
-- Needs the partitions table (blkscope partitions DATASET LISTING).
-- needs: bios, partitions
SELECT
    p.disk_major AS dev_major,                                       -- traced disk major
    p.disk_minor AS dev_minor,                                       -- traced disk minor
    p.name       AS partition,                                       -- partition name
    p.disk,                                                          -- disk name in the listing
    p.start_sector,                                                  -- first sector on the disk
    p.sectors,                                                       -- length in 512-byte sectors
    count(b.q_time_ns)                                  AS bios,     -- bios that start inside it
    coalesce(sum(b.nsectors), 0) * 512                  AS bytes,    -- their bytes
    count(*) FILTER (b.op = 'W')                        AS writes,   -- of which writes
    quantile_disc(b.q2c_ns, 0.99)                       AS q2c_p99_ns, -- 99th percentile queue-to-complete
    max(b.q2c_ns)                                       AS q2c_max_ns  -- slowest bio
FROM partitions p
LEFT JOIN bios b
  ON b.dev_major = p.disk_major AND b.dev_minor = p.disk_minor
 AND b.sector >= p.start_sector AND b.sector < p.start_sector + p.sectors
GROUP BY ALL
ORDER BY dev_major, dev_minor, p.start_sector
