//! End-to-end tests: each drives the real `apidrift` binary.

mod admin_cli;
mod api;
mod cli;
mod diff_cli;
