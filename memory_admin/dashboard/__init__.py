"""The Django dashboard over the memory store: the only Django code in memory_admin."""
