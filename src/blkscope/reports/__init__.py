"""HTML report and CI gate: model, charts, page, summary.json, check."""
