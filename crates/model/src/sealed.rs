//! The plaintext documents that are sealed (encrypted) at rest for an endpoint: the service's API
//! writes them when an endpoint is created, its check pipeline reads them before each fetch. An
//! integrator rarely needs them; they are public so that both sides agree on one format. They use
//! the request's own spelling:
//!
//! * the credential: the `auth` block as validated, e.g.
//!   `{"type":"bearer","token":"…"}`, `{"type":"api_key","header":"X-API-Key","key":"…"}`,
//!   `{"type":"basic","username":"…","password":"…"}`, `{"type":"custom","header":"…","value":"…"}`;
//!   nothing is sealed for type `none`;
//! * the extra request headers: a JSON object of header name → value (keys sorted).
//!
//! The returned buffers are zeroised on drop; errors never carry a secret.
//!
//! ```
//! use apidrift_model::SecretString;
//! use apidrift_model::sealed::{credential_from_json, credential_to_json};
//! use apidrift_model::validate::Credential;
//!
//! let bearer = Credential::Bearer { token: SecretString::new("t0ken") };
//! let bytes = credential_to_json(&bearer).ok_or("nothing to seal")?;
//! assert_eq!(&bytes[..], br#"{"token":"t0ken","type":"bearer"}"#);
//! assert_eq!(credential_from_json(&bytes)?, bearer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::enums::AuthType;
use crate::secret::SecretString;
use crate::validate::{Credential, ExtraHeader};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

/// The sealed document of a credential; `None` for [`Credential::None`].
pub fn credential_to_json(credential: &Credential) -> Option<Zeroizing<Vec<u8>>> {
    let mut map = Map::new();
    let mut put = |k: &str, v: &str| {
        map.insert(k.to_owned(), Value::String(v.to_owned()));
    };
    put("type", credential.auth_type().as_str());
    match credential {
        Credential::None => return None,
        Credential::Bearer { token } | Credential::Oauth { token } => put("token", token.expose()),
        Credential::ApiKey { header, key } => {
            put("header", header);
            put("key", key.expose());
        }
        Credential::Basic { username, password } => {
            put("username", username.expose());
            put("password", password.expose());
        }
        Credential::Custom { header, value } => {
            put("header", header);
            put("value", value.expose());
        }
    }
    let value = Value::Object(map);
    let bytes = Zeroizing::new(value.to_string().into_bytes());
    scrub(value);
    Some(bytes)
}

/// Reads [`credential_to_json`] back. The error names the problem, never a value.
pub fn credential_from_json(bytes: &[u8]) -> Result<Credential, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|_| "sealed credential is not JSON".to_owned())?;
    let text = |k: &str| -> Result<String, String> {
        value
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("sealed credential lacks {k}"))
    };
    let secret = |k: &str| text(k).map(SecretString::new);
    let kind: AuthType = text("type")?
        .parse()
        .map_err(|_| "sealed credential has an unknown type".to_owned())?;
    let credential = match kind {
        AuthType::None => Credential::None,
        AuthType::Bearer => Credential::Bearer {
            token: secret("token")?,
        },
        AuthType::Oauth => Credential::Oauth {
            token: secret("token")?,
        },
        AuthType::ApiKey => Credential::ApiKey {
            header: text("header")?,
            key: secret("key")?,
        },
        AuthType::Basic => Credential::Basic {
            username: secret("username")?,
            password: secret("password")?,
        },
        AuthType::Custom => Credential::Custom {
            header: text("header")?,
            value: secret("value")?,
        },
    };
    scrub(value);
    Ok(credential)
}

/// The sealed document of the extra headers; `None` when there are none.
pub fn headers_to_json(headers: &[ExtraHeader]) -> Option<Zeroizing<Vec<u8>>> {
    if headers.is_empty() {
        return None;
    }
    let map: Map<String, Value> = headers
        .iter()
        .map(|h| (h.name.clone(), Value::String(h.value.expose().to_owned())))
        .collect();
    let value = Value::Object(map);
    let bytes = Zeroizing::new(value.to_string().into_bytes());
    scrub(value);
    Some(bytes)
}

/// Reads [`headers_to_json`] back.
pub fn headers_from_json(bytes: &[u8]) -> Result<Vec<ExtraHeader>, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|_| "sealed headers are not JSON".to_owned())?;
    let Value::Object(map) = &value else {
        return Err("sealed headers are not a JSON object".into());
    };
    let headers = map
        .iter()
        .map(|(name, v)| {
            v.as_str()
                .map(|s| ExtraHeader {
                    name: name.clone(),
                    value: SecretString::new(s),
                })
                .ok_or_else(|| format!("sealed header {name} is not a string"))
        })
        .collect();
    scrub(value);
    headers
}

/// Overwrites the strings of a transient JSON value before it is dropped.
fn scrub(value: Value) {
    use zeroize::Zeroize as _;
    match value {
        Value::String(mut s) => s.zeroize(),
        Value::Array(items) => items.into_iter().for_each(scrub),
        Value::Object(map) => map.into_iter().for_each(|(mut k, v)| {
            k.zeroize();
            scrub(v);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_round_trip() -> Result<(), String> {
        let all = [
            Credential::Bearer {
                token: SecretString::new("t"),
            },
            Credential::Oauth {
                token: SecretString::new("o"),
            },
            Credential::ApiKey {
                header: "X-API-Key".into(),
                key: SecretString::new("k"),
            },
            Credential::Basic {
                username: SecretString::new("u"),
                password: SecretString::new("p"),
            },
            Credential::Custom {
                header: "X-Sig".into(),
                value: SecretString::new("v"),
            },
        ];
        for c in all {
            let bytes = credential_to_json(&c).ok_or("nothing sealed")?;
            assert_eq!(credential_from_json(&bytes)?, c);
        }
        assert!(credential_to_json(&Credential::None).is_none());
        let bytes = credential_to_json(&Credential::Bearer {
            token: SecretString::new("abc"),
        })
        .ok_or("nothing sealed")?;
        assert_eq!(&bytes[..], br#"{"token":"abc","type":"bearer"}"#);
        Ok(())
    }

    #[test]
    fn headers_round_trip() -> Result<(), String> {
        let h = vec![ExtraHeader {
            name: "X-Tenant".into(),
            value: SecretString::new("42"),
        }];
        let bytes = headers_to_json(&h).ok_or("nothing sealed")?;
        assert_eq!(headers_from_json(&bytes)?, h);
        assert!(headers_to_json(&[]).is_none());
        assert!(headers_from_json(b"[1]").is_err());
        Ok(())
    }

    #[test]
    fn errors_carry_no_secret() {
        let err = credential_from_json(br#"{"type":"bearer","tok":"CANARY"}"#).err();
        assert_eq!(err.as_deref(), Some("sealed credential lacks token"));
    }
}
