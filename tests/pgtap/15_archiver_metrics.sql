-- read_metrics reports the WAL archiver (pg_stat_archiver) for /metrics and the archive
-- alerts: whether archive_mode is on, the counts, the last success and the last failure.
BEGIN;
\ir helpers/common.psql
SELECT plan(4);

CREATE TEMP TABLE got AS SELECT insurance.read_metrics() -> 'archive' AS archive;

SELECT is((SELECT jsonb_typeof(archive) FROM got), 'object', 'an archive object in every answer');
SELECT is((SELECT (archive ->> 'enabled')::boolean FROM got), current_setting('archive_mode') IN ('on', 'always'),
          'enabled follows archive_mode');
SELECT is((SELECT (archive ->> 'archived')::bigint = a.archived_count AND (archive ->> 'failed')::bigint = a.failed_count
             FROM got, pg_stat_archiver a), true, 'the archived and failed counts of pg_stat_archiver');
SELECT is((SELECT (archive -> 'lastFailedAt') = coalesce(to_jsonb(extract(epoch FROM a.last_failed_time)), 'null')
             FROM got, pg_stat_archiver a), true, 'the last failure as epoch seconds, null when none');

SELECT * FROM finish();
ROLLBACK;
