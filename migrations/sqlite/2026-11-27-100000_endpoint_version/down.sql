ALTER TABLE endpoints DROP COLUMN version;
