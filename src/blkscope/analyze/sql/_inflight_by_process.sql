INCLUDE bios, events, op_class;

-- Bios in flight (queued to completed) per device, with who issued them; the spike
-- attribution asks which of these overlap each spike.
CREATE VIEW internal._inflight_by_process(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    q_time_ns BIGINT,   -- queued (Q)
    end_ns BIGINT,      -- completed, or trace end when cut
    comm VARCHAR,       -- issuing process name
    nsectors INTEGER,   -- size in 512-byte sectors
    writeback BOOLEAN,  -- a write by a flusher thread (is_writeback_write)
    journal BOOLEAN     -- issued by the ext4 journal thread
) AS
SELECT
    dev_major,
    dev_minor,
    q_time_ns,
    coalesce(c_time_ns, (SELECT max(time_ns) FROM events)) AS end_ns,
    comm,
    coalesce(nsectors, 0)                                 AS nsectors,
    is_writeback_write(comm, op, flags, sector) AS writeback,
    is_journal(comm)                               AS journal
FROM bios;
