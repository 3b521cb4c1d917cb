-- What a webhook delivers to: 'generic' (the signed event), 'slack', 'discord' or 'pagerduty'.
-- Existing webhooks are generic. Same version and column as the other backend's migration.
ALTER TABLE webhooks ADD COLUMN kind TEXT NOT NULL DEFAULT 'generic';
