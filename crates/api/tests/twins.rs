//! One route surface: every `/v1/…` route answers under `/api/v1/…` too, with the same handler
//! logic. In-process (`actix_web::test`): `/openapi.json` lists each twin with (at least) the
//! same methods and no operation id twice, and each pair answers the same status and body to
//! the same request (a capture for a valid id, 404 for an unknown one, the webhook routes, the
//! deliveries, the webhook test, an endpoint's diffs).

use actix_web::body::MessageBody;
use actix_web::dev::{Service as _, ServiceResponse};
use actix_web::http::{StatusCode, header};
use actix_web::test::{self, TestRequest};
use apidrift_api::{AppState, RateLimits, create_app};
use apidrift_app::{Actor, MintToken, Service};
use apidrift_model::net::AllowList;
use apidrift_model::{EndpointSettings, Plan, Role, Scope};
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewEndpointRow, NewWorkspace, SealedSecrets, Store, new_id};
use apidrift_store_sqlite::SqliteStore;
use serde_json::{Value, json};
use std::error::Error;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

type TestResult = Result<(), Box<dyn Error>>;

struct World {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    service: Arc<Service>,
    ws: Uuid,
    token: String,
}

/// A workspace with an owner token, on a service that may fetch loopback addresses.
async fn world() -> Result<World, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("api.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&path.to_string_lossy()).await?);
    let ws = store
        .create_workspace(NewWorkspace {
            id: new_id(),
            name: "w".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?
        .id;
    let keys = KeyRing::new(SecretKey::generate()?, Vec::new())?;
    let allow = AllowList::parse("127.0.0.1/32")?;
    let service = Arc::new(Service::new(store.clone(), Some(keys), allow)?);
    let token = service
        .mint_token(
            &Actor::operator(ws),
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
        ws,
        token: token.expose().to_owned(),
    })
}

/// A loopback upstream that answers every request with the same JSON body.
fn upstream() -> Result<String, Box<dyn Error>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 2048];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = r#"{"id":1,"name":"ann"}"#;
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    Ok(format!("http://{addr}/user"))
}

async fn endpoint_in(w: &World, url: &str) -> Result<Uuid, Box<dyn Error>> {
    let id = new_id();
    w.store
        .create_endpoints(
            w.ws,
            vec![NewEndpointRow {
                id,
                settings: EndpointSettings {
                    timeout_ms: 5000,
                    ..EndpointSettings::new("e", url)
                },
                secrets: SealedSecrets::none(),
                response_contract: None,
                created_at: OffsetDateTime::now_utc(),
            }],
        )
        .await?;
    Ok(id)
}

async fn send(w: &World, req: TestRequest) -> ServiceResponse<impl MessageBody> {
    let state = AppState::new(w.service.clone(), RateLimits::default());
    let doc = Arc::new(apidrift_api::openapi::document_bytes());
    let app = test::init_service(create_app(state, doc)).await;
    let req = req
        .insert_header((header::AUTHORIZATION, format!("Bearer {}", w.token)))
        .to_request();
    match app.call(req).await {
        Ok(res) => res,
        Err(e) => panic!("the app failed instead of answering: {e}"),
    }
}

/// The status and JSON body (`null` when empty) of `method path` with an optional JSON body.
async fn answer(
    w: &World,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(StatusCode, Value), Box<dyn Error>> {
    let req = match method {
        "GET" => TestRequest::get(),
        "POST" => TestRequest::post(),
        "DELETE" => TestRequest::delete(),
        other => return Err(format!("method {other}").into()),
    }
    .uri(path);
    let req = match body {
        Some(b) => req.set_json(b),
        None => req,
    };
    let res = send(w, req).await;
    let status = res.status();
    let bytes = test::read_body(res).await;
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)?
    };
    Ok((status, value))
}

/// `method /api/v1{rest}` and `method /v1{rest}` answer alike (status and body).
async fn same(w: &World, method: &str, rest: &str) -> Result<(StatusCode, Value), Box<dyn Error>> {
    let api = answer(w, method, &format!("/api/v1{rest}"), None).await?;
    let v1 = answer(w, method, &format!("/v1{rest}"), None).await?;
    assert_eq!(api, v1, "{method} {rest}");
    Ok(api)
}

#[test]
fn every_v1_route_has_an_api_v1_twin_in_openapi() -> TestResult {
    let doc = apidrift_api::openapi::document();
    let paths = doc["paths"].as_object().ok_or("no paths")?;
    let methods = |item: &Value| -> Vec<String> {
        let mut m: Vec<String> = item
            .as_object()
            .map(|o| o.keys().filter(|k| *k != "parameters").cloned().collect())
            .unwrap_or_default();
        m.sort();
        m
    };
    let mut twins = 0;
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in paths {
        for op in item.as_object().into_iter().flat_map(|o| o.values()) {
            if let Some(id) = op.get("operationId").and_then(Value::as_str) {
                assert!(ids.insert(id.to_owned()), "operationId {id} used twice");
            }
        }
        let Some(rest) = path.strip_prefix("/v1/") else {
            continue;
        };
        let twin = format!("/api/v1/{rest}");
        let other = paths
            .get(&twin)
            .ok_or_else(|| format!("{path} has no twin {twin} in /openapi.json"))?;
        // The twin answers every method of the `/v1` route (`/api/v1/endpoints` has GET too).
        let theirs = methods(other);
        for m in methods(item) {
            assert!(theirs.contains(&m), "{m} {path} has no twin {m} {twin}");
        }
        twins += 1;
    }
    assert!(twins >= 8, "only {twins} /v1 routes");
    Ok(())
}

#[actix_web::test]
async fn baseline_capture_answers_under_api_v1() -> TestResult {
    let w = world().await?;
    let id = endpoint_in(&w, &upstream()?).await?;
    // A valid id: a capture on each surface (the versions count both).
    let (status, body) = answer(
        &w,
        "POST",
        &format!("/api/v1/endpoints/{id}/baseline"),
        None,
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["baselineVersion"], 1);
    let samples = json!({"samples": 1});
    let (status, body) = answer(
        &w,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        Some(&samples),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["baselineVersion"], 2);
    // The body rules are the same.
    for prefix in ["/api/v1", "/v1"] {
        let (status, body) = answer(
            &w,
            "POST",
            &format!("{prefix}/endpoints/{id}/baseline"),
            Some(&json!({"samples": 9})),
        )
        .await?;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{prefix}");
        assert_eq!(
            body,
            json!({"error": "samples: must be an integer from 1 to 5"})
        );
    }
    // An unknown id is still 404 on both.
    let (status, body) = same(&w, "POST", &format!("/endpoints/{}/baseline", new_id())).await?;
    assert_eq!(
        (status, body),
        (StatusCode::NOT_FOUND, json!({"error": "not found"}))
    );
    // The endpoint's diffs: the same page on both, 404 for an unknown id.
    let (status, body) = same(&w, "GET", &format!("/endpoints/{id}/diffs")).await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["pagination"]["total"], 0);
    let (status, _) = same(&w, "GET", &format!("/endpoints/{}/diffs", new_id())).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    Ok(())
}

#[actix_web::test]
async fn webhook_routes_answer_under_api_v1() -> TestResult {
    let w = world().await?;
    let hook = json!({"url": "https://hooks.example.com/a", "minSeverity": "info"});
    let (status, created) = answer(&w, "POST", "/api/v1/webhooks", Some(&hook)).await?;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["webhook"]["id"].as_str().ok_or("no id")?.to_owned();
    assert!(created["webhook"]["secret"].is_string());
    // The same validation on both.
    for path in ["/api/v1/webhooks", "/v1/webhooks"] {
        let (status, body) = answer(&w, "POST", path, Some(&json!({"url": 5}))).await?;
        assert_eq!(
            (status, body),
            (
                StatusCode::BAD_REQUEST,
                json!({"error": "url: must be a string"})
            ),
            "{path}"
        );
    }
    let (status, list) = same(&w, "GET", "/webhooks").await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["webhooks"][0]["id"], json!(id));
    let (status, deliveries) = same(&w, "GET", &format!("/webhooks/{id}/deliveries")).await?;
    assert_eq!(status, StatusCode::OK, "{deliveries}");
    assert_eq!(deliveries["pagination"]["total"], 0);
    let unknown = new_id();
    let not_found = (StatusCode::NOT_FOUND, json!({"error": "not found"}));
    assert_eq!(
        same(&w, "GET", &format!("/webhooks/{unknown}/deliveries")).await?,
        not_found
    );
    assert_eq!(
        same(&w, "POST", &format!("/webhooks/{unknown}/test")).await?,
        not_found
    );
    assert_eq!(
        same(&w, "DELETE", &format!("/webhooks/{unknown}")).await?,
        not_found
    );
    // Delete under /api/v1: gone from both lists.
    let (status, _) = answer(&w, "DELETE", &format!("/api/v1/webhooks/{id}"), None).await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, list) = same(&w, "GET", "/webhooks").await?;
    assert_eq!(list, json!({"webhooks": []}));
    assert_eq!(
        same(&w, "DELETE", &format!("/webhooks/{id}")).await?,
        not_found
    );
    Ok(())
}

#[actix_web::test]
async fn a_wrong_method_on_a_twin_is_405() -> TestResult {
    let w = world().await?;
    let res = send(&w, TestRequest::get().uri("/api/v1/webhooks/x/test")).await;
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        res.headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    let res = send(&w, TestRequest::get().uri("/api/v1/endpoints/x/baseline")).await;
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
    Ok(())
}
