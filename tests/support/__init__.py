"""Code the tests' fixtures share, and (from a checkout) the benchmarks too; never shipped."""
