//! Reading a baseline or current document: a snapshot file
//! `{"apidriftSnapshot": 1, "status": 200, "headers": {...}, "body": <JSON or null>,
//! "bodyText"?: "<non-JSON body>", "volatilePaths"?: ["$.requestId", …]}` or any other JSON
//! document, taken as a bare body.

use crate::node::Json;
use crate::parse::{ParseError, parse};
use crate::{Body, Input, TextBody};

/// Why a document cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The text is not JSON.
    #[error("invalid JSON: {0}")]
    Json(#[from] ParseError),
    /// The text is a snapshot file (it has [`SNAPSHOT_KEY`]) with a member that is wrong; the
    /// message says which.
    #[error("invalid snapshot file: {0}")]
    Snapshot(String),
}

/// The member that marks a snapshot file (`{"apidriftSnapshot": 1, ...}`).
pub const SNAPSHOT_KEY: &str = "apidriftSnapshot";

/// Parses a document and, when it is a snapshot file, splits it into status, headers and body;
/// any other JSON document is a bare body ([`Input::bare`]).
///
/// A snapshot file is what `apidrift snapshot` writes: `{"apidriftSnapshot": 1, "status": 200,
/// "headers": {...}, "body": <JSON or null>}`, with `"bodyText"` instead of `"body"` for a
/// non-JSON body, and `"volatilePaths"` (an array of change paths, read into
/// [`Input::volatile_paths`]) when it was taken from several samples.
///
/// ```
/// use apidrift_diff::read_document;
/// let input = read_document(r#"{"apidriftSnapshot": 1, "status": 200, "headers": {}, "body": {"a": 1}}"#)?;
/// assert_eq!(input.status, Some(200));
/// assert_eq!(read_document(r#"{"a": 1}"#)?.status, None);
/// # Ok::<(), apidrift_diff::InputError>(())
/// ```
pub fn read_document(text: &str) -> Result<Input<Json<'_>>, InputError> {
    let doc = parse(text)?;
    match doc {
        Json::Object(members) if members.iter().any(|(k, _)| k == SNAPSHOT_KEY) => {
            snapshot(members)
        }
        body => Ok(Input::bare(body)),
    }
}

fn snapshot<'a>(
    members: Box<[(std::borrow::Cow<'a, str>, Json<'a>)]>,
) -> Result<Input<Json<'a>>, InputError> {
    let fail = |m: &str| InputError::Snapshot(m.to_owned());
    let mut status = None;
    let mut headers: Option<Vec<(String, String)>> = None;
    let mut body = None;
    let mut body_text = None;
    let mut volatile = Vec::new();
    for (key, value) in members.into_vec() {
        match key.as_ref() {
            SNAPSHOT_KEY if value != Json::Number("1") => {
                return Err(fail("`apidriftSnapshot` must be 1"));
            }
            "status" => match value {
                Json::Number(t) => match t.parse::<u16>() {
                    Ok(s) if (100..=599).contains(&s) => status = Some(s),
                    _ => return Err(fail("`status` must be an HTTP status between 100 and 599")),
                },
                Json::Null => {}
                _ => return Err(fail("`status` must be an HTTP status between 100 and 599")),
            },
            "headers" => match value {
                Json::Object(pairs) => {
                    let headers = headers.get_or_insert_with(Vec::new);
                    for (name, v) in pairs.into_vec() {
                        match v {
                            Json::String(s) => {
                                headers.push((name.to_ascii_lowercase(), s.into_owned()))
                            }
                            Json::Array(items) => {
                                let mut joined = Vec::new();
                                for item in items.into_vec() {
                                    match item {
                                        Json::String(s) => joined.push(s.into_owned()),
                                        _ => return Err(fail("header values must be strings")),
                                    }
                                }
                                headers.push((name.to_ascii_lowercase(), joined.join(", ")));
                            }
                            _ => return Err(fail("header values must be strings")),
                        }
                    }
                }
                Json::Null => {}
                _ => return Err(fail("`headers` must be an object of strings")),
            },
            "body" => body = Some(value),
            "bodyText" => match value {
                Json::String(s) => body_text = Some(s),
                Json::Null => {}
                _ => return Err(fail("`bodyText` must be a string")),
            },
            "volatilePaths" => {
                let wrong = || fail("`volatilePaths` must be an array of path strings");
                match value {
                    Json::Array(items) => {
                        for item in items.into_vec() {
                            match item {
                                Json::String(p) => volatile.push(p.into_owned()),
                                _ => return Err(wrong()),
                            }
                        }
                    }
                    Json::Null => {}
                    _ => return Err(wrong()),
                }
            }
            _ => {}
        }
    }
    let body = match (body_text, body) {
        (Some(text), _) => Body::Text(TextBody::of(text.as_bytes())),
        (None, Some(json)) => Body::Json(json),
        (None, None) => Body::Absent,
    };
    Ok(Input {
        status,
        headers,
        body,
        failure: None,
        volatile_paths: volatile,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_and_bare_bodies() -> Result<(), InputError> {
        let s = read_document(
            r#"{"apidriftSnapshot":1,"status":200,"headers":{"Content-Type":"application/json"},"body":{"a":1}}"#,
        )?;
        assert_eq!(s.status, Some(200));
        assert_eq!(
            s.headers,
            Some(vec![("content-type".into(), "application/json".into())])
        );
        assert!(matches!(s.body, Body::Json(Json::Object(_))));
        let t = read_document(
            r#"{"apidriftSnapshot":1,"status":200,"body":null,"bodyText":"<html>"}"#,
        )?;
        assert_eq!(t.body, Body::Text(TextBody::of(b"<html>")));
        let v = read_document(
            r#"{"apidriftSnapshot":1,"status":200,"body":{"a":1},"volatilePaths":["$.a"]}"#,
        )?;
        assert_eq!(v.volatile_paths, vec!["$.a".to_owned()]);
        assert_eq!(s.volatile_paths, Vec::<String>::new());
        assert!(matches!(
            read_document(r#"{"apidriftSnapshot":1,"body":{},"volatilePaths":[1]}"#),
            Err(InputError::Snapshot(m)) if m.contains("volatilePaths")
        ));
        let bare = read_document(r#"{"status":200}"#)?;
        assert_eq!(bare.status, None);
        assert_eq!(bare.headers, None);
        // A snapshot without headers does not compare headers.
        assert_eq!(
            read_document(r#"{"apidriftSnapshot":1,"status":200,"body":1}"#)?.headers,
            None
        );
        assert!(read_document(r#"{"apidriftSnapshot":2,"status":200}"#).is_err());
        assert!(read_document(r#"{"apidriftSnapshot":1,"status":"x"}"#).is_err());
        assert!(read_document(r#"{"apidriftSnapshot":1,"status":200,"headers":{"a":1}}"#).is_err());
        Ok(())
    }
}
