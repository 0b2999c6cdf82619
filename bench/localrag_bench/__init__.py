"""Benchmarks: data sets, metrics (recall@k, EM, F1), the runner, reports and the scale benchmark."""
