-- Nothing was changed (see up.sql).
SELECT 1;
