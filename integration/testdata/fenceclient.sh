#!/bin/sh
# Client A of Kleppmann's scenario (fence_test.go), a real process:
# acquire the lock through the proxy, fence it (unless FENCE=no), stop
# itself as a GC pause would, and, once continued, write to PostgreSQL
# with its token: the fenced write only if T is above the row's fence.
# Prints "fenced T" before the pause and "wrote" after the write.
# Environment: PROXY_PORT, PG_PORT, KEY, TOKEN, TTL_MS, FENCE (yes|no).
set -eu
ok=$(redis-cli -p "$PROXY_PORT" SET "$KEY" "$TOKEN" NX PX "$TTL_MS")
[ "$ok" = "OK" ] || { echo "acquire: $ok"; exit 1; }
t=0
if [ "$FENCE" = "yes" ]; then
  t=$(redis-cli -p "$PROXY_PORT" FENCE "$KEY" "$TOKEN")
  case "$t" in ''|*[!0-9]*) echo "fence: $t"; exit 1;; esac
fi
echo "fenced $t"
kill -STOP $$
if [ "$FENCE" = "yes" ]; then
  sql="UPDATE resource SET value = '$TOKEN', fence = $t WHERE id = 1 AND fence < $t"
else
  sql="UPDATE resource SET value = '$TOKEN' WHERE id = 1"
fi
psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 -c "$sql" -c "SELECT 'written'" -tA >/dev/null
echo "wrote"
