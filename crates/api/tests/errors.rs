//! In-process tests of `create_app` (actix_web::test, no socket): how a use case's failure
//! (`ServiceError`) and a request the API refuses itself become a status and a `{"error": …}`
//! body. One test per class of failure: 400 naming the field, 402, 404 for another workspace's
//! id, 503 without a sealing key, and the 415/413/405 envelope.

use actix_web::body::MessageBody;
use actix_web::dev::{Service as _, ServiceResponse};
use actix_web::http::{Method, StatusCode, header};
use actix_web::test::{self, TestRequest};
use apidrift_api::{AppState, RateLimits, create_app};
use apidrift_app::Service;
use apidrift_app::{Actor, MintToken};
use apidrift_model::net::AllowList;
use apidrift_model::{EndpointSettings, Plan, Role, Scope};
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewEndpointRow, NewWorkspace, SealedSecrets, Store, new_id};
use apidrift_store_sqlite::SqliteStore;
use serde_json::{Value, json};
use std::error::Error;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

type TestResult = Result<(), Box<dyn Error>>;

/// A database with two workspaces, a service over it (with or without a key) and an owner token
/// of each workspace.
struct World {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    service: Arc<Service>,
    /// Workspace A (limit: `limit`) and its token.
    a: Uuid,
    token_a: String,
    /// Workspace B.
    b: Uuid,
}

async fn world(with_key: bool, limit: Option<u32>) -> Result<World, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("api.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&path.to_string_lossy()).await?);
    let mut ids = Vec::new();
    for (name, limit) in [("a", limit), ("b", None)] {
        let ws = store
            .create_workspace(NewWorkspace {
                id: new_id(),
                name: name.into(),
                plan: Plan::Enterprise,
                endpoint_limit: limit,
                check_quota: None,
                created_at: OffsetDateTime::now_utc(),
            })
            .await?;
        ids.push(ws.id);
    }
    let keys = if with_key {
        Some(KeyRing::new(SecretKey::generate()?, Vec::new())?)
    } else {
        None
    };
    let service = Arc::new(Service::new(store.clone(), keys, AllowList::default())?);
    let token = service
        .mint_token(
            &Actor::operator(ids[0]),
            MintToken {
                name: "test".into(),
                scopes: Scope::ALL.to_vec(),
                role: Role::Owner,
                expires_in_days: None,
            },
        )
        .await?;
    Ok(World {
        _dir: dir,
        store,
        service,
        a: ids[0],
        token_a: token.expose().to_owned(),
        b: ids[1],
    })
}

/// An endpoint stored directly (no credentials) in workspace `ws`.
async fn endpoint_in(store: &dyn Store, ws: Uuid) -> Result<Uuid, Box<dyn Error>> {
    let id = new_id();
    store
        .create_endpoints(
            ws,
            vec![NewEndpointRow {
                id,
                settings: EndpointSettings {
                    diff_mode: apidrift_model::DiffMode::Full,
                    timeout_ms: 5000,
                    ..EndpointSettings::new("e", "https://api.example.com/users")
                },
                secrets: SealedSecrets::none(),
                response_contract: None,
                created_at: OffsetDateTime::now_utc(),
            }],
        )
        .await?;
    Ok(id)
}

/// Sends `req` to a fresh app over the world's service.
async fn send(w: &World, req: TestRequest) -> ServiceResponse<impl MessageBody> {
    let state = AppState::new(w.service.clone(), RateLimits::default());
    let doc = Arc::new(apidrift_api::openapi::document_bytes());
    let app = test::init_service(create_app(state, doc)).await;
    let req = req
        .insert_header((header::AUTHORIZATION, format!("Bearer {}", w.token_a)))
        .to_request();
    match app.call(req).await {
        Ok(res) => res,
        Err(e) => panic!("the app failed instead of answering: {e}"),
    }
}

/// The status and the `error` text of an answer, after checking that the body is exactly
/// `{"error": "<text>"}` with the JSON content type.
async fn error_of(
    res: ServiceResponse<impl MessageBody>,
) -> Result<(StatusCode, String), Box<dyn Error>> {
    let status = res.status();
    let content_type = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert_eq!(content_type, "application/json", "status {status}");
    let body: Value = serde_json::from_slice(&test::read_body(res).await)?;
    let object = body.as_object().ok_or("the body is not a JSON object")?;
    assert_eq!(object.len(), 1, "only `error`: {body}");
    let text = object
        .get("error")
        .and_then(Value::as_str)
        .ok_or("no error text")?;
    Ok((status, text.to_owned()))
}

fn post_json(path: &str, body: &Value) -> TestRequest {
    TestRequest::post().uri(path).set_json(body)
}

#[actix_web::test]
async fn invalid_input_is_400_naming_the_field() -> TestResult {
    let w = world(true, None).await?;
    let res = send(&w, post_json("/v1/webhooks", &json!({ "url": 5 }))).await;
    assert_eq!(
        error_of(res).await?,
        (StatusCode::BAD_REQUEST, "url: must be a string".to_owned())
    );
    let res = send(
        &w,
        post_json(
            "/v1/webhooks",
            &json!({ "url": "https://hooks.example.com/x", "minSeverity": "loud" }),
        ),
    )
    .await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::BAD_REQUEST,
            "minSeverity: one of info, warning, breaking".to_owned()
        )
    );
    // A body with no entries is refused as a whole (D6).
    let res = send(&w, post_json("/api/v1/endpoints", &json!([]))).await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::BAD_REQUEST,
            "request body contains no endpoints".to_owned()
        )
    );
    // A check of an endpoint without a baseline: the pipeline's refusal, 400.
    let id = endpoint_in(w.store.as_ref(), w.a).await?;
    let res = send(
        &w,
        TestRequest::post().uri(&format!("/api/v1/endpoints/{id}/check")),
    )
    .await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::BAD_REQUEST,
            "no baseline has been captured for this endpoint yet; capture one first with \
             POST /api/v1/endpoints/{id}/baseline (or apidrift baseline capture)"
                .to_owned()
        )
    );
    Ok(())
}

#[actix_web::test]
async fn a_full_plan_is_402() -> TestResult {
    let w = world(true, Some(1)).await?;
    endpoint_in(w.store.as_ref(), w.a).await?;
    let entry = json!({ "name": "users", "url": "https://api.example.com/users" });
    for path in ["/api/v1/endpoints", "/v1/endpoints"] {
        let res = send(&w, post_json(path, &entry)).await;
        assert_eq!(
            error_of(res).await?,
            (
                StatusCode::PAYMENT_REQUIRED,
                "workspace plan endpoint limit reached (1 endpoints)".to_owned()
            ),
            "{path}"
        );
    }
    assert_eq!(w.store.count_endpoints(w.a).await?, 1);
    Ok(())
}

#[actix_web::test]
async fn another_workspaces_ids_are_404() -> TestResult {
    let w = world(true, None).await?;
    let theirs = endpoint_in(w.store.as_ref(), w.b).await?;
    let not_found = (StatusCode::NOT_FOUND, "not found".to_owned());
    let requests = [
        TestRequest::get().uri(&format!("/api/v1/endpoints/{theirs}")),
        TestRequest::post().uri(&format!("/api/v1/endpoints/{theirs}/check")),
        TestRequest::post().uri(&format!("/v1/endpoints/{theirs}/baseline")),
        TestRequest::get().uri(&format!("/v1/endpoints/{theirs}/diffs")),
        TestRequest::post().uri(&format!("/api/v1/diffs/{theirs}/accept")),
        TestRequest::delete().uri(&format!("/v1/webhooks/{theirs}")),
    ];
    for req in requests {
        let res = send(&w, req).await;
        assert_eq!(error_of(res).await?, not_found);
    }
    // The row is untouched.
    let ep = w.store.get_endpoint(w.b, theirs).await?.ok_or("gone")?;
    assert_eq!(ep.baseline_version, None);
    Ok(())
}

#[actix_web::test]
async fn without_a_key_sealing_is_503_after_404() -> TestResult {
    let w = world(false, None).await?;
    let entry = json!({ "name": "users", "url": "https://api.example.com/users" });
    let res = send(&w, post_json("/api/v1/endpoints", &entry)).await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "ENDPOINT_SECRET_KEY is not configured: credentials cannot be sealed".to_owned()
        )
    );
    let res = send(
        &w,
        post_json(
            "/v1/webhooks",
            &json!({ "url": "https://hooks.example.com/x" }),
        ),
    )
    .await;
    assert_eq!(error_of(res).await?.0, StatusCode::SERVICE_UNAVAILABLE);
    // An endpoint of this workspace: 503; one of another workspace: 404 first (D4 order).
    let ours = endpoint_in(w.store.as_ref(), w.a).await?;
    let theirs = endpoint_in(w.store.as_ref(), w.b).await?;
    let res = send(
        &w,
        TestRequest::post().uri(&format!("/api/v1/endpoints/{ours}/check")),
    )
    .await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "ENDPOINT_SECRET_KEY is not configured, so stored credentials cannot be opened"
                .to_owned()
        )
    );
    let res = send(
        &w,
        TestRequest::post().uri(&format!("/v1/endpoints/{theirs}/baseline")),
    )
    .await;
    assert_eq!(error_of(res).await?.0, StatusCode::NOT_FOUND);
    assert_eq!(
        w.store.count_endpoints(w.a).await?,
        1,
        "nothing was created"
    );
    Ok(())
}

#[actix_web::test]
async fn media_type_size_and_method_share_the_envelope() -> TestResult {
    let w = world(true, None).await?;
    let res = send(
        &w,
        TestRequest::post()
            .uri("/api/v1/endpoints")
            .insert_header((header::CONTENT_TYPE, "text/plain"))
            .set_payload("name=users"),
    )
    .await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json".to_owned()
        )
    );
    let big = vec![b' '; apidrift_api::MAX_BODY_BYTES + 1];
    let res = send(
        &w,
        TestRequest::post()
            .uri("/api/v1/endpoints")
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(big),
    )
    .await;
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body larger than {} bytes",
                apidrift_api::MAX_BODY_BYTES
            )
        )
    );
    let res = send(
        &w,
        TestRequest::default()
            .method(Method::DELETE)
            .uri("/api/v1/endpoints"),
    )
    .await;
    assert_eq!(
        res.headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok()),
        Some("GET, POST")
    );
    assert_eq!(
        error_of(res).await?,
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed".to_owned()
        )
    );
    Ok(())
}

/// RFC 9110 §11.1: the authentication scheme is case-insensitive. `bearer` and `BEARER` are
/// accepted by the API's token extractor and by `GET /metrics`; another scheme is 401.
#[actix_web::test]
async fn the_bearer_scheme_is_case_insensitive() -> TestResult {
    let w = world(true, None).await?;
    let state = AppState::new(w.service.clone(), RateLimits::default())
        .with_metrics_token(Some("metrics-scrape-token-5"));
    let doc = Arc::new(apidrift_api::openapi::document_bytes());
    let app = test::init_service(create_app(state, doc)).await;
    for (path, token) in [
        ("/api/v1/endpoints", w.token_a.as_str()),
        ("/metrics", "metrics-scrape-token-5"),
    ] {
        for (scheme, want) in [
            ("Bearer", StatusCode::OK),
            ("bearer", StatusCode::OK),
            ("BEARER", StatusCode::OK),
            ("bEARER", StatusCode::OK),
            ("Basic", StatusCode::UNAUTHORIZED),
            ("Bearer-x", StatusCode::UNAUTHORIZED),
        ] {
            let req = TestRequest::get()
                .uri(path)
                .insert_header((header::AUTHORIZATION, format!("{scheme} {token}")))
                .to_request();
            let res = match app.call(req).await {
                Ok(res) => res,
                Err(e) => panic!("the app failed instead of answering: {e}"),
            };
            assert_eq!(res.status(), want, "{scheme} on {path}");
        }
    }
    Ok(())
}
