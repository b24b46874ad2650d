"""Put every table on the trace timeline: the clock model, last-resort alignment, the digest of
block events the model needs, and whether the trace is whole."""
