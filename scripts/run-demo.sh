#!/usr/bin/env bash
# The README's run command: an embedded SQLite memory file with demo data, shown working.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
export MEMORY_STORE_URL="${MEMORY_STORE_URL:-sqlite:///var/memory.sqlite3}"
py=.venv/bin/python
if ! $py manage.py memory_search tenant=acme --limit 1 | grep -q mem_; then
  $py manage.py memory_import examples/demo_memories.jsonl
fi
$py manage.py memory_stats
echo
echo '$ manage.py memory_search tenant=acme,user=dana "which seat on flights?"'
$py manage.py memory_search tenant=acme,user=dana "which seat on flights?"
