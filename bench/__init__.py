"""Benchmark commands: each prints its figures beside a baseline measured in the same run
(the committed results are in docs/benchmarks/)."""
