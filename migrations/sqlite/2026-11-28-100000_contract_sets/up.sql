-- Contracts stored once per document (issue 29): an import's reachable schemas are written once
-- per workspace and content (`hash`: SHA-256 of the canonical JSON text, computed by the
-- application), and each endpoint's `response_contract` refers into it by `set` (the hash) with
-- only its root. A set lives while an endpoint of its workspace refers to it; the store frees it
-- in the transaction that drops the last reference. Contracts written before stay inline and are
-- read as they were (no conversion: the hash is the application's). Same columns as the other
-- backend's migration.
CREATE TABLE contract_sets (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    document TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, hash)
) WITHOUT ROWID;
-- Which endpoints refer to a set: the lookup that frees it.
CREATE INDEX endpoints_contract_set
    ON endpoints (workspace_id, json_extract(response_contract, '$.set'));
