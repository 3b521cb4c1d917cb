-- Console users, their workspace memberships, and server-side sessions (D15).

CREATE TABLE users (
    id            uuid        PRIMARY KEY,
    email         text        NOT NULL UNIQUE,  -- lower-cased
    password_hash text        NOT NULL,         -- argon2id PHC string, never the password
    created_at    timestamptz NOT NULL
);

CREATE TABLE memberships (
    user_id      uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    role         text        NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (user_id, workspace_id)
);
CREATE INDEX memberships_workspace ON memberships (workspace_id, user_id);

CREATE TABLE sessions (
    id_hash      text        PRIMARY KEY,       -- hex SHA-256 of the cookie value
    user_id      uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    csrf_token   text        NOT NULL,
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,          -- absolute expiry
    revoked_at   timestamptz
);
CREATE INDEX sessions_user ON sessions (user_id);
