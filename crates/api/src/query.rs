//! Query parameters (D5): parsed by hand after authentication, so that a malformed parameter is a
//! 400 naming it and comes after 401/403/429 in the order of checks. Unknown parameters are
//! ignored; a parameter given twice is refused.

use crate::error::ApiError;
use actix_web::web;
use apidrift_app::read::{DiffFilter, EndpointFilter, PageRequest};
use apidrift_model::{Health, timestamp};
use time::OffsetDateTime;
use uuid::Uuid;

/// Default and largest page size (D5).
pub const DEFAULT_LIMIT: u32 = 25;
pub const MAX_LIMIT: u32 = 100;

/// The decoded query string.
#[derive(Debug)]
pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn parse(query: &str) -> Result<Self, ApiError> {
        web::Query::<Vec<(String, String)>>::from_query(query)
            .map(|q| Params(q.into_inner()))
            .map_err(|_| ApiError::BadRequest("query string is not valid form encoding".into()))
    }

    /// The value of `name`, when given once.
    pub fn one(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut found = self.0.iter().filter(|(k, _)| k == name);
        let first = found.next();
        if found.next().is_some() {
            return Err(ApiError::BadRequest(format!(
                "{name}: given more than once"
            )));
        }
        Ok(first.map(|(_, v)| v.as_str()))
    }

    /// `limit` (default 25, below 1 → 400, above 100 → 100) and `offset` (default 0, below 0 →
    /// 400).
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        let limit = match self.one("limit")? {
            None => DEFAULT_LIMIT,
            Some(text) => {
                let n: i64 = text.trim().parse().map_err(|_| {
                    ApiError::BadRequest("limit: must be an integer from 1 to 100".into())
                })?;
                if n < 1 {
                    return Err(ApiError::BadRequest("limit: must be at least 1".into()));
                }
                u32::try_from(n.min(i64::from(MAX_LIMIT))).unwrap_or(MAX_LIMIT)
            }
        };
        let offset = match self.one("offset")? {
            None => 0,
            Some(text) => {
                let n: i64 = text.trim().parse().map_err(|_| {
                    ApiError::BadRequest("offset: must be an integer of at least 0".into())
                })?;
                u64::try_from(n)
                    .map_err(|_| ApiError::BadRequest("offset: must be at least 0".into()))?
            }
        };
        Ok(PageRequest { limit, offset })
    }

    /// `health` (exact lowercase) and `environment`.
    pub fn endpoint_filter(&self) -> Result<EndpointFilter, ApiError> {
        let health = match self.one("health")? {
            None => None,
            Some(text) => Some(
                text.parse::<Health>()
                    .map_err(|e| ApiError::BadRequest(format!("health: {e}")))?,
            ),
        };
        let environment = self.one("environment")?.map(str::to_owned);
        if let Some(env) = &environment {
            apidrift_model::validate::refuse_nul("environment", env)
                .map_err(ApiError::BadRequest)?;
        }
        Ok(EndpointFilter {
            health,
            environment,
        })
    }

    /// `endpointId` (when `with_endpoint`), `since` and `breakingOnly`.
    pub fn diff_filter(&self, with_endpoint: bool) -> Result<DiffFilter, ApiError> {
        let endpoint_id = match self.one("endpointId")? {
            Some(text) if with_endpoint => Some(
                Uuid::parse_str(text.trim())
                    .map_err(|_| ApiError::BadRequest("endpointId: must be a uuid".into()))?,
            ),
            _ => None,
        };
        let since = match self.one("since")? {
            None => None,
            Some(text) => Some(parse_since(text)?),
        };
        let breaking_only = match self.one("breakingOnly")? {
            None => false,
            Some("true") => true,
            Some(_) => {
                return Err(ApiError::BadRequest(
                    "breakingOnly: the only allowed value is true".into(),
                ));
            }
        };
        Ok(DiffFilter {
            endpoint_id,
            since,
            breaking_only,
        })
    }
}

/// An RFC 3339 date-time. A `+` offset sent unencoded arrives as a space; it is read back as `+`.
fn parse_since(text: &str) -> Result<OffsetDateTime, ApiError> {
    timestamp::parse(text)
        .or_else(|e| {
            if text.contains(' ') {
                timestamp::parse(&text.replace(' ', "+"))
            } else {
                Err(e)
            }
        })
        .map_err(|_| {
            ApiError::BadRequest(
                "since: must be an RFC 3339 date-time such as 2026-11-21T07:57:09Z".into(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<impl std::fmt::Debug, ApiError>) -> String {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn pagination_edges() -> Result<(), ApiError> {
        assert_eq!(Params::parse("")?.page()?, PageRequest::default());
        assert_eq!(Params::parse("limit=101")?.page()?.limit, 100);
        assert_eq!(Params::parse("limit=1&offset=7")?.page()?.offset, 7);
        assert_eq!(
            err(Params::parse("limit=0")?.page()),
            "limit: must be at least 1"
        );
        assert_eq!(
            err(Params::parse("limit=-1")?.page()),
            "limit: must be at least 1"
        );
        assert!(err(Params::parse("limit=abc")?.page()).starts_with("limit:"));
        assert_eq!(
            err(Params::parse("offset=-1")?.page()),
            "offset: must be at least 0"
        );
        assert!(err(Params::parse("offset=x")?.page()).starts_with("offset:"));
        assert_eq!(
            err(Params::parse("limit=1&limit=2")?.page()),
            "limit: given more than once"
        );
        Ok(())
    }

    #[test]
    fn filters() -> Result<(), ApiError> {
        let f = Params::parse("health=breaking&environment=prod")?.endpoint_filter()?;
        assert_eq!(f.health, Some(Health::Breaking));
        assert_eq!(f.environment.as_deref(), Some("prod"));
        assert!(err(Params::parse("health=HEALTHY")?.endpoint_filter()).starts_with("health:"));
        let f = Params::parse("since=2026-11-21T08:00:00+01:00&breakingOnly=true")?
            .diff_filter(true)?;
        assert!(f.breaking_only);
        assert_eq!(f.since, Some(time::macros::datetime!(2026-11-21 07:00 UTC)));
        let f = Params::parse("since=2026-11-21T08:00:00%2B01:00")?.diff_filter(true)?;
        assert!(f.since.is_some());
        assert!(
            err(Params::parse("breakingOnly=false")?.diff_filter(true))
                .starts_with("breakingOnly:")
        );
        assert!(err(Params::parse("since=yesterday")?.diff_filter(true)).starts_with("since:"));
        assert!(err(Params::parse("endpointId=42")?.diff_filter(true)).starts_with("endpointId:"));
        Ok(())
    }
}
