-- Rate limits (D17). With SQLite the service is one process and limits in memory; the table
-- exists so both backends keep the same migration list and schema.
CREATE TABLE rate_limits (
    key TEXT    PRIMARY KEY NOT NULL,
    tat INTEGER NOT NULL
);
