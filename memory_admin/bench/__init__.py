"""Benchmark commands. Each prints its figures beside a baseline measured in the same run.

They are part of the product, not of the test run: see docs/benchmarks/.
"""
