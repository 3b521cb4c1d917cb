//! The routes, one module per group, and the helpers they share.

pub mod accept;
pub mod apply;
pub mod checks;
pub mod diffs;
pub mod endpoints;
pub mod health;
pub mod lifecycle;
pub mod precondition;
pub mod table;
pub mod webhooks;
pub mod workspace;

pub use crate::body::{read_json_body, read_optional_json_body};
use crate::error::ApiError;
use uuid::Uuid;

/// A path id: a malformed uuid is a 404 like an unknown one (D5).
pub fn parse_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| ApiError::NotFound)
}
