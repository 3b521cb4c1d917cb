//! The crate's one error type. Messages never carry key material, plaintext or token text.

use crate::KeyId;
use std::path::PathBuf;

/// Everything that can go wrong while loading keys, sealing, opening or checking tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// A key given as text is not 32 bytes of standard base64 or 64 hex characters. `what` names
    /// the source (an environment variable or a file), never the value.
    #[error("{what}: {reason}")]
    InvalidKey { what: String, reason: String },

    /// A key file could not be read or written.
    #[error("key file {path}: {reason}")]
    KeyFile { path: PathBuf, reason: String },

    /// Writing a new key file would overwrite an existing one.
    #[error("key file {path} already exists; refusing to overwrite it")]
    KeyFileExists { path: PathBuf },

    /// The operating system's random number generator failed.
    #[error("the system random number generator failed")]
    Random,

    /// A sealed value is shorter than the fixed overhead of 33 bytes.
    #[error("sealed value is truncated ({len} bytes, at least 33 expected)")]
    Truncated { len: usize },

    /// A sealed value starts with a format version this build does not know.
    #[error("sealed value has unsupported format version {0}")]
    UnsupportedVersion(u8),

    /// A sealed value names a key that is not in the key ring (add it to
    /// `ENDPOINT_SECRET_KEY_PREVIOUS`).
    #[error("sealed value uses key {0}, which is not configured")]
    UnknownKeyId(KeyId),

    /// Authentication failed: the value was altered, or it belongs to another row, workspace or
    /// field, or the key with its id is a different key.
    #[error("sealed value does not open (altered, moved from another row, or wrong key)")]
    OpenFailed,

    /// The value is too large to seal.
    #[error("value too large to seal")]
    TooLarge,

    /// The active key reached its usage limit; rotate it (`apidrift keygen`, then `keys rotate`).
    #[error("key {key} reached its limit of {limit} seals; rotate the key")]
    UsageLimit { key: KeyId, limit: u64 },

    /// A token does not have the `svc_live_` format or its checksum does not match.
    #[error("malformed token: {0}")]
    MalformedToken(&'static str),
}
