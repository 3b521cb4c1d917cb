//! The key ring and the sealed-value format.
//!
//! ```text
//! blob = 0x01 | key_id:u32be | nonce[12] | ciphertext | tag[16]        (33 bytes of overhead)
//! AAD  = "svc.cred.v1" 0x00 | blob[0..5] | workspace_id[16] | row_id[16] | field_tag:u8
//! ```

use crate::{KeyId, SealError, SecretKey};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use zeroize::{Zeroize as _, Zeroizing};

/// The format version byte of a sealed value.
pub const VERSION: u8 = 1;
/// Bytes before the ciphertext: version, key id, nonce.
pub const HEADER_LEN: usize = 1 + 4 + NONCE_LEN;
/// Bytes of the authentication tag.
pub const TAG_LEN: usize = 16;
/// Fixed size overhead of a sealed value over its plaintext.
pub const OVERHEAD: usize = HEADER_LEN + TAG_LEN;

const AAD_LABEL: &[u8; 12] = b"svc.cred.v1\0";
const AAD_LEN: usize = AAD_LABEL.len() + 5 + 16 + 16 + 1;

/// Which column a sealed value lives in. Part of the associated data, so a value copied to another
/// field of the same row does not open. Tags are stable: never renumber them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// An endpoint's credential (`auth`: bearer/oauth token, api key, basic user and password,
    /// custom header value), sealed as one JSON document.
    EndpointAuth,
    /// An endpoint's extra request headers (D6 extension), sealed as one JSON document.
    EndpointHeaders,
    /// A baseline's response body (D8).
    BaselineBody,
    /// A webhook's signing secret (D11).
    WebhookSecret,
    /// A check's response body, kept so that accepting its diff can promote it (D12).
    CheckBody,
    /// An endpoint's request body.
    EndpointRequestBody,
}

impl Field {
    /// The one-byte tag written into the associated data.
    pub const fn tag(self) -> u8 {
        match self {
            Field::EndpointAuth => 1,
            Field::EndpointHeaders => 2,
            Field::BaselineBody => 3,
            Field::WebhookSecret => 4,
            Field::CheckBody => 5,
            Field::EndpointRequestBody => 6,
        }
    }
}

/// Where a sealed value belongs: its workspace, its row and its field. Ids are the 16 bytes of the
/// row's UUID (`Uuid::into_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding {
    pub workspace: [u8; 16],
    pub row: [u8; 16],
    pub field: Field,
}

impl Binding {
    pub const fn new(workspace: [u8; 16], row: [u8; 16], field: Field) -> Self {
        Self {
            workspace,
            row,
            field,
        }
    }

    fn aad(&self, header: &[u8]) -> [u8; AAD_LEN] {
        let mut aad = [0u8; AAD_LEN];
        let (label, rest) = aad.split_at_mut(AAD_LABEL.len());
        label.copy_from_slice(AAD_LABEL);
        let (head, rest) = rest.split_at_mut(5);
        head.copy_from_slice(&header[..5]);
        let (ws, rest) = rest.split_at_mut(16);
        ws.copy_from_slice(&self.workspace);
        let (row, tag) = rest.split_at_mut(16);
        row.copy_from_slice(&self.row);
        tag[0] = self.field.tag();
        aad
    }
}

/// When the seal counter of a key warns and when it refuses (security-tests.md "Usage limit").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageLimits {
    /// From this many seals on, the warning hook fires (once per key).
    pub warn_at: u64,
    /// This many seals are allowed; the next one fails with [`SealError::UsageLimit`].
    pub refuse_at: u64,
}

impl Default for UsageLimits {
    /// 2^30 and 2^32: with random 96-bit nonces, 2^32 seals keep the chance of a repeated nonce
    /// under 2^-32 (NIST SP 800-38D, 8.3).
    fn default() -> Self {
        Self {
            warn_at: 1 << 30,
            refuse_at: 1 << 32,
        }
    }
}

/// Called once per key when its seal count reaches [`UsageLimits::warn_at`], with the key id and
/// the count.
pub type WarnHook = Box<dyn Fn(KeyId, u64) + Send + Sync>;

struct Slot {
    key: SecretKey,
    aead: LessSafeKey,
    seals: AtomicU64,
    warned: AtomicBool,
}

impl Slot {
    fn new(key: SecretKey) -> Result<Self, SealError> {
        let unbound =
            UnboundKey::new(&AES_256_GCM, key.bytes()).map_err(|_| SealError::InvalidKey {
                what: "key".into(),
                reason: "rejected by AES-256-GCM".into(),
            })?;
        Ok(Self {
            key,
            aead: LessSafeKey::new(unbound),
            seals: AtomicU64::new(0),
            warned: AtomicBool::new(false),
        })
    }
}

/// The keys the service knows: one active key that seals, and previous keys that only open.
/// Opening picks the key by the id in the sealed value.
///
/// The per-key seal counters live in this value (in-process): see the crate documentation for why
/// that is enough for now and [`KeyRing::set_seal_count`] for restoring a persisted figure.
pub struct KeyRing {
    /// `slots[0]` is the active key.
    slots: Vec<Slot>,
    limits: UsageLimits,
    on_warn: Option<WarnHook>,
    rng: SystemRandom,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.slots.iter().map(|s| s.key.id().to_string()).collect();
        f.debug_struct("KeyRing")
            .field("active", &ids.first())
            .field("previous", &ids.get(1..).unwrap_or_default())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// A ring with `active` sealing and `previous` opening older values. Previous keys equal to
    /// the active key or to each other are dropped.
    pub fn new(active: SecretKey, previous: Vec<SecretKey>) -> Result<Self, SealError> {
        let mut slots = vec![Slot::new(active)?];
        for key in previous {
            if slots.iter().all(|s| s.key.id() != key.id()) {
                slots.push(Slot::new(key)?);
            }
        }
        Ok(Self {
            slots,
            limits: UsageLimits::default(),
            on_warn: None,
            rng: SystemRandom::new(),
        })
    }

    /// Replaces the usage limits (tests lower them).
    pub fn with_limits(mut self, limits: UsageLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Installs the hook called when a key's seal count reaches the warning threshold.
    pub fn with_warn_hook(mut self, hook: WarnHook) -> Self {
        self.on_warn = Some(hook);
        self
    }

    /// The id of the key that seals.
    pub fn active_id(&self) -> KeyId {
        self.slots[0].key.id()
    }

    /// Ids of every key, active first.
    pub fn key_ids(&self) -> Vec<KeyId> {
        self.slots.iter().map(|s| s.key.id()).collect()
    }

    /// Seals performed with each key since this ring was built (plus any restored count).
    pub fn seal_counts(&self) -> Vec<(KeyId, u64)> {
        self.slots
            .iter()
            .map(|s| (s.key.id(), s.seals.load(Ordering::Relaxed)))
            .collect()
    }

    /// Restores a key's seal count, e.g. from a persisted figure. Unknown ids are ignored.
    pub fn set_seal_count(&self, key: KeyId, count: u64) {
        if let Some(slot) = self.slots.iter().find(|s| s.key.id() == key) {
            slot.seals.store(count, Ordering::Relaxed);
        }
    }

    /// Seals `plaintext` under the active key for `binding`. Each call draws a fresh random nonce.
    pub fn seal(&self, plaintext: &[u8], binding: &Binding) -> Result<Vec<u8>, SealError> {
        let slot = &self.slots[0];
        let limit = self.limits.refuse_at;
        let previous = slot
            .seals
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .map_err(|_| SealError::UsageLimit {
                key: slot.key.id(),
                limit,
            })?;
        let count = previous + 1;
        if count >= self.limits.warn_at
            && !slot.warned.swap(true, Ordering::Relaxed)
            && let Some(hook) = &self.on_warn
        {
            hook(slot.key.id(), count);
        }

        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| SealError::Random)?;
        let len = plaintext
            .len()
            .checked_add(OVERHEAD)
            .ok_or(SealError::TooLarge)?;
        let mut out = Vec::with_capacity(len);
        out.push(VERSION);
        out.extend_from_slice(&slot.key.id().0.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plaintext);
        let aad = binding.aad(&out[..5]);
        let sealed = slot.aead.seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad[..]),
            &mut out[HEADER_LEN..],
        );
        match sealed {
            Ok(tag) => {
                out.extend_from_slice(tag.as_ref());
                Ok(out)
            }
            Err(_) => {
                out.zeroize();
                Err(SealError::TooLarge)
            }
        }
    }

    /// Opens a sealed value for `binding` with the key it names. The plaintext is zeroised when
    /// the returned buffer is dropped.
    pub fn open(&self, blob: &[u8], binding: &Binding) -> Result<Zeroizing<Vec<u8>>, SealError> {
        let id = key_id_of(blob)?;
        let slot = self
            .slots
            .iter()
            .find(|s| s.key.id() == id)
            .ok_or(SealError::UnknownKeyId(id))?;
        let aad = binding.aad(&blob[..5]);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&blob[5..HEADER_LEN]);
        let mut buf = Zeroizing::new(blob[HEADER_LEN..].to_vec());
        let len = slot
            .aead
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad[..]),
                &mut buf,
            )
            .map_err(|_| SealError::OpenFailed)?
            .len();
        buf.truncate(len);
        Ok(buf)
    }

    /// Rotation: re-seals `blob` under the active key. `Ok(None)` when it already uses the active
    /// key (nothing to write); otherwise the new value to store (with a compare-and-swap against
    /// the old one).
    pub fn rewrap(&self, blob: &[u8], binding: &Binding) -> Result<Option<Vec<u8>>, SealError> {
        if key_id_of(blob)? == self.active_id() {
            return Ok(None);
        }
        let plaintext = self.open(blob, binding)?;
        self.seal(&plaintext, binding).map(Some)
    }
}

/// The key id a sealed value names, after checking its length and version.
pub fn key_id_of(blob: &[u8]) -> Result<KeyId, SealError> {
    if blob.len() < OVERHEAD {
        return Err(SealError::Truncated { len: blob.len() });
    }
    if blob[0] != VERSION {
        return Err(SealError::UnsupportedVersion(blob[0]));
    }
    let mut id = [0u8; 4];
    id.copy_from_slice(&blob[1..5]);
    Ok(KeyId(u32::from_be_bytes(id)))
}
