//! Timestamps on the wire: RFC 3339, converted to UTC, millisecond precision, `Z` suffix
//! (`2026-11-21T07:57:09.123Z`). Reading accepts any RFC 3339 offset.
//!
//! Use with `#[serde(with = "apidrift_model::timestamp")]` on an [`OffsetDateTime`] field, or
//! `#[serde(with = "apidrift_model::timestamp::option")]` on an `Option<OffsetDateTime>`:
//!
//! ```
//! use apidrift_model::OffsetDateTime;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Event {
//!     #[serde(with = "apidrift_model::timestamp")]
//!     at: OffsetDateTime,
//! }
//!
//! let event: Event = serde_json::from_str(r#"{"at":"2026-11-21T08:57:09.123456+01:00"}"#)?;
//! assert_eq!(serde_json::to_string(&event)?, r#"{"at":"2026-11-21T07:57:09.123Z"}"#);
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Deserializer, Serializer, de::Error as _, ser::Error as _};
use std::borrow::Cow;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

const WIRE: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// Formats a timestamp as the API writes it: `2026-11-21T07:57:09.123Z`.
pub fn format(t: OffsetDateTime) -> Result<String, time::error::Format> {
    t.to_offset(UtcOffset::UTC).format(WIRE)
}

/// Parses an RFC 3339 timestamp with any offset.
pub fn parse(s: &str) -> Result<OffsetDateTime, time::error::Parse> {
    OffsetDateTime::parse(s, &Rfc3339)
}

/// Truncates a timestamp to the millisecond precision of the wire format, so a value read back
/// from the API compares equal to the one written.
pub fn truncate_to_millis(t: OffsetDateTime) -> OffsetDateTime {
    let nanos = t.nanosecond();
    t.replace_nanosecond(nanos - nanos % 1_000_000).unwrap_or(t)
}

/// Writes a timestamp in the wire format (for `#[serde(with = "apidrift_model::timestamp")]`).
pub fn serialize<S: Serializer>(t: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*t).map_err(S::Error::custom)?)
}

/// Reads an RFC 3339 timestamp with any offset (for
/// `#[serde(with = "apidrift_model::timestamp")]`).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
    let text = Cow::<str>::deserialize(d)?;
    parse(&text).map_err(D::Error::custom)
}

/// The same for `Option<OffsetDateTime>`: `None` is written as `null`.
pub mod option {
    use super::*;

    /// Writes a timestamp in the wire format, or `null`.
    pub fn serialize<S: Serializer>(t: &Option<OffsetDateTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    /// Reads an RFC 3339 timestamp with any offset, or `null`. Combine with `#[serde(default)]`
    /// to also accept an absent field.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<OffsetDateTime>, D::Error> {
        match Option::<Cow<str>>::deserialize(d)? {
            Some(text) => parse(&text).map(Some).map_err(D::Error::custom),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn writes_utc_millis_with_z() {
        let t = datetime!(2026-11-21 08:57:09.123456789 +01:00);
        assert_eq!(format(t).ok().as_deref(), Some("2026-11-21T07:57:09.123Z"));
        let whole = datetime!(2026-01-02 03:04:05 UTC);
        assert_eq!(
            format(whole).ok().as_deref(),
            Some("2026-01-02T03:04:05.000Z")
        );
    }

    #[test]
    fn reads_any_offset() {
        let t = parse("2026-11-21T08:57:09.5+01:00").ok();
        assert_eq!(t, Some(datetime!(2026-11-21 07:57:09.5 UTC)));
        assert!(parse("yesterday").is_err());
    }

    #[test]
    fn truncates() {
        let t = datetime!(2026-11-21 07:57:09.123999 UTC);
        assert_eq!(
            truncate_to_millis(t),
            datetime!(2026-11-21 07:57:09.123 UTC)
        );
    }
}
