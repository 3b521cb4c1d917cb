//! # apidrift-seal
//!
//! Keeps stored credentials useless to anyone who steals the database (decisions D1, D2, D4 and
//! `security-tests.md` "Sealing" and "Tokens"). No I/O apart from reading and writing key files.
//!
//! * [`SecretKey`]: a 32-byte AES-256 key parsed from `ENDPOINT_SECRET_KEY` (standard base64 or
//!   64 hex characters) or a key file; [`generate_key`] for `apidrift keygen`; [`create_key_file`]
//!   writes a new key file with mode 0600 and refuses to overwrite one (first-run bootstrap, D2).
//!   A key's [`KeyId`] is derived from the key itself, so no id is configured.
//! * [`KeyRing`]: the active key plus previous keys (`ENDPOINT_SECRET_KEY_PREVIOUS`).
//!   [`KeyRing::seal`] encrypts with AES-256-GCM (ring) and a fresh random 96-bit nonce;
//!   [`KeyRing::open`] picks the key by the id in the value; [`KeyRing::rewrap`] re-seals a value
//!   under the active key for rotation (`apidrift keys rotate`).
//! * [`Binding`] ties a value to its workspace, row and [`Field`] through the associated data, so a
//!   value copied to another row, workspace or column does not open.
//! * [`token`]: API tokens (`svc_live_…`, D4): minting, the database-free format check, SHA-256
//!   hash, hint, constant-time comparison.
//!
//! Sealed value layout (`security-tests.md`):
//!
//! ```text
//! blob = 0x01 | key_id:u32be | nonce[12] | ciphertext | tag[16]
//! AAD  = "svc.cred.v1" 0x00 | blob[0..5] | workspace_id[16] | row_id[16] | field_tag:u8
//! ```
//!
//! Plaintext returned by [`KeyRing::open`] is a `Zeroizing<Vec<u8>>`; keys are zeroised on drop;
//! `Debug` of keys, rings and tokens never shows secret material; error messages carry no secret.
//!
//! ## Seal counter
//!
//! Each key counts its seals: the warning hook ([`KeyRing::with_warn_hook`]) fires at 2^30 and
//! sealing is refused at 2^32 ([`UsageLimits`], injectable). The counter lives in the process:
//! [`KeyRing::seal_counts`] reads it and [`KeyRing::set_seal_count`] restores a persisted figure.
//! In-process is enough for now because the store has no counter table yet and the bound is far
//! away: every seal is a credential, header set, body or secret write, so 2^32 seals under one
//! key would take over a century at one seal per second, and rotation (`keys rotate`) starts a
//! fresh count. Persisting the count per key id is the planned follow-up once a store table for it
//! exists.

mod error;
mod key;
mod keyring;
pub mod token;

pub use error::SealError;
pub use key::{KEY_LEN, KeyId, SecretKey, create_key_file, generate_key};
pub use keyring::{
    Binding, Field, HEADER_LEN, KeyRing, OVERHEAD, TAG_LEN, UsageLimits, VERSION, WarnHook,
    key_id_of,
};
pub use token::Token;
