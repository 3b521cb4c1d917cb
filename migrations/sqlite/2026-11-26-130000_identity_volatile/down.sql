ALTER TABLE baselines DROP COLUMN volatile_paths;
ALTER TABLE endpoints DROP COLUMN identity_keys;
