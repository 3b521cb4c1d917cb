-- The monthly usage in 16 rows per workspace and month (crates/store-postgres/src/usage.rs): a
-- check locks one of them until it commits, not the workspace's only one. Shard i counts at most
-- (quota + 15 - i) / 16 units, so the rows' caps add up to the quota.
ALTER TABLE check_usage ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE check_usage DROP CONSTRAINT check_usage_pkey;
ALTER TABLE check_usage ADD PRIMARY KEY (workspace_id, month, shard);
ALTER TABLE check_usage ALTER COLUMN shard DROP DEFAULT;
ALTER TABLE check_usage ADD CONSTRAINT check_usage_shard CHECK (shard BETWEEN 0 AND 15);

-- Usage under a quota, spread within the caps: each shard filled up to its cap in order, what
-- exceeds the quota left on shard 0 (as usage.rs `spread` does).
WITH caps AS (
    SELECT u.workspace_id, u.month, u.used AS total, w.check_quota::int8 AS quota,
           s.i::smallint AS shard, (w.check_quota::int8 + 15 - s.i) / 16 AS cap
    FROM check_usage u
    JOIN workspaces w ON w.id = u.workspace_id
    CROSS JOIN generate_series(0, 15) AS s (i)
    WHERE w.check_quota IS NOT NULL AND u.shard = 0
), filled AS (
    SELECT *, COALESCE(sum(cap) OVER (PARTITION BY workspace_id, month ORDER BY shard
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM caps
)
INSERT INTO check_usage (workspace_id, month, shard, used)
SELECT workspace_id, month, shard,
       CASE WHEN shard = 0 THEN LEAST(cap, total) + GREATEST(total - quota, 0)
            ELSE LEAST(cap, GREATEST(total - before, 0)) END
FROM filled
ON CONFLICT (workspace_id, month, shard) DO UPDATE SET used = EXCLUDED.used;
