-- Every bio with the classes its latencies are reported under (stage_stats, latency_hist).
SELECT
    q_eid,                                                             -- Q event id
    dev_major,                                                         -- device major
    dev_minor,                                                         -- device minor
    op_base,                                                           -- read write discard flush other
    op_base
      || CASE WHEN regexp_matches(flags, '^F?[RWDN]F?A?S') THEN '/sync' ELSE '' END
      || CASE WHEN flags LIKE '%M' THEN '/meta' ELSE '' END AS op_class, -- op_base, /sync, /meta from RWBS
    coalesce(comm, '?') AS process                                     -- submitting comm ('?' if unknown)
FROM (
    SELECT *,
        CASE WHEN op = 'N' OR (flags LIKE 'F%' AND sector IS NULL) THEN 'flush'
             WHEN op = 'R' THEN 'read' WHEN op = 'W' THEN 'write' WHEN op = 'D' THEN 'discard'
             ELSE 'other' END AS op_base
    FROM bios
)
