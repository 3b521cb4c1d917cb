DROP TABLE schedules;
DROP TABLE delivery_attempts;
DROP TABLE deliveries;
DROP TABLE outbox_events;
DROP TABLE alert_state;
DROP TABLE webhooks;
