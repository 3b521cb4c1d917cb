//! API tokens (D4): `svc_live_` + 43 base62 characters of 32 CSPRNG bytes + 6 base62 characters of
//! the CRC32 (IEEE) of everything before. Stored as SHA-256 (hex) with a 4-character hint.

use crate::SealError;
use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use zeroize::Zeroizing;

/// Every token starts with this.
pub const PREFIX: &str = "svc_live_";
/// Base62 characters of the random part.
pub const RANDOM_CHARS: usize = 43;
/// Base62 characters of the checksum.
pub const CHECKSUM_CHARS: usize = 6;
/// Total length of a token.
pub const TOKEN_LEN: usize = PREFIX.len() + RANDOM_CHARS + CHECKSUM_CHARS;
/// The pattern leak scanners can match.
pub const PATTERN: &str = "svc_live_[0-9A-Za-z]{49}";

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A freshly minted token. The text is zeroised on drop and `Debug`/`Display` print `***`; read it
/// with [`Token::expose`] (only to show it once).
pub struct Token(Zeroizing<String>);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Token {
    /// Mints a token from 32 bytes of the operating system's CSPRNG.
    pub fn mint() -> Result<Self, SealError> {
        let mut random = Zeroizing::new([0u8; 32]);
        SystemRandom::new()
            .fill(random.as_mut_slice())
            .map_err(|_| SealError::Random)?;
        Ok(Self::from_random(&random))
    }

    /// The token for the given random part (tests use fixed bytes).
    pub fn from_random(random: &[u8; 32]) -> Self {
        let mut text = Zeroizing::new(String::with_capacity(TOKEN_LEN));
        text.push_str(PREFIX);
        push_base62(&mut text, random, RANDOM_CHARS);
        let crc = crc32(text.as_bytes());
        push_base62(&mut text, &crc.to_be_bytes(), CHECKSUM_CHARS);
        Self(text)
    }

    /// The token text.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// SHA-256 of the text, lowercase hex: the value stored and looked up.
    pub fn hash(&self) -> String {
        hash(&self.0)
    }

    /// The last four characters, shown in listings.
    pub fn hint(&self) -> String {
        hint(&self.0)
    }
}

/// Appends `bytes` (a big-endian number) in base62, left-padded with `0` to `width` characters.
/// `width` must be large enough for the number (43 for 32 bytes, 6 for 4 bytes).
fn push_base62(out: &mut String, bytes: &[u8], width: usize) {
    let mut number = Zeroizing::new(bytes.to_vec());
    let mut digits = Zeroizing::new(vec![b'0'; width]);
    for slot in digits.iter_mut().rev() {
        let mut rem: u32 = 0;
        for byte in number.iter_mut() {
            let acc = rem << 8 | u32::from(*byte);
            *byte = (acc / 62) as u8;
            rem = acc % 62;
        }
        *slot = ALPHABET[rem as usize];
    }
    out.extend(digits.iter().map(|&d| char::from(d)));
}

/// Checks a token's format without any lookup: prefix, length, alphabet and checksum. A failure
/// names the first rule broken, never the text.
pub fn check_format(text: &str) -> Result<(), SealError> {
    let Some(rest) = text.strip_prefix(PREFIX) else {
        return Err(SealError::MalformedToken("missing svc_live_ prefix"));
    };
    if text.len() != TOKEN_LEN {
        return Err(SealError::MalformedToken("wrong length"));
    }
    if !rest.bytes().all(|c| c.is_ascii_alphanumeric()) {
        return Err(SealError::MalformedToken("characters outside [0-9A-Za-z]"));
    }
    let (body, checksum) = text.split_at(PREFIX.len() + RANDOM_CHARS);
    let mut expected = String::with_capacity(CHECKSUM_CHARS);
    push_base62(
        &mut expected,
        &crc32(body.as_bytes()).to_be_bytes(),
        CHECKSUM_CHARS,
    );
    if !ct_eq(expected.as_bytes(), checksum.as_bytes()) {
        return Err(SealError::MalformedToken("checksum mismatch"));
    }
    Ok(())
}

/// SHA-256 of a token's text, lowercase hex.
pub fn hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest.as_ref() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The last four characters of a token (the whole text when shorter).
pub fn hint(text: &str) -> String {
    let start = text.char_indices().rev().nth(3).map_or(0, |(i, _)| i);
    text[start..].to_owned()
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib and `crc32fast` compute it.
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &byte in data {
        crc = TABLE[((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}
