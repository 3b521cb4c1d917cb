//! Enumerated values of the API. Each one has a fixed wire spelling ([`Health::as_str`] etc.),
//! parses from it with `FromStr` (exactly, as query parameters must match, D5) and serialises to it.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use std::fmt;

/// A value that is not one of an enumeration's spellings. Its message lists the allowed ones.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownValue {
    /// The allowed spellings, comma separated.
    pub expected: String,
}

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "must be one of {}", self.expected)
    }
}

impl std::error::Error for UnknownValue {}

macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
        read = $read:expr;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The allowed spellings, comma separated (for error messages).
            pub fn expected() -> String {
                [$($text),+].join(", ")
            }

            /// Parses the value as request bodies may spell it (see each type's docs).
            pub fn read(text: &str) -> Result<Self, UnknownValue> {
                let read: fn(&str) -> Option<Self> = $read;
                read(text).ok_or_else(|| UnknownValue { expected: Self::expected() })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;
            /// Exact match on the wire spelling.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownValue { expected: Self::expected() }),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<str>::deserialize(d)?;
                Self::read(&text).map_err(D::Error::custom)
            }
        }

        /// Feature `openapi`: a string schema listing the wire spellings.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
    };
}

fn exact<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

wire_enum! {
    /// Health of an endpoint (spec "States"; transitions in D7).
    #[non_exhaustive]
    pub enum Health {
        Healthy = "healthy",
        Warning = "warning",
        Breaking = "breaking",
        Unknown = "unknown",
        Checking = "checking",
    }
    read = exact;
}

wire_enum! {
    /// The credential style of an endpoint. Names the style only; the credential is never returned.
    #[non_exhaustive]
    pub enum AuthType {
        None = "none",
        Bearer = "bearer",
        ApiKey = "api_key",
        Basic = "basic",
        Oauth = "oauth",
        Custom = "custom",
    }
    read = exact;
}

wire_enum! {
    /// How responses are compared (D9). Requests may say `exact`, which is stored and shown as
    /// `full` (D6).
    pub enum DiffMode {
        /// Leaf values are ignored; arrays compare by the merged shape of their elements.
        Schema = "schema",
        /// Leaf values are compared too; arrays of keyed objects pair by identity.
        Full = "full",
    }
    read = |s| match s {
        "exact" => Some(DiffMode::Full),
        other => exact(other),
    };
}

wire_enum! {
    /// HTTP method of a monitored endpoint. Written uppercase; requests may use any case (D6).
    pub enum HttpMethod {
        Get = "GET",
        Post = "POST",
        Put = "PUT",
        Patch = "PATCH",
        Delete = "DELETE",
        Head = "HEAD",
        Options = "OPTIONS",
    }
    read = |s| exact(&s.to_ascii_uppercase());
}

impl HttpMethod {
    /// Whether a request body may be sent with this method (not for GET or HEAD, D6).
    pub const fn allows_body(self) -> bool {
        !matches!(self, HttpMethod::Get | HttpMethod::Head)
    }
}

wire_enum! {
    /// How often a scheduled check runs. Written uppercase; requests may use any case (D5).
    pub enum Frequency {
        Hourly = "HOURLY",
        Daily = "DAILY",
        Weekly = "WEEKLY",
        Monthly = "MONTHLY",
    }
    read = |s| exact(&s.to_ascii_uppercase());
}

wire_enum! {
    /// A token scope (spec "Authentication").
    pub enum Scope {
        EndpointsRead = "endpoints:read",
        EndpointsWrite = "endpoints:write",
        ChecksRun = "checks:run",
        BaselinesWrite = "baselines:write",
    }
    read = exact;
}

impl Scope {
    /// Scopes a token gets when none are named (D3): `endpoints:write` is off by default because it
    /// is the only scope able to store credentials.
    pub const DEFAULT: &'static [Scope] = &[Scope::EndpointsRead];
}

wire_enum! {
    /// A role within a workspace (D4). Ordered from weakest to strongest, so `role >= Role::Member`
    /// reads as "member or above".
    pub enum Role {
        Viewer = "viewer",
        Member = "member",
        Admin = "admin",
        Owner = "owner",
    }
    read = exact;
}

wire_enum! {
    /// A workspace plan (D17).
    #[non_exhaustive]
    pub enum Plan {
        Free = "free",
        Starter = "starter",
        Pro = "pro",
        Enterprise = "enterprise",
    }
    read = exact;
}

impl Plan {
    /// Endpoints a workspace on this plan may hold; `None` is unlimited (D17).
    pub const fn endpoint_limit(self) -> Option<u32> {
        match self {
            Plan::Free => Some(5),
            Plan::Starter => Some(50),
            Plan::Pro => Some(500),
            Plan::Enterprise => None,
        }
    }

    /// Checks per calendar month (UTC); `None` is unlimited (D17).
    pub const fn check_quota(self) -> Option<u32> {
        match self {
            Plan::Free => Some(1_000),
            Plan::Starter => Some(20_000),
            Plan::Pro => Some(200_000),
            Plan::Enterprise => None,
        }
    }

    /// Whether recurring checks may be scheduled (Starter and above, spec and D17).
    pub const fn allows_schedules(self) -> bool {
        !matches!(self, Plan::Free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_parse_and_lenient_read() {
        assert_eq!("healthy".parse::<Health>(), Ok(Health::Healthy));
        assert!("HEALTHY".parse::<Health>().is_err());
        assert_eq!(HttpMethod::read("patch"), Ok(HttpMethod::Patch));
        assert_eq!(Frequency::read("daily"), Ok(Frequency::Daily));
        assert_eq!(DiffMode::read("exact"), Ok(DiffMode::Full));
        assert!("exact".parse::<DiffMode>().is_err());
        let err = Health::read("HEALTHY").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("must be one of healthy, warning, breaking, unknown, checking")
        );
    }

    #[test]
    fn role_order() {
        assert!(Role::Owner > Role::Admin && Role::Admin > Role::Member);
        assert!(Role::Member > Role::Viewer);
    }

    #[test]
    fn every_value_round_trips() {
        fn check<T>(all: &[T])
        where
            T: Serialize + for<'de> Deserialize<'de> + PartialEq + fmt::Debug + Copy,
        {
            for v in all {
                let json = serde_json::to_string(v).unwrap_or_default();
                let back: Option<T> = serde_json::from_str(&json).ok();
                assert_eq!(back, Some(*v), "{json}");
            }
        }
        check(Health::ALL);
        check(AuthType::ALL);
        check(DiffMode::ALL);
        check(HttpMethod::ALL);
        check(Frequency::ALL);
        check(Scope::ALL);
        check(Role::ALL);
        check(Plan::ALL);
    }
}
