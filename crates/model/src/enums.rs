//! Enumerated values of the API. Each one has a fixed wire spelling ([`Health::as_str`] etc.),
//! parses from it with `FromStr` (exactly, as query parameters must match) and serialises to it.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use std::fmt;

/// A value that is not one of an enumeration's spellings. Its message lists the allowed ones.
///
/// ```
/// use apidrift_model::Health;
///
/// let err = "HEALTHY".parse::<Health>().err().map(|e| e.to_string());
/// let expected = "must be one of healthy, warning, breaking, unknown, checking";
/// assert_eq!(err.as_deref(), Some(expected));
/// ```
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
    /// Health of an endpoint: the outcome of its last baseline capture or check.
    ///
    /// Non-exhaustive: a later version may add states. When you `match`, give a `_` arm.
    #[non_exhaustive]
    pub enum Health {
        /// The last check found no breaking change and no warning (or a baseline was just
        /// captured, or the latest diff was accepted).
        Healthy = "healthy",
        /// The last check found at least one warning and no breaking change.
        Warning = "warning",
        /// The last check found at least one breaking change.
        Breaking = "breaking",
        /// Never checked: the state of a new endpoint.
        Unknown = "unknown",
        /// A check or a baseline capture is running.
        Checking = "checking",
    }
    read = exact;
}

wire_enum! {
    /// The credential style of an endpoint. Names the style only; the credential is never returned.
    ///
    /// Non-exhaustive: a later version may add styles. When you `match`, give a `_` arm.
    #[non_exhaustive]
    pub enum AuthType {
        /// No credential.
        None = "none",
        /// `Authorization: Bearer <token>`.
        Bearer = "bearer",
        /// A key sent in a named header (default `X-API-Key`).
        ApiKey = "api_key",
        /// `Authorization: Basic base64(username:password)`.
        Basic = "basic",
        /// An OAuth access token, sent as `Authorization: Bearer <token>`.
        Oauth = "oauth",
        /// Any header name with a secret value.
        Custom = "custom",
    }
    read = exact;
}

wire_enum! {
    /// How responses are compared. Requests may say `exact`, which [`DiffMode::read`] reads as
    /// `full`; [`FromStr`](std::str::FromStr) accepts the two wire spellings only.
    ///
    /// ```
    /// use apidrift_model::DiffMode;
    ///
    /// assert_eq!(DiffMode::read("exact"), Ok(DiffMode::Full));
    /// assert!("exact".parse::<DiffMode>().is_err());
    /// ```
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
    /// HTTP method of a monitored endpoint. Written uppercase; [`HttpMethod::read`] (and so a
    /// request body) accepts any case, [`FromStr`](std::str::FromStr) the uppercase spelling only.
    pub enum HttpMethod {
        /// `GET`, the default.
        Get = "GET",
        /// `POST`.
        Post = "POST",
        /// `PUT`.
        Put = "PUT",
        /// `PATCH`.
        Patch = "PATCH",
        /// `DELETE`.
        Delete = "DELETE",
        /// `HEAD`.
        Head = "HEAD",
        /// `OPTIONS`.
        Options = "OPTIONS",
    }
    read = |s| exact(&s.to_ascii_uppercase());
}

impl HttpMethod {
    /// Whether a request body may be sent with this method (not for GET or HEAD).
    pub const fn allows_body(self) -> bool {
        !matches!(self, HttpMethod::Get | HttpMethod::Head)
    }
}

wire_enum! {
    /// How often a scheduled check runs. Written uppercase; [`Frequency::read`] (and so a
    /// request body) accepts any case.
    pub enum Frequency {
        /// Every hour.
        Hourly = "HOURLY",
        /// Every day.
        Daily = "DAILY",
        /// Every week.
        Weekly = "WEEKLY",
        /// Every 30 days.
        Monthly = "MONTHLY",
    }
    read = |s| exact(&s.to_ascii_uppercase());
}

/// When a scheduled check runs: one of the named [`Frequency`]s, or every `n` seconds
/// (`schedule.intervalSeconds`, from [`Cadence::MIN_INTERVAL_SECONDS`] to
/// [`Cadence::MAX_INTERVAL_SECONDS`]).
///
/// ```
/// use apidrift_model::{Cadence, Frequency};
///
/// assert_eq!(Cadence::Every(Frequency::Hourly).seconds(), 3600);
/// assert_eq!("INTERVAL 300".parse::<Cadence>(), Ok(Cadence::Interval(300)));
/// assert_eq!(Cadence::Interval(300).to_string(), "INTERVAL 300");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Cadence {
    /// One of the named frequencies.
    Every(Frequency),
    /// Every so many seconds.
    Interval(u32),
}

impl Cadence {
    /// The shortest interval a schedule may have: one minute.
    pub const MIN_INTERVAL_SECONDS: u32 = 60;
    /// The longest interval a schedule may have: 30 days.
    pub const MAX_INTERVAL_SECONDS: u32 = 2_592_000;

    /// The period in seconds (a month is 30 days).
    pub fn seconds(self) -> u64 {
        const HOUR: u64 = 3600;
        match self {
            Cadence::Every(Frequency::Hourly) => HOUR,
            Cadence::Every(Frequency::Daily) => 24 * HOUR,
            Cadence::Every(Frequency::Weekly) => 7 * 24 * HOUR,
            Cadence::Every(Frequency::Monthly) => 30 * 24 * HOUR,
            Cadence::Interval(n) => u64::from(n),
        }
    }
}

/// The stored text: the frequency (`HOURLY`) or `INTERVAL <seconds>`.
impl fmt::Display for Cadence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cadence::Every(freq) => f.write_str(freq.as_str()),
            Cadence::Interval(n) => write!(f, "INTERVAL {n}"),
        }
    }
}

/// Reads what [`Display`](fmt::Display) writes; an interval must be within the limits.
impl std::str::FromStr for Cadence {
    type Err = UnknownValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(n) = s.strip_prefix("INTERVAL ") {
            return n
                .parse::<u32>()
                .ok()
                .filter(|n| {
                    (Cadence::MIN_INTERVAL_SECONDS..=Cadence::MAX_INTERVAL_SECONDS).contains(n)
                })
                .map(Cadence::Interval)
                .ok_or_else(|| UnknownValue {
                    expected: "INTERVAL and a number of seconds from 60 to 2592000".to_owned(),
                });
        }
        s.parse::<Frequency>().map(Cadence::Every)
    }
}

wire_enum! {
    /// A scope of an API token: which routes the token may call.
    pub enum Scope {
        /// Read endpoints and diffs.
        EndpointsRead = "endpoints:read",
        /// Create and change endpoints, which stores credentials.
        EndpointsWrite = "endpoints:write",
        /// Run checks.
        ChecksRun = "checks:run",
        /// Capture baselines and accept diffs.
        BaselinesWrite = "baselines:write",
    }
    read = exact;
}

impl Scope {
    /// Scopes a token gets when none are named: `endpoints:write` is off by default because it is
    /// the only scope able to store credentials.
    pub const DEFAULT: &'static [Scope] = &[Scope::EndpointsRead];
}

wire_enum! {
    /// A role within a workspace. Ordered from weakest to strongest, so `role >= Role::Member`
    /// reads as "member or above":
    ///
    /// ```
    /// use apidrift_model::Role;
    ///
    /// assert!(Role::Admin >= Role::Member && Role::Viewer < Role::Member);
    /// ```
    pub enum Role {
        /// Reads.
        Viewer = "viewer",
        /// Reads, creates endpoints, runs checks.
        Member = "member",
        /// A member who also manages tokens and webhooks and accepts diffs.
        Admin = "admin",
        /// An admin who also changes the workspace's settings.
        Owner = "owner",
    }
    read = exact;
}

wire_enum! {
    /// A workspace plan: how many endpoints and checks a workspace may use.
    ///
    /// ```
    /// use apidrift_model::Plan;
    ///
    /// assert_eq!(Plan::Free.endpoint_limit(), Some(5));
    /// assert!(!Plan::Free.allows_schedules() && Plan::Starter.allows_schedules());
    /// ```
    ///
    /// Non-exhaustive: a later version may add plans. When you `match`, give a `_` arm.
    #[non_exhaustive]
    pub enum Plan {
        /// 5 endpoints, 1,000 checks a month, no schedules.
        Free = "free",
        /// 50 endpoints, 20,000 checks a month.
        Starter = "starter",
        /// 500 endpoints, 200,000 checks a month.
        Pro = "pro",
        /// No limits.
        Enterprise = "enterprise",
    }
    read = exact;
}

impl Plan {
    /// Endpoints a workspace on this plan may hold; `None` is unlimited. An operator may override
    /// it per workspace.
    pub const fn endpoint_limit(self) -> Option<u32> {
        match self {
            Plan::Free => Some(5),
            Plan::Starter => Some(50),
            Plan::Pro => Some(500),
            Plan::Enterprise => None,
        }
    }

    /// Checks per calendar month (UTC); `None` is unlimited. An operator may override it per
    /// workspace.
    pub const fn check_quota(self) -> Option<u32> {
        match self {
            Plan::Free => Some(1_000),
            Plan::Starter => Some(20_000),
            Plan::Pro => Some(200_000),
            Plan::Enterprise => None,
        }
    }

    /// Whether recurring checks may be scheduled (Starter and above).
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
    fn cadence_text_round_trips() {
        let mut all: Vec<Cadence> = Frequency::ALL.iter().map(|f| Cadence::Every(*f)).collect();
        all.extend([Cadence::Interval(60), Cadence::Interval(2_592_000)]);
        for c in all {
            assert_eq!(c.to_string().parse::<Cadence>(), Ok(c));
        }
        assert!("INTERVAL 59".parse::<Cadence>().is_err());
        assert!("INTERVAL 2592001".parse::<Cadence>().is_err());
        assert!("INTERVAL x".parse::<Cadence>().is_err());
        assert!("YEARLY".parse::<Cadence>().is_err());
        assert_eq!(Cadence::Interval(90).seconds(), 90);
        assert_eq!(Cadence::Every(Frequency::Monthly).seconds(), 30 * 86_400);
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
