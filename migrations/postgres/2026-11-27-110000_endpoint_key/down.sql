DROP INDEX endpoints_workspace_key;
ALTER TABLE endpoints DROP COLUMN key;
