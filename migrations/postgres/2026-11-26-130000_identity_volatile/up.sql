-- Identity rules of an endpoint (a JSON object: array path pattern -> key) and the volatile leaf
-- paths learned by a multi-sample baseline capture (a JSON array of paths). Same version and
-- columns as the SQLite migration.
ALTER TABLE endpoints ADD COLUMN identity_keys JSONB NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE baselines ADD COLUMN volatile_paths JSONB NOT NULL DEFAULT '[]'::jsonb;
