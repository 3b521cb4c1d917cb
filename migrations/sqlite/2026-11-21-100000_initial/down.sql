DROP TABLE workspace_counts;
DROP TABLE diffs;
DROP TABLE checks;
DROP TABLE baselines;
DROP TABLE endpoints;
DROP TABLE tokens;
DROP TABLE check_usage;
DROP TABLE workspaces;
