-- Console users, their workspace memberships, and server-side sessions (D15). Same tables and
-- columns as the PostgreSQL migration; uuids TEXT, timestamps INTEGER microseconds (UTC).

CREATE TABLE users (
    id            TEXT   PRIMARY KEY NOT NULL,
    email         TEXT   NOT NULL UNIQUE,   -- lower-cased
    password_hash TEXT   NOT NULL,          -- argon2id PHC string, never the password
    created_at    BIGINT NOT NULL
);

CREATE TABLE memberships (
    user_id      TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id TEXT   NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    role         TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, workspace_id)
) WITHOUT ROWID;
CREATE INDEX memberships_workspace ON memberships (workspace_id, user_id);

CREATE TABLE sessions (
    id_hash      TEXT   PRIMARY KEY NOT NULL,  -- hex SHA-256 of the cookie value
    user_id      TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id TEXT   NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    csrf_token   TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,              -- absolute expiry
    revoked_at   BIGINT
) WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions (user_id);
