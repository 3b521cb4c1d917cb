//! End-to-end tests: each drives the real `apidrift` binary.

mod cli;
