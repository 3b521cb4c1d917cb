-- Same version as the PostgreSQL migration that doubles the U+10FFFF already stored in monitored
-- text and JSON, PostgreSQL escaping U+0000 from then on. SQLite holds U+0000 in TEXT and its
-- JSON text escapes it (\u0000), so it stores every value as given: nothing to change.
SELECT 1;
