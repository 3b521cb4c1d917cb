//! Optimistic concurrency of endpoint and workspace-settings edits: the strong `ETag` an endpoint answer carries (its
//! version, quoted) and the `If-Match` a `PATCH` or `DELETE` may send (RFC 9110 §13.1.1, strong
//! comparison).
//!
//! `If-Match` is `*` (any current version: only the endpoint must exist) or a comma-separated
//! list of entity tags. A tag matches when it is strong and its opaque text is the current
//! version; a weak tag (`W/"3"`) never matches, nor does a tag that is not a version. A value that
//! is not a list of entity tags at all (`3` without quotes) is a 400 that says how to write it.

use crate::error::ApiError;
use crate::state::AppState;
use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderValue};

/// The `ETag` of version `version`: `"<version>"`.
pub fn etag(version: i64) -> (header::HeaderName, String) {
    (header::ETAG, format!("\"{version}\""))
}

/// What a request's `If-Match` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// No `If-Match`, or `*`: no version to compare.
    Any,
    /// The versions of the strong tags of the list (possibly none: then nothing matches).
    Versions(Vec<i64>),
}

impl IfMatch {
    /// The expected version when the list names exactly one, else `None`.
    pub fn single(&self) -> Option<i64> {
        match self {
            IfMatch::Versions(v) if v.len() == 1 => v.first().copied(),
            _ => None,
        }
    }
}

/// The request's `If-Match` (several header lines are one list).
pub fn if_match(req: &HttpRequest) -> Result<IfMatch, ApiError> {
    let lines: Vec<&HeaderValue> = req.headers().get_all(header::IF_MATCH).collect();
    if lines.is_empty() {
        return Ok(IfMatch::Any);
    }
    let mut versions = Vec::new();
    let mut any = false;
    let mut named = false;
    for line in lines {
        let text = line.to_str().map_err(|_| invalid())?;
        if text.trim() == "*" {
            any = true;
            continue;
        }
        let tags = parse_list(text)?;
        // An empty If-Match line names no tag: it asks for nothing, like an absent header (a
        // stale version would otherwise be read into a field that says nothing).
        if tags.is_empty() {
            continue;
        }
        named = true;
        versions.extend(tags.into_iter().flatten());
    }
    Ok(if any || !named {
        IfMatch::Any
    } else {
        IfMatch::Versions(versions)
    })
}

/// The version a change of endpoint `id` must find (`None`: any). A list of several versions is
/// resolved against the current one (404 when the endpoint is missing); a list that cannot match
/// it is the 412 of a changed endpoint.
pub async fn expected_version(
    req: &HttpRequest,
    state: &AppState,
    actor: &apidrift_app::Actor,
    id: uuid::Uuid,
) -> Result<Option<i64>, ApiError> {
    let versions = match if_match(req)? {
        IfMatch::Any => return Ok(None),
        m @ IfMatch::Versions(_) if m.single().is_some() => return Ok(m.single()),
        IfMatch::Versions(v) => v,
    };
    let current = state.service.endpoint_version(actor, id).await?;
    if versions.contains(&current) {
        Ok(Some(current))
    } else {
        Err(apidrift_app::ServiceError::Changed { what: "endpoint" }.into())
    }
}

/// The version a change of the actor's workspace settings must find (`None`: any), resolved as
/// [`expected_version`] resolves an endpoint's.
pub async fn expected_workspace_version(
    req: &HttpRequest,
    state: &AppState,
    actor: &apidrift_app::Actor,
) -> Result<Option<i64>, ApiError> {
    let versions = match if_match(req)? {
        IfMatch::Any => return Ok(None),
        m @ IfMatch::Versions(_) if m.single().is_some() => return Ok(m.single()),
        IfMatch::Versions(v) => v,
    };
    let current = state.service.workspace_version(actor).await?;
    if versions.contains(&current) {
        Ok(Some(current))
    } else {
        Err(apidrift_app::ServiceError::Changed { what: "workspace" }.into())
    }
}

fn invalid() -> ApiError {
    ApiError::BadRequest(
        "If-Match: must be * or a comma-separated list of entity tags such as \"3\" (the ETag of the endpoint, quotes included)"
            .into(),
    )
}

/// The tags of an entity-tag list: `Some(version)` for a strong tag holding a version, `None` for
/// a weak tag or one that holds something else. Empty elements are allowed, as in every list.
fn parse_list(text: &str) -> Result<Vec<Option<i64>>, ApiError> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return Ok(out);
        }
        let weak = rest.starts_with("W/");
        if weak {
            rest = &rest[2..];
        }
        let Some(open) = rest.strip_prefix('"') else {
            return Err(invalid());
        };
        let Some(close) = open.find('"') else {
            return Err(invalid());
        };
        let (opaque, after) = open.split_at(close);
        // etagc: %x21 / %x23-7E / obs-text (the header was visible ASCII, so no obs-text here).
        if !opaque
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x7e).contains(&b))
        {
            return Err(invalid());
        }
        let version = if weak {
            None
        } else {
            // Only the digits of a version compare equal to it ("03" or "+3" are other tags).
            opaque
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| opaque.parse::<i64>().ok())
                .flatten()
                .filter(|v| v.to_string() == opaque)
        };
        out.push(version);
        rest = after.get(1..).unwrap_or("").trim_start_matches([' ', '\t']);
        if !(rest.is_empty() || rest.starts_with(',')) {
            return Err(invalid());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn parsed(values: &[&str]) -> Result<IfMatch, String> {
        let mut req = TestRequest::default();
        for v in values {
            req = req.append_header((header::IF_MATCH, *v));
        }
        if_match(&req.to_http_request()).map_err(|e| e.to_string())
    }

    #[test]
    fn absent_and_star_match_any_version() {
        assert_eq!(parsed(&[]), Ok(IfMatch::Any));
        // An empty value names no tag: as if absent.
        assert_eq!(parsed(&[""]), Ok(IfMatch::Any));
        assert_eq!(parsed(&[" , "]), Ok(IfMatch::Any));
        assert_eq!(parsed(&["*"]), Ok(IfMatch::Any));
        assert_eq!(parsed(&[" * "]), Ok(IfMatch::Any));
    }

    #[test]
    fn strong_tags_give_versions() {
        assert_eq!(parsed(&["\"3\""]), Ok(IfMatch::Versions(vec![3])));
        assert_eq!(parsed(&["\"3\""]).map(|m| m.single()), Ok(Some(3)));
        assert_eq!(
            parsed(&["\"1\", \"7\",\"12\""]),
            Ok(IfMatch::Versions(vec![1, 7, 12]))
        );
        assert_eq!(
            parsed(&["\"1\"", "\"2\""]),
            Ok(IfMatch::Versions(vec![1, 2]))
        );
    }

    #[test]
    fn weak_and_foreign_tags_never_match() {
        assert_eq!(parsed(&["W/\"3\""]), Ok(IfMatch::Versions(vec![])));
        assert_eq!(parsed(&["W/\"3\", \"4\""]), Ok(IfMatch::Versions(vec![4])));
        assert_eq!(
            parsed(&["\"abc\", \"03\", \"+3\", \"\""]),
            Ok(IfMatch::Versions(vec![]))
        );
        assert_eq!(parsed(&["\"a,b\""]), Ok(IfMatch::Versions(vec![])));
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in ["3", "\"3", "\"3\" x", "W/3", "'3'", "\"3\"\"4\"", "null"] {
            let got = parsed(&[bad]);
            assert!(
                got.as_ref().is_err_and(|e| e.starts_with("If-Match:")),
                "{bad}: {got:?}"
            );
        }
    }

    #[test]
    fn etag_is_strong_and_quoted() {
        assert_eq!(etag(5), (header::ETAG, "\"5\"".to_owned()));
    }
}
