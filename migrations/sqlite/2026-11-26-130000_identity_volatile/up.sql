-- Identity rules of an endpoint (a JSON object: array path pattern -> key) and the volatile leaf
-- paths learned by a multi-sample baseline capture (a JSON array of paths). Same version and
-- columns as the PostgreSQL migration.
ALTER TABLE endpoints ADD COLUMN identity_keys TEXT NOT NULL DEFAULT '{}';
ALTER TABLE baselines ADD COLUMN volatile_paths TEXT NOT NULL DEFAULT '[]';
