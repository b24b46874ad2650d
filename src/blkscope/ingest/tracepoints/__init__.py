"""Kernel block tracepoints printed as text (ftrace, trace-cmd report, perf script) into `events`."""
