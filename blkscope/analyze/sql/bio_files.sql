-- Which files each bio touched: the bio's sectors intersected with the file map (file_extents),
-- one row per (bio, extent) overlap, plus one 'unmapped' row for the bytes of a bio no extent
-- covers, so the bytes of a device's bios add up exactly. The join is an interval join: disk
-- and sector are folded into one HUGEINT position so DuckDB can run it as an IEJoin (a hash
-- join on the disk would pair every bio with every extent of its disk).
-- Needs the file_extents table (blkscope capture --files, or blkscope files DATASET --map MAP).
-- needs: bios, file_extents?
WITH b AS (
    SELECT q_eid, dev_major, dev_minor, sector, nsectors, op, flags, pid, comm,
           q_time_ns, c_time_ns, q2c_ns,
           ((dev_major::HUGEINT << 32) + dev_minor) << 64 AS disk_key
    FROM bios
    WHERE sector IS NOT NULL AND nsectors > 0
),
e AS (
    SELECT *, ((dev_major::HUGEINT << 32) + dev_minor) << 64 AS disk_key FROM file_extents
),
hit AS (
    SELECT b.q_eid, e.path, e.inode, e.kind, e.fs_device,
           e.file_offset + (greatest(b.sector, e.sector) - e.sector) * 512 AS file_offset,
           (least(b.sector + b.nsectors, e.sector + e.sectors)
            - greatest(b.sector, e.sector)) * 512 AS bytes
    FROM b JOIN e
      ON b.disk_key + b.sector < e.disk_key + e.sector + e.sectors
     AND b.disk_key + b.sector + b.nsectors > e.disk_key + e.sector
),
pieces AS (
    SELECT * FROM hit
    UNION ALL
    SELECT b.q_eid, NULL, NULL, 'unmapped', NULL, NULL,
           b.nsectors * 512 - coalesce(h.bytes, 0)
    FROM b LEFT JOIN (SELECT q_eid, sum(bytes) AS bytes FROM hit GROUP BY q_eid) h USING (q_eid)
    WHERE b.nsectors * 512 > coalesce(h.bytes, 0)
)
SELECT
    b.q_eid,                                                   -- the bio (bios.q_eid)
    b.dev_major,                                               -- traced disk major
    b.dev_minor,                                               -- traced disk minor
    op_class(b.op, b.flags, b.sector) AS op_class,             -- read, write, discard, other
    b.pid,                                                     -- submitting process id
    b.comm,                                                    -- submitting process (untrusted text)
    is_writeback_write(b.comm, b.op, b.flags, b.sector) AS writeback, -- a flusher's write
    b.q_time_ns,                                               -- Q time, ns since the first event
    b.c_time_ns,                                               -- completion; null when partial
    b.q2c_ns,                                                  -- the whole bio's queue-to-complete
    p.path,                                                    -- file or structure (untrusted); null: unmapped
    p.inode,                                                   -- its inode, when known
    p.kind,                                                    -- data, directory, journal, log, metadata, unmapped
    p.fs_device,                                               -- device holding the filesystem
    p.file_offset,                                             -- file byte the overlap starts at
    p.bytes::BIGINT AS bytes                                   -- bytes of the bio in this extent
FROM pieces p JOIN b USING (q_eid)
