#!/usr/bin/env bash
# Makes first-release.sqlite: a database as mirror's first release (schema migration
# "mirror-bookkeeping-1", GRDB's migration table, one record table) left it after a walk
# of job 'events' that stored pages 1 and 2 and failed at page 3. The SQL below is that
# release's migration, unchanged. The file is committed; this script says how it was made.
set -euo pipefail
cd "$(dirname "$0")"
rm -f first-release.sqlite
sqlite3 first-release.sqlite <<'SQL'
PRAGMA journal_mode = WAL;
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
CREATE TABLE _mirror_pages (
  job           TEXT    NOT NULL,
  account       TEXT    NOT NULL,
  url           TEXT    NOT NULL,
  page          INTEGER NOT NULL,
  status        INTEGER NOT NULL,
  etag          TEXT,
  last_modified TEXT,
  records       INTEGER NOT NULL,
  bytes         INTEGER NOT NULL,
  fetched_at    TEXT    NOT NULL,
  PRIMARY KEY (job, account, url)
);
CREATE TABLE _mirror_walks (
  job         TEXT    NOT NULL,
  account     TEXT    NOT NULL,
  table_name  TEXT    NOT NULL,
  state       TEXT    NOT NULL,
  started_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL,
  pages       INTEGER NOT NULL,
  next_page   INTEGER,
  next_url    TEXT,
  next_cursor TEXT,
  position    INTEGER NOT NULL,
  PRIMARY KEY (job, account)
);
CREATE TABLE _mirror_runs (
  run_id            INTEGER PRIMARY KEY AUTOINCREMENT,
  job               TEXT    NOT NULL,
  account           TEXT    NOT NULL,
  table_name        TEXT    NOT NULL,
  started_at        TEXT    NOT NULL,
  finished_at       TEXT    NOT NULL,
  result            TEXT    NOT NULL,
  stop_reason       TEXT    NOT NULL,
  pages             INTEGER NOT NULL,
  records_new       INTEGER NOT NULL,
  records_updated   INTEGER NOT NULL,
  records_unchanged INTEGER NOT NULL,
  records_rejected  INTEGER NOT NULL,
  records_pruned    INTEGER NOT NULL,
  error             TEXT
);
INSERT INTO grdb_migrations VALUES ('mirror-bookkeeping-1');
CREATE TABLE IF NOT EXISTS "t_event" (
  account    TEXT    NOT NULL DEFAULT '',
  id         TEXT    NOT NULL,
  record     TEXT    NOT NULL,
  position   INTEGER NOT NULL,
  first_seen TEXT    NOT NULL,
  last_seen  TEXT    NOT NULL,
  PRIMARY KEY (account, id)
);
CREATE INDEX IF NOT EXISTS "t_event_walk_order" ON "t_event" (account, position);
INSERT INTO t_event VALUES
  ('', '1', '{"id":"1","title":"one"}', 0, '2026-11-20T08:00:00.100Z', '2026-11-20T08:00:00.100Z'),
  ('', '2', '{"id":"2","title":"two"}', 1, '2026-11-20T08:00:00.100Z', '2026-11-20T08:00:00.100Z'),
  ('', '3', '{"id":"3","title":"three"}', 2, '2026-11-20T08:00:00.200Z', '2026-11-20T08:00:00.200Z'),
  ('', '4', '{"id":"4","title":"four"}', 3, '2026-11-20T08:00:00.200Z', '2026-11-20T08:00:00.200Z');
INSERT INTO _mirror_pages VALUES
  ('events', '', 'http://127.0.0.1:9/events?page=1', 1, 200, '"p1"', NULL, 2, 60, '2026-11-20T08:00:00.100Z'),
  ('events', '', 'http://127.0.0.1:9/events?page=2', 2, 200, '"p2"', NULL, 2, 62, '2026-11-20T08:00:00.200Z');
INSERT INTO _mirror_walks VALUES
  ('events', '', 't_event', 'failed', '2026-11-20T08:00:00.000Z', '2026-11-20T08:00:00.300Z', 2, 3, NULL, NULL, 4);
INSERT INTO _mirror_runs (job, account, table_name, started_at, finished_at, result, stop_reason, pages, records_new,
  records_updated, records_unchanged, records_rejected, records_pruned, error) VALUES
  ('events', '', 't_event', '2026-11-20T08:00:00.000Z', '2026-11-20T08:00:00.300Z', 'failed', 'failed', 2, 4, 0, 0, 0, 0,
   'job ''events'': GET http://127.0.0.1:9/events?page=3: no response: connection refused (after 4 retries); page 3 not stored, pages 1-2 kept');
PRAGMA wal_checkpoint(TRUNCATE);
SQL
echo "made $(pwd)/first-release.sqlite ($(stat -c %s first-release.sqlite) bytes)"
