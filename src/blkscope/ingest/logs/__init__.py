"""Side logs captured next to the trace (writeback.bt, vmstat, /proc/meminfo, iostat -x, biosnoop,
histograms, series CSV, partition listings): one parser per format, and `registry` naming
the parser of each format `detect` recognises."""
