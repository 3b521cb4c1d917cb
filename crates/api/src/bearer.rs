//! Bearer credentials: the `Authorization: Bearer …` header as the API's token extractor and
//! `GET /metrics` read it, and the digest the metrics token is kept as.

use actix_web::HttpRequest;
use actix_web::http::header;

/// The credentials of a `Bearer` `Authorization` header: exactly one such header, its scheme
/// `Bearer` in any case (RFC 9110 §11.1: the scheme is case-insensitive), then the token with
/// the spaces around it removed. The API's extractor and `GET /metrics` both read it here.
pub(crate) fn bearer_credentials(req: &HttpRequest) -> Option<&str> {
    let mut values = req.headers().get_all(header::AUTHORIZATION);
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let text = value.to_str().ok()?;
    let (scheme, rest) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    Some(rest.trim_matches(' '))
}

/// The SHA-256 of the metrics token (what [`crate::AppState`] keeps). Its `Debug` prints no digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenDigest([u8; 32]);

impl std::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenDigest(***)")
    }
}

impl TokenDigest {
    /// Whether `token` has this digest (compared in constant time over the digests).
    pub(crate) fn matches(&self, token: &str) -> bool {
        digest(token)
            .0
            .iter()
            .zip(&self.0)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// The digest of a metrics token.
pub fn digest(token: &str) -> TokenDigest {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    TokenDigest(out)
}
