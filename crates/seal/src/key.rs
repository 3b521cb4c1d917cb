//! Secret keys: parsing (`ENDPOINT_SECRET_KEY`, key files), generation and the key file of D2.

use crate::SealError;
use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use std::io::Write as _;
use std::path::Path;
use zeroize::{Zeroize, Zeroizing};

/// Length of a key in bytes (AES-256).
pub const KEY_LEN: usize = 32;

/// The id of a key: the first four bytes of SHA-256 over a domain label and the key, so that no id
/// has to be configured and the same key always has the same id. Printed as 8 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub u32);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// A 32-byte key. Zeroised on drop; `Debug` shows only its id.
#[derive(Clone)]
pub struct SecretKey {
    bytes: Zeroizing<[u8; KEY_LEN]>,
    id: KeyId,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({}, ***)", self.id)
    }
}

impl PartialEq for SecretKey {
    fn eq(&self, other: &Self) -> bool {
        crate::token::ct_eq(self.bytes.as_slice(), other.bytes.as_slice())
    }
}

impl Eq for SecretKey {}

fn key_id(bytes: &[u8; KEY_LEN]) -> KeyId {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"apidrift key id\0");
    ctx.update(bytes);
    let digest = ctx.finish();
    let mut id = [0u8; 4];
    id.copy_from_slice(&digest.as_ref()[..4]);
    KeyId(u32::from_be_bytes(id))
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl SecretKey {
    /// Wraps 32 raw bytes. The argument is zeroised.
    pub fn from_bytes(mut bytes: [u8; KEY_LEN]) -> Self {
        let key = Zeroizing::new(bytes);
        bytes.zeroize();
        let id = key_id(&key);
        Self { bytes: key, id }
    }

    /// Parses a key given as standard base64 (44 characters) or 64 hex characters; surrounding
    /// whitespace is ignored. `what` names the source in the error (e.g. `ENDPOINT_SECRET_KEY`);
    /// the value itself is never echoed.
    pub fn parse(text: &str, what: &str) -> Result<Self, SealError> {
        let text = text.trim();
        let invalid = |reason: String| SealError::InvalidKey {
            what: what.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(invalid(
                "is empty; expected 32 bytes as standard base64 or 64 hex characters".into(),
            ));
        }
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        if text.len() == 2 * KEY_LEN && text.bytes().all(|c| c.is_ascii_hexdigit()) {
            for (i, pair) in text.as_bytes().chunks_exact(2).enumerate() {
                match (hex_value(pair[0]), hex_value(pair[1])) {
                    (Some(hi), Some(lo)) => bytes[i] = hi << 4 | lo,
                    _ => return Err(invalid("is not valid hex".into())),
                }
            }
        } else {
            let decoded = Zeroizing::new(
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|_| {
                        invalid(
                            "is neither standard base64 nor 64 hex characters (generate one with \
                         `apidrift keygen`)"
                                .into(),
                        )
                    })?,
            );
            if decoded.len() != KEY_LEN {
                return Err(invalid(format!(
                    "decodes to {} bytes; a key is exactly {KEY_LEN} bytes (generate one with \
                     `apidrift keygen`)",
                    decoded.len()
                )));
            }
            bytes.copy_from_slice(&decoded);
        }
        let id = key_id(&bytes);
        Ok(Self { bytes, id })
    }

    /// Parses a comma-separated list of keys (`ENDPOINT_SECRET_KEY_PREVIOUS`). Empty items are
    /// skipped; `what` names the source in errors, with the item's position.
    pub fn parse_list(text: &str, what: &str) -> Result<Vec<Self>, SealError> {
        text.split(',')
            .map(str::trim)
            .enumerate()
            .filter(|(_, item)| !item.is_empty())
            .map(|(i, item)| Self::parse(item, &format!("{what} (item {})", i + 1)))
            .collect()
    }

    /// Reads a key file: the base64 (or hex) key on one line.
    pub fn read_file(path: &Path) -> Result<Self, SealError> {
        let text = std::fs::read_to_string(path).map_err(|e| SealError::KeyFile {
            path: path.to_owned(),
            reason: e.kind().to_string(),
        })?;
        let text = Zeroizing::new(text);
        Self::parse(&text, &format!("key file {}", path.display()))
    }

    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> Result<Self, SealError> {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        SystemRandom::new()
            .fill(bytes.as_mut_slice())
            .map_err(|_| SealError::Random)?;
        let id = key_id(&bytes);
        Ok(Self { bytes, id })
    }

    /// The key's id.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// The key as standard base64 (the form `apidrift keygen` prints and key files hold).
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(self.bytes.as_slice()))
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.bytes
    }

    /// Writes the key as a key file (base64 on one line) that only its owner can read (mode 0600
    /// on Unix). Refuses to overwrite an existing file.
    pub fn write_new_file(&self, path: &Path) -> Result<(), SealError> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let io_err = |e: std::io::Error| SealError::KeyFile {
            path: path.to_owned(),
            reason: e.kind().to_string(),
        };
        let mut file = options.open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                SealError::KeyFileExists {
                    path: path.to_owned(),
                }
            } else {
                io_err(e)
            }
        })?;
        let mut line = self.to_base64();
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(io_err)?;
        file.sync_all().map_err(io_err)
    }
}

/// A fresh key (`apidrift keygen`).
pub fn generate_key() -> Result<SecretKey, SealError> {
    SecretKey::generate()
}

/// Creates a new key file at `path` with mode 0600 holding a fresh key, and returns the key. Used
/// by the first-run bootstrap (D2). Refuses to overwrite an existing file.
pub fn create_key_file(path: &Path) -> Result<SecretKey, SealError> {
    let key = SecretKey::generate()?;
    key.write_new_file(path)?;
    Ok(key)
}
