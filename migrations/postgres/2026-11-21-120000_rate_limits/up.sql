-- Rate limits shared by every instance (D17): the GCRA theoretical arrival time per key
-- (`<workspace id>:<class>`), in nanoseconds since the Unix epoch on the database's clock.
CREATE TABLE rate_limits (
    key text   PRIMARY KEY,
    tat bigint NOT NULL
);
