"""Benchmark commands. Each prints its figures beside a baseline measured in the same run.

They run from a checkout, at the project's root (``.venv/bin/python -m bench.store …``),
and are not part of the installed package: see docs/benchmarks/.
"""
