-- Bios in flight (queued to completed) per device, with who issued them; the spike
-- attribution asks which of these overlap each spike.
-- needs: bios, events
SELECT
    dev_major,                                                     -- device major
    dev_minor,                                                     -- device minor
    q_time_ns,                                                     -- queued (Q)
    coalesce(c_time_ns, (SELECT max(time_ns) FROM events)) AS end_ns, -- completed, or trace end when cut
    comm,                                                          -- issuing process name
    coalesce(nsectors, 0)                                 AS nsectors, -- size in 512-byte sectors
    is_writeback_write(comm, op, flags, sector) AS writeback,      -- a write by a flusher thread (concepts.py)
    is_journal(comm)                               AS journal         -- issued by the ext4 journal thread
FROM bios
