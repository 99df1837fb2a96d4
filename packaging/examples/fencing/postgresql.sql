-- The table of the PostgreSQL fencing recipe (see README.md beside this file): each row keeps
-- the largest REDLOCK_FENCE that has written it, so that a write with a smaller one, from a
-- holder whose lock has since passed to another, can be refused. The guarded UPDATE and the
-- insert-or-update are in postgresql-write.sh.
--
--   psql -v ON_ERROR_STOP=1 -f postgresql.sql
CREATE TABLE IF NOT EXISTS report (
    id         text   PRIMARY KEY,
    body       text   NOT NULL,
    -- bigint: the fence counter is a 64-bit Redis integer (it starts from Redis's clock in
    -- microseconds, about 1.7e15 today).
    last_fence bigint NOT NULL
);
