-- Nothing to change on SQLite. PostgreSQL now counts the monthly usage in 16 rows per workspace
-- and month (migrations/postgres, same name) so that concurrent checks don't wait for one row;
-- SQLite has a single writer, so one row per month costs it no waiting. The folders of the two
-- backends keep the same names.
SELECT 1;
