-- D, R and C events keyed for request pairing. A request keeps its start sector and length
-- from dispatch to completion, so (device, sector, nsectors) identifies it; a flush request
-- (D FN / C FN 0) has no sector and gets its own key (-1, 0). A zero-length C that is not FN
-- is the end of a flush sequence (the original request finishing), never paired with a D.
-- needs: events
SELECT
    dev_major,                                                       -- device major
    dev_minor,                                                       -- device minor
    (input_id::BIGINT << 40) + line_no AS eid,                       -- event id, grows in blkparse (time) order
    time_ns,                                                         -- event time, ns since the first event
    action,                                                          -- D, R or C
    rwbs,                                                            -- RWBS as printed
    op,                                                              -- R/W/D/N from RWBS
    flush AND op = 'N' AS is_flush,                                  -- part of a data-less flush request
    action = 'C' AND nsectors = 0 AND NOT (flush AND op = 'N') AS is_flush_end, -- flush sequence end
    CASE WHEN flush AND op = 'N' THEN -1 ELSE sector END AS k_sector,  -- pairing key: start sector
    CASE WHEN flush AND op = 'N' THEN 0 ELSE nsectors END AS k_len,    -- pairing key: length
    pid,                                                             -- pid current at the event
    comm,                                                            -- its comm (null for C and R)
    error                                                            -- C/R error code
FROM events
WHERE action IN ('D', 'R', 'C') AND (sector IS NOT NULL OR (flush AND op = 'N'))
