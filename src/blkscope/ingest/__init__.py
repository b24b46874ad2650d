"""Input formats -> Arrow record batches -> Parquet dataset folders."""
