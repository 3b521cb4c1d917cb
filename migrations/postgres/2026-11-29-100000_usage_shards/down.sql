-- One usage row per workspace and month again: the shards summed into shard 0.
WITH gone AS (
    DELETE FROM check_usage WHERE shard <> 0 RETURNING workspace_id, month, used
), sums AS (
    SELECT workspace_id, month, sum(used)::int8 AS used FROM gone GROUP BY workspace_id, month
)
INSERT INTO check_usage (workspace_id, month, shard, used)
SELECT workspace_id, month, 0, used FROM sums
ON CONFLICT (workspace_id, month, shard) DO UPDATE SET used = check_usage.used + EXCLUDED.used;
ALTER TABLE check_usage DROP CONSTRAINT check_usage_shard;
ALTER TABLE check_usage DROP CONSTRAINT check_usage_pkey;
ALTER TABLE check_usage ADD PRIMARY KEY (workspace_id, month);
ALTER TABLE check_usage DROP COLUMN shard;
