-- Bios in flight (queued to completed) per device, with who issued them; the spike
-- attribution asks which of these overlap each spike.
SELECT
    dev_major,                                                     -- device major
    dev_minor,                                                     -- device minor
    q_time_ns,                                                     -- queued (Q)
    coalesce(c_time_ns, (SELECT max(time_ns) FROM events)) AS end_ns, -- completed, or trace end when cut
    comm,                                                          -- issuing process name
    coalesce(nsectors, 0)                                 AS nsectors, -- size in 512-byte sectors
    op = 'W' AND (comm LIKE 'kworker/u%' OR comm LIKE 'flush-%') AS writeback, -- written by a flusher thread (their discards are not writeback)
    comm LIKE 'jbd2/%'                                   AS journal    -- issued by the ext4 journal thread
FROM bios
