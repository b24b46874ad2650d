INCLUDE bios, op_class;
INCLUDE IF EXISTS file_extents;

-- Which files each bio touched: the bio's sectors intersected with the file map (file_extents),
-- one row per (bio, extent) overlap, plus one 'unmapped' row for the bytes of a bio no extent
-- covers, so the bytes of a device's bios add up exactly. The interval join is a hash join on
-- 1 MiB buckets (2048 sectors): bios and extents are listed under every bucket they reach, and
-- an overlap counts in the bucket where it starts, so it counts once. DuckDB 2.0 ran the
-- two-inequality join as a piecewise merge join, pairing every bio with half the extents.
-- Needs the file_extents table (blkscope capture --files, or blkscope files DATASET --map MAP).
CREATE VIEW bio_files(
    q_eid BIGINT,        -- the bio (bios.q_eid)
    dev_major INTEGER,   -- traced disk major
    dev_minor INTEGER,   -- traced disk minor
    op_class VARCHAR,    -- read, write, discard, other
    pid BIGINT,          -- submitting process id
    comm VARCHAR,        -- submitting process (untrusted text)
    writeback BOOLEAN,   -- a flusher's write
    q_time_ns BIGINT,    -- Q time, ns since the first event
    c_time_ns BIGINT,    -- completion; null when partial
    q2c_ns BIGINT,       -- the whole bio's queue-to-complete
    path VARCHAR,        -- file or structure (untrusted); null: unmapped
    inode BIGINT,        -- its inode, when known
    kind VARCHAR,        -- data, directory, journal, log, metadata, unmapped
    fs_device VARCHAR,   -- device holding the filesystem
    file_offset BIGINT,  -- file byte the overlap starts at
    bytes BIGINT         -- bytes of the bio in this extent
) AS
WITH b AS (
    SELECT q_eid, dev_major, dev_minor, sector, nsectors, op, flags, pid, comm,
           q_time_ns, c_time_ns, q2c_ns
    FROM bios
    WHERE sector IS NOT NULL AND nsectors > 0
),
bb AS (
    SELECT q_eid, dev_major, dev_minor, sector, nsectors,
           unnest(range(sector // 2048, (sector + nsectors - 1) // 2048 + 1)) AS bucket
    FROM b
),
eb AS (
    SELECT *, unnest(range(sector // 2048, (sector + sectors - 1) // 2048 + 1)) AS bucket
    FROM file_extents
    WHERE sectors > 0
),
hit AS (
    SELECT bb.q_eid, e.path, e.inode, e.kind, e.fs_device,
           e.file_offset + (greatest(bb.sector, e.sector) - e.sector) * 512 AS file_offset,
           (least(bb.sector + bb.nsectors, e.sector + e.sectors)
            - greatest(bb.sector, e.sector)) * 512 AS bytes
    FROM bb JOIN eb e
      ON bb.dev_major = e.dev_major AND bb.dev_minor = e.dev_minor AND bb.bucket = e.bucket
    WHERE bb.sector < e.sector + e.sectors AND bb.sector + bb.nsectors > e.sector
      AND greatest(bb.sector, e.sector) // 2048 = bb.bucket
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
    b.q_eid,
    b.dev_major,
    b.dev_minor,
    op_class(b.op, b.flags, b.sector) AS op_class,
    b.pid,
    b.comm,
    is_writeback_write(b.comm, b.op, b.flags, b.sector) AS writeback,
    b.q_time_ns,
    b.c_time_ns,
    b.q2c_ns,
    p.path,
    p.inode,
    p.kind,
    p.fs_device,
    p.file_offset,
    p.bytes::BIGINT AS bytes
FROM pieces p JOIN b USING (q_eid);
