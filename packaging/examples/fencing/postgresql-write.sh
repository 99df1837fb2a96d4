#!/usr/bin/env bash
# Writes BODY to row ID of table `report` (postgresql.sql) only if this holder's REDLOCK_FENCE
# is not older than the fence that last wrote the row: the PostgreSQL fencing recipe.
#
#   redlock-run report -- postgresql-write.sh update|upsert ID BODY
#
# update: a guarded UPDATE of an existing row. upsert: INSERT ... ON CONFLICT DO UPDATE, which
# also creates the row. Connection from the usual libpq variables (PGHOST, PGPORT, PGDATABASE,
# PGUSER, PGPASSFILE, ...). Exit status: 0 written, 4 refused (a newer holder has written, or
# for update the row does not exist), 64 usage, other: psql's error.
set -euo pipefail

usage() { echo "usage: postgresql-write.sh update|upsert ID BODY (under redlock-run)" >&2; exit 64; }
[ $# -eq 3 ] || usage
mode=$1 id=$2 body=$3
fence=${REDLOCK_FENCE:-}
# The fence is checked here and cast to bigint in SQL: never trust it to be a number.
[[ $fence =~ ^[0-9]+$ ]] || { echo "postgresql-write.sh: REDLOCK_FENCE is not set to a number" >&2; exit 64; }

# Each statement compares and writes in one step: under READ COMMITTED a concurrent writer's
# row lock makes PostgreSQL re-check the WHERE on the row's newest version, so two holders can
# never both pass the check against the same old fence. `<=`, not `<`: the same holder may
# write several times with its one fence. The second column is the fence the row had before
# the statement (the CTE's write is not visible to the outer SELECT), for the message.
case $mode in
update) sql=$(cat <<'SQL'
WITH written AS (
    UPDATE report SET body = :'body', last_fence = :'fence'::bigint
     WHERE id = :'id' AND last_fence <= :'fence'::bigint
    RETURNING 1)
SELECT (SELECT count(*) FROM written), (SELECT last_fence FROM report WHERE id = :'id');
SQL
) ;;
upsert) sql=$(cat <<'SQL'
WITH written AS (
    INSERT INTO report AS r (id, body, last_fence) VALUES (:'id', :'body', :'fence'::bigint)
    ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, last_fence = EXCLUDED.last_fence
     WHERE r.last_fence <= EXCLUDED.last_fence
    RETURNING 1)
SELECT (SELECT count(*) FROM written), (SELECT last_fence FROM report WHERE id = :'id');
SQL
) ;;
*) usage ;;
esac

# The values go in as psql variables, which :'name' quotes as SQL literals: no string is ever
# pasted into the SQL. psql does not substitute variables in -c, hence the statement on stdin.
result=$(psql -X -q -At -v ON_ERROR_STOP=1 -v id="$id" -v body="$body" -v fence="$fence" <<<"$sql")
IFS='|' read -r rows stored <<<"$result"
if [ "$rows" = 1 ]; then
    echo "written: row $id with fence $fence"
    exit 0
fi
echo "refused: 0 rows updated for row $id with fence $fence (stored fence: ${stored:-no row})" >&2
exit 4
