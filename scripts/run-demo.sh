#!/usr/bin/env bash
# The README's run command: the dashboard on an embedded SQLite memory file with demo
# data and a sign-in. Idempotent: running it again neither duplicates data nor fails.
#   PORT=8001 scripts/run-demo.sh      # another port (default 8000, on 127.0.0.1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-memory_admin.dashboard.settings.dev}"
export MEMORY_STORE_URL="${MEMORY_STORE_URL:-sqlite:///var/memory.sqlite3}"
# recall by meaning with the bundled local model (the semantic extra); MEMORY_EMBEDDER=none for keyword only
export MEMORY_EMBEDDER="${MEMORY_EMBEDDER:-default}"
port="${PORT:-8000}"
py=.venv/bin/python

echo "== dashboard database (users, sessions, grants): var/dashboard.sqlite3"
$py manage.py migrate --noinput --verbosity 0

echo "== demo memory: $MEMORY_STORE_URL"
$py manage.py memory_demo
if [ "$MEMORY_EMBEDDER" != "none" ]; then
  $py manage.py memory_embed  # vectors for any record still without one (nothing to do on later runs)
fi

# one sign-in, created once; its password is kept (owner-only) so every run can print it
login_file=var/demo-login.txt  # may start with "-": passed as --password=…, never as a separate word
if [ ! -s "$login_file" ]; then
  (umask 077 && $py -c 'import secrets; print(secrets.token_urlsafe(12))' > "$login_file")
fi
password="$(cat "$login_file")"
$py manage.py memory_user create demo --role admin --password="$password" --update >/dev/null
$py manage.py memory_user create acme-viewer --role viewer --grant tenant=acme --password="$password" --update >/dev/null

cat <<TXT

== memory_admin dashboard: http://127.0.0.1:$port/
   sign in as  demo         / $password   (admin: every tenant)
          or   acme-viewer  / $password   (viewer: only tenant=acme)
   stop with Ctrl-C; run again any time (nothing is duplicated)

TXT
exec $py manage.py runserver "127.0.0.1:$port"
