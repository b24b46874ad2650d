INCLUDE events;

-- D, R and C events keyed for request pairing. A request keeps its start sector and length
-- from dispatch to completion, so (device, sector, nsectors) identifies it; a flush request
-- (D FN / C FN 0) has no sector and gets its own key (-1, 0). A zero-length C that is not FN
-- is the end of a flush sequence (the original request finishing), never paired with a D.
CREATE VIEW internal._request_events(
    dev_major INTEGER,     -- device major
    dev_minor INTEGER,     -- device minor
    eid BIGINT,            -- event id, grows in blkparse (time) order
    time_ns BIGINT,        -- event time, ns since the first event
    action VARCHAR,        -- D, R or C
    rwbs VARCHAR,          -- RWBS as printed
    op VARCHAR,            -- R/W/D/N from RWBS
    is_flush BOOLEAN,      -- part of a data-less flush request
    is_flush_end BOOLEAN,  -- flush sequence end
    k_sector BIGINT,       -- pairing key: start sector
    k_len INTEGER,         -- pairing key: length
    pid BIGINT,            -- pid current at the event
    comm VARCHAR,          -- its comm (null for C and R)
    error INTEGER          -- C/R error code
) AS
SELECT
    dev_major,
    dev_minor,
    (input_id::BIGINT << 40) + line_no AS eid,
    time_ns,
    action,
    rwbs,
    op,
    flush AND op = 'N' AS is_flush,
    action = 'C' AND nsectors = 0 AND NOT (flush AND op = 'N') AS is_flush_end,
    CASE WHEN flush AND op = 'N' THEN -1 ELSE sector END AS k_sector,
    CASE WHEN flush AND op = 'N' THEN 0 ELSE nsectors END AS k_len,
    pid,
    comm,
    error
FROM events
WHERE action IN ('D', 'R', 'C') AND (sector IS NOT NULL OR (flush AND op = 'N'));
