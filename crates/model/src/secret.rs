//! A string that must never leave the process in clear: it deserialises, but has no `Serialize`
//! implementation, prints `***` in `Debug` and `Display`, and is zeroised when dropped.

use serde::{Deserialize, Deserializer};
use std::fmt;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// A credential or other secret value. Read it with [`SecretString::expose`].
///
/// ```
/// use apidrift_model::SecretString;
///
/// let token: SecretString = serde_json::from_str(r#""hunter2""#)?;
/// assert_eq!(format!("{token:?} {token}"), "*** ***");
/// assert_eq!(token.expose(), "hunter2");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The clear text. Call sites are easy to grep for: keep them few.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl<'de> Deserialize<'de> for SecretString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let s = SecretString::new("hunter2-canary");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(s.expose(), "hunter2-canary");
    }
}
