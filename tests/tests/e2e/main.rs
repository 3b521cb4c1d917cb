//! End-to-end tests: each drives the real `apidrift` binary.

mod admin_cli;
mod alerts;
mod api;
mod checks;
mod cli;
mod console;
mod console_browser;
mod console_lifecycle;
mod console_webhooks;
mod demo;
mod diff_cli;
mod env;
mod hostile;
mod import;
mod incidents;
mod intake;
mod integrity;
mod lifecycle;
mod metrics;
mod ops;
mod races;
mod reads;
mod scaleout;
mod validate_cli;
mod volatile;
