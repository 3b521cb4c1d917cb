//! The OpenAPI import through the service (D22, D6) against both store adapters: the method
//! filter, the `operations` subset, `already registered` on a second import, contracts attached,
//! the plan limit (402 when full, `plan endpoint limit reached` past it), and the size limit.

use apidrift_app::{Actor, Service, ServiceError};
use apidrift_model::Plan;
use apidrift_model::net::AllowList;
use apidrift_store::{EndpointFilter, NewWorkspace, PageRequest, Store, new_id};
use serde_json::{Value, json};
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

mod support;

use support::{Backend, TestResult, TestStore, test_store};

struct World {
    service: Service,
    store: Arc<dyn Store>,
    _store: TestStore,
}

async fn world(backend: Backend) -> Result<Option<World>, Box<dyn std::error::Error>> {
    let Some(held) = test_store(backend).await? else {
        return Ok(None);
    };
    let store = held.store.clone();
    // No sealing key: an import seals nothing.
    let service = Service::new(store.clone(), None, AllowList::default())?;
    Ok(Some(World {
        service,
        store,
        _store: held,
    }))
}

impl World {
    async fn workspace(&self, limit: Option<u32>) -> Result<Uuid, Box<dyn std::error::Error>> {
        let id = new_id();
        self.store
            .create_workspace(NewWorkspace {
                id,
                name: "w".into(),
                plan: Plan::Enterprise,
                endpoint_limit: limit,
                check_quota: None,
                created_at: OffsetDateTime::now_utc(),
            })
            .await?;
        Ok(id)
    }

    async fn run(&self, ws: Uuid, body: Value) -> Result<Value, ServiceError> {
        let bytes = bytes::Bytes::from(body.to_string());
        let request = self.service.read_parse_request(bytes).await?;
        let result = self.service.openapi(&Actor::operator(ws), request).await?;
        serde_json::to_value(result).map_err(|e| ServiceError::Internal(e.to_string()))
    }
}

fn doc() -> Value {
    let ok = json!({ "200": { "description": "ok", "content": { "application/json": {
        "schema": { "$ref": "#/components/schemas/User" } } } } });
    json!({
        "openapi": "3.0.3",
        "info": { "title": "t", "version": "1" },
        "servers": [{ "url": "https://api.example.com/v1" }],
        "paths": {
            "/users": {
                "get": { "operationId": "listUsers", "responses": ok },
                "head": { "operationId": "headUsers", "responses": { "200": { "description": "ok" } } },
                "post": { "operationId": "createUser", "responses": ok },
                "delete": { "operationId": "dropUsers", "responses": { "204": { "description": "gone" } } }
            },
            "/me": { "get": { "operationId": "me", "responses": ok } }
        },
        "components": { "schemas": {
            "User": { "type": "object", "nullable": true,
                      "properties": { "address": { "$ref": "#/components/schemas/Address" } } },
            "Address": { "type": "object" },
            "Unrelated": { "type": "string" }
        } }
    })
}

fn reasons(body: &Value) -> Vec<(String, String)> {
    body["import"]["skipped"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|e| {
                    (
                        e["name"].as_str().unwrap_or("").to_owned(),
                        e["reason"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn methods_subset_and_already_registered(backend: Backend) -> TestResult {
    let Some(w) = world(backend).await? else {
        return Ok(());
    };
    let ws = w.workspace(None).await?;

    // Listing: every operation, POST and DELETE not importable by default, saying how.
    let body = w.run(ws, json!({ "document": doc() })).await?;
    assert_eq!(body["methods"], json!(["GET", "HEAD"]));
    assert_eq!(body["operations"].as_array().map(Vec::len), Some(5));
    assert!(body.get("import").is_none());

    // Import by default: GET and HEAD only; the others skipped with the way to opt in.
    let body = w
        .run(ws, json!({ "document": doc(), "import": true }))
        .await?;
    assert_eq!(body["import"]["created"], 3, "{body}");
    let methods: Vec<&str> = body["import"]["endpoints"]
        .as_array()
        .ok_or("no endpoints")?
        .iter()
        .filter_map(|e| e["method"].as_str())
        .collect();
    assert!(
        methods.iter().all(|m| *m == "GET" || *m == "HEAD"),
        "{methods:?}"
    );
    let skipped = reasons(&body);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped.iter().any(|(n, r)| n == "dropUsers"
        && r == "method: only GET and HEAD are imported by default; pass \"methods\": [\"GET\", \"HEAD\", \"DELETE\"] to include DELETE"));

    // Contracts attached, pruned to what the response reaches.
    let listed = w
        .store
        .list_endpoints(
            ws,
            &EndpointFilter::default(),
            PageRequest {
                limit: 50,
                offset: 0,
            },
        )
        .await?;
    let list_users = listed
        .items
        .iter()
        .find(|e| e.settings.name == "listUsers")
        .ok_or("listUsers not created")?;
    let contract = list_users
        .response_contract
        .as_ref()
        .ok_or("no contract on listUsers")?;
    assert_eq!(contract.operation, "GET /users");
    // The contract is a reference (issue 29): its schemas are in the workspace's schema set,
    // stored once for the import, holding only what the imported responses reach.
    let set = contract.set.clone().ok_or("the contract is a reference")?;
    assert!(
        contract.schema.get("components").is_none(),
        "{}",
        contract.schema
    );
    assert_eq!(contract.schema["$ref"], "#/components/schemas/User");
    let me = listed
        .items
        .iter()
        .find(|e| e.settings.name == "me")
        .and_then(|e| e.response_contract.clone())
        .ok_or("no contract on me")?;
    assert_eq!(
        me.set.as_deref(),
        Some(set.as_str()),
        "one set for the import"
    );
    let stored = w
        .store
        .contract_set(ws, &set)
        .await?
        .ok_or("the set is stored")?;
    let document: Value = serde_json::from_str(&stored.document)?;
    let schemas = &document["components"]["schemas"];
    assert!(schemas.get("User").is_some() && schemas.get("Address").is_some());
    assert!(schemas.get("Unrelated").is_none(), "{document}");
    assert_eq!(w.store.contract_set_usage(ws).await?.0, 1);

    // Again: nothing created, every one of them already registered.
    let body = w
        .run(ws, json!({ "document": doc(), "import": true }))
        .await?;
    assert_eq!(body["import"]["created"], 0, "{body}");
    let already = reasons(&body)
        .into_iter()
        .filter(|(_, r)| r == "already registered")
        .count();
    assert_eq!(already, 3, "{body}");

    // Opting in to POST, a subset by operationId and by label.
    let body = w
        .run(
            ws,
            json!({ "document": doc(), "import": true, "methods": ["GET", "POST"],
                    "operations": ["createUser", "GET /me", "DELETE /users"] }),
        )
        .await?;
    assert_eq!(body["import"]["created"], 1, "{body}");
    assert_eq!(body["import"]["endpoints"][0]["name"], "createUser");
    let skipped = reasons(&body);
    assert_eq!(
        skipped.len(),
        2,
        "only the selected operations are reported: {skipped:?}"
    );
    assert!(skipped.contains(&("me".into(), "already registered".into())));
    // createUser reaches the same schemas: the same set, not written again.
    assert_eq!(w.store.contract_set_usage(ws).await?.0, 1);
    assert!(skipped.contains(&(
        "dropUsers".into(),
        "method: DELETE is not in \"methods\"; add it there to include it".into()
    )));

    // An unknown operation is a 400 naming it.
    let err = w
        .run(
            ws,
            json!({ "document": doc(), "import": true, "operations": ["GET /nope"] }),
        )
        .await;
    assert!(
        matches!(&err, Err(ServiceError::Invalid(m)) if m.contains("\"GET /nope\" is not an operation")),
        "{err:?}"
    );
    Ok(())
}

async fn plan_limits_still_apply(backend: Backend) -> TestResult {
    let Some(w) = world(backend).await? else {
        return Ok(());
    };
    let ws = w.workspace(Some(2)).await?;
    let body = w
        .run(ws, json!({ "document": doc(), "import": true }))
        .await?;
    assert_eq!(body["import"]["created"], 2, "{body}");
    assert!(
        reasons(&body).contains(&("headUsers".into(), "plan endpoint limit reached".into())),
        "{body}"
    );
    let err = w
        .run(
            ws,
            json!({ "document": doc(), "import": true, "methods": ["POST"] }),
        )
        .await;
    assert!(matches!(err, Err(ServiceError::PlanLimit(_))), "{err:?}");
    Ok(())
}

async fn external_refs_and_size(backend: Backend) -> TestResult {
    let Some(w) = world(backend).await? else {
        return Ok(());
    };
    let ws = w.workspace(None).await?;
    let mut d = doc();
    d["components"]["schemas"]["Address"] = json!({ "$ref": "common.yaml#/Address" });
    let body = w.run(ws, json!({ "document": d, "import": true })).await?;
    let skipped = reasons(&body);
    let list_users = skipped
        .iter()
        .find(|(n, _)| n == "listUsers")
        .ok_or_else(|| format!("listUsers is skipped: {body}"))?;
    assert!(
        list_users.1.starts_with("contract: ")
            && list_users.1.contains("bundle the document first"),
        "{list_users:?}"
    );
    assert!(
        body["import"]["endpoints"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["name"] == "headUsers"))
    );

    let small =
        Service::new(w.store.clone(), None, AllowList::default())?.with_import_max_bytes(64);
    let err = small
        .read_parse_request(bytes::Bytes::from(json!({ "document": doc() }).to_string()))
        .await;
    assert!(matches!(err, Err(ServiceError::TooLarge(64))), "{err:?}");
    Ok(())
}

macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn sqlite() -> super::TestResult {
                super::$name(super::Backend::Sqlite).await
            }
            #[tokio::test]
            async fn postgres() -> super::TestResult {
                super::$name(super::Backend::Postgres).await
            }
        }
    )+};
}

both_backends!(
    methods_subset_and_already_registered,
    plan_limits_still_apply,
    external_refs_and_size
);
