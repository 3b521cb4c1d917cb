DROP TABLE sessions;
DROP TABLE memberships;
DROP TABLE users;
