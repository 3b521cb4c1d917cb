//! Optimistic concurrency of endpoint edits through the service (issue 25), on both store
//! adapters: every edit adds 1 to the version; an expected version that is not the stored one is
//! `ServiceError::Changed` and writes nothing (update and delete); without one, concurrent
//! PATCHes of different fields all land.

use apidrift_app::{Actor, Service, ServiceError};
use apidrift_model::Plan;
use apidrift_model::net::AllowList;
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewWorkspace, new_id};
use serde_json::json;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

mod support;

use support::{Backend, TestResult, TestStore, test_store};

struct World {
    service: Arc<Service>,
    ws: Uuid,
    _store: TestStore,
}

async fn world(backend: Backend) -> Result<Option<World>, Box<dyn std::error::Error>> {
    let Some(held) = test_store(backend).await? else {
        return Ok(None);
    };
    let store = held.store.clone();
    let ws = new_id();
    store
        .create_workspace(NewWorkspace {
            id: ws,
            name: "w".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?;
    let keys = KeyRing::new(SecretKey::generate()?, Vec::new())?;
    let service = Service::new(store, Some(keys), AllowList::default())?;
    Ok(Some(World {
        service: Arc::new(service),
        ws,
        _store: held,
    }))
}

impl World {
    async fn endpoint(&self, name: &str) -> Result<Uuid, Box<dyn std::error::Error>> {
        let created = self
            .service
            .register_endpoints(
                &Actor::operator(self.ws),
                &json!({"name": name, "url": "https://api.example.com/items", "timeoutMs": 1000}),
            )
            .await?;
        Ok(created.endpoints.first().ok_or("nothing created")?.id)
    }
}

macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() -> super::TestResult {
                super::$name(super::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() -> super::TestResult {
                super::$name(super::Backend::Postgres).await
            }
        }
    )+};
}

both_backends!(expected_versions, concurrent_patches_of_different_fields);

async fn expected_versions(backend: Backend) -> TestResult {
    let Some(w) = world(backend).await? else {
        return Ok(());
    };
    let s = &w.service;
    let id = w.endpoint("versioned").await?;
    assert_eq!(s.get_endpoint(&Actor::operator(w.ws), id).await?.version, 1);

    // The current version: written, +1.
    let e = s
        .update_endpoint(&Actor::operator(w.ws), id, &json!({"name": "two"}), Some(1))
        .await?;
    assert_eq!((e.settings.name.as_str(), e.version), ("two", 2));

    // A stale one: Changed, with the text the API answers, and nothing written.
    match s
        .update_endpoint(
            &Actor::operator(w.ws),
            id,
            &json!({"name": "lost"}),
            Some(1),
        )
        .await
    {
        Err(e @ ServiceError::Changed { .. }) => {
            assert_eq!(e.to_string(), "the endpoint changed since you read it");
        }
        other => return Err(format!("stale update: {other:?}").into()),
    }
    assert_eq!(s.get_endpoint(&Actor::operator(w.ws), id).await?, e);

    // An invalid field with a stale version: the request is checked first (RFC 9110 evaluates
    // preconditions after the normal request checks), so the field is named, and nothing is
    // written.
    match s
        .update_endpoint(
            &Actor::operator(w.ws),
            id,
            &json!({"timeoutMs": 0}),
            Some(1),
        )
        .await
    {
        Err(ServiceError::Invalid(m)) if m.starts_with("timeoutMs:") => {}
        other => return Err(format!("stale invalid update: {other:?}").into()),
    }
    assert_eq!(s.get_endpoint(&Actor::operator(w.ws), id).await?, e);

    // Pause and resume are edits.
    s.set_paused(&Actor::operator(w.ws), id, true).await?;
    s.set_paused(&Actor::operator(w.ws), id, false).await?;
    let e = s.get_endpoint(&Actor::operator(w.ws), id).await?;
    assert_eq!((e.version, e.paused), (4, false));

    // A missing endpoint is NotFound whatever the version.
    match s
        .update_endpoint(
            &Actor::operator(w.ws),
            new_id(),
            &json!({"name": "x"}),
            Some(1),
        )
        .await
    {
        Err(ServiceError::NotFound { .. }) => {}
        other => return Err(format!("missing: {other:?}").into()),
    }

    // Delete: a stale version keeps the endpoint, the current one deletes it.
    match s.delete_endpoint(&Actor::operator(w.ws), id, Some(3)).await {
        Err(ServiceError::Changed { .. }) => {}
        other => return Err(format!("stale delete: {other:?}").into()),
    }
    assert_eq!(s.get_endpoint(&Actor::operator(w.ws), id).await?, e);
    s.delete_endpoint(&Actor::operator(w.ws), id, Some(4))
        .await?;
    assert!(matches!(
        s.get_endpoint(&Actor::operator(w.ws), id).await,
        Err(ServiceError::NotFound { .. })
    ));
    Ok(())
}

async fn concurrent_patches_of_different_fields(backend: Backend) -> TestResult {
    let Some(w) = world(backend).await? else {
        return Ok(());
    };
    let id = w.endpoint("racy").await?;
    // Eight writers, each its own field, ten rounds: every last value is there.
    let bodies = |round: u32| {
        [
            json!({ "name": format!("racy {round}") }),
            json!({ "timeoutMs": 2000 + round }),
            json!({ "environment": format!("env-{round}") }),
            json!({ "description": format!("round {round}") }),
            json!({ "tags": [format!("t{round}")] }),
            json!({ "retries": round % 4 }),
            json!({ "followRedirects": round.is_multiple_of(2) }),
            json!({ "ignorePaths": [format!("$.r{round}")] }),
        ]
    };
    let mut version = 1;
    for round in 0..10u32 {
        let mut tasks = Vec::new();
        for body in bodies(round) {
            let s = w.service.clone();
            let ws = w.ws;
            tasks.push(tokio::spawn(async move {
                s.update_endpoint(&Actor::operator(ws), id, &body, None)
                    .await
            }));
        }
        for t in tasks {
            t.await??;
        }
        version += 8;
        let e = w.service.get_endpoint(&Actor::operator(w.ws), id).await?;
        assert_eq!(e.settings.name, format!("racy {round}"));
        assert_eq!(e.settings.timeout_ms, 2000 + round);
        assert_eq!(e.settings.environment, format!("env-{round}"));
        assert_eq!(e.settings.description, Some(format!("round {round}")));
        assert_eq!(e.settings.tags, vec![format!("t{round}")]);
        assert_eq!(u32::from(e.settings.retries), round % 4);
        assert_eq!(e.settings.follow_redirects, round.is_multiple_of(2));
        assert_eq!(e.settings.ignore_paths, vec![format!("$.r{round}")]);
        assert_eq!(e.version, version, "one version per edit");
    }
    Ok(())
}
