//! Snapshot of `/openapi.json`: any change to the contract shows up as a diff of
//! `crates/api/openapi.json`. After an intended change, regenerate it with
//! `APIDRIFT_UPDATE_OPENAPI=1 cargo nextest run -p apidrift-api --test openapi` and review the diff.

use serde_json::Value;
use std::error::Error;
use std::path::PathBuf;

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json")
}

#[test]
fn openapi_document_matches_the_snapshot() -> Result<(), Box<dyn Error>> {
    let doc = apidrift_api::openapi::document();
    let text = format!("{}\n", serde_json::to_string_pretty(&doc)?);
    let path = snapshot_path();
    if std::env::var_os("APIDRIFT_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &text)?;
    }
    let stored = std::fs::read_to_string(&path)?;
    assert!(
        stored == text,
        "openapi.json changed; rerun with APIDRIFT_UPDATE_OPENAPI=1 and review the diff"
    );
    Ok(())
}

#[test]
fn openapi_document_states_what_the_spec_requires() -> Result<(), Box<dyn Error>> {
    let doc = apidrift_api::openapi::document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let expected: &[(&str, &str, &str, &[u16])] = &[
        (
            "/api/v1/endpoints",
            "get",
            "endpoints:read",
            &[200, 400, 401, 403, 429],
        ),
        (
            "/api/v1/endpoints",
            "post",
            "endpoints:write",
            &[200, 201, 400, 401, 402, 403, 429, 503],
        ),
        (
            "/api/v1/endpoints/{id}",
            "get",
            "endpoints:read",
            &[200, 401, 403, 404, 429],
        ),
        (
            "/api/v1/diffs",
            "get",
            "endpoints:read",
            &[200, 400, 401, 403, 429],
        ),
        (
            "/api/v1/diffs/{id}",
            "get",
            "endpoints:read",
            &[200, 401, 403, 404, 429],
        ),
        (
            "/v1/endpoints",
            "post",
            "endpoints:write",
            &[200, 201, 400, 401, 402, 403, 429, 503],
        ),
        (
            "/v1/endpoints/{id}/diffs",
            "get",
            "endpoints:read",
            &[200, 401, 403, 404, 429],
        ),
    ];
    for (path, method, scope, statuses) in expected {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} missing");
        assert_eq!(op["x-apidrift-scope"], *scope, "{method} {path}");
        assert_eq!(op["security"][0]["bearer"][0], *scope, "{method} {path}");
        for status in *statuses {
            let response = &op["responses"][status.to_string()];
            assert!(
                response["content"]["application/json"]["schema"].is_object(),
                "{method} {path} {status} has no JSON schema"
            );
        }
    }
    let props = &doc["components"]["schemas"]["EndpointCreate"]["properties"];
    assert_eq!(
        props["ignorePaths"]["x-apidrift-extension"],
        Value::Bool(true)
    );
    assert_eq!(props["headers"]["x-apidrift-extension"], Value::Bool(true));
    assert_eq!(
        doc["paths"]["/v1/endpoints/{id}/diffs"]["get"]["x-apidrift-extension"],
        Value::Bool(true)
    );
    Ok(())
}
