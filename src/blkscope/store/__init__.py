"""The dataset on disk: its manifest, its atomic writer and its folder swap (no stage above it: ingest, analyze and reports all use it)."""
