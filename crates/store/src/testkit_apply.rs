//! The apply cases of the conformance suite (feature `testkit`): endpoint keys (unique in a
//! workspace), [`LifecycleStore::keyed_endpoints`] and the one-transaction write of a monitors
//! file, [`LifecycleStore::apply_endpoints`]. Expanded by [`crate::conformance_suite!`] through
//! [`crate::apply_conformance_cases!`]; each case checks workspace isolation too.

use crate::testkit::{TestResult, at, endpoint_row, plain_endpoint, workspace};
use crate::*;
use std::sync::Arc;

fn fail(msg: impl Into<String>) -> Box<dyn std::error::Error + Send + Sync> {
    msg.into().into()
}

fn keyed(key: &str, n: i64) -> NewEndpointRow {
    let mut row = plain_endpoint(key, at(n));
    row.settings.key = Some(key.to_owned());
    row
}

async fn keys_of(store: &dyn Store, ws: Uuid) -> Result<Vec<String>, StoreError> {
    Ok(store
        .keyed_endpoints(ws)
        .await?
        .into_iter()
        .filter_map(|e| e.settings.key)
        .collect())
}

async fn all(store: &dyn Store, ws: Uuid) -> Result<Vec<StoredEndpoint>, StoreError> {
    let page = PageRequest {
        limit: 100,
        offset: 0,
    };
    Ok(store
        .list_endpoints(ws, &EndpointFilter::default(), page)
        .await?
        .items)
}

/// A key round-trips, is unique per workspace (another workspace may use it), and
/// `keyed_endpoints` lists only keyed endpoints of the workspace, by key.
pub async fn apply_keys_are_unique_per_workspace(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let made = store
        .create_endpoints(
            a.id,
            vec![
                keyed("zeta", 1),
                plain_endpoint("plain", at(2)),
                keyed("alpha", 3),
            ],
        )
        .await?;
    assert_eq!(made.created[0].settings.key.as_deref(), Some("zeta"));
    assert_eq!(made.created[1].settings.key, None);
    let full = endpoint_row("full", at(4));
    let full_key = full.settings.key.clone();
    store.create_endpoints(a.id, vec![full]).await?;
    let got = keys_of(&*store, a.id).await?;
    let mut want = vec!["alpha".to_owned(), "zeta".to_owned()];
    want.extend(full_key);
    want.sort();
    assert_eq!(got, want);
    match store.create_endpoints(a.id, vec![keyed("alpha", 5)]).await {
        Err(StoreError::Conflict(_)) => {}
        other => return Err(fail(format!("a taken key must conflict, got {other:?}"))),
    }
    assert_eq!(all(&*store, a.id).await?.len(), 4);
    // Another workspace sees none of them and may use the same key.
    assert!(keys_of(&*store, b.id).await?.is_empty());
    store
        .create_endpoints(b.id, vec![keyed("alpha", 6)])
        .await?;
    assert_eq!(keys_of(&*store, b.id).await?, vec!["alpha".to_owned()]);
    // A key set on an unkeyed endpoint by an update, and a taken one refused.
    let plain = made.created[1].clone();
    let mut ch = EndpointChanges::of(&plain);
    ch.settings.key = Some("zeta".into());
    match store
        .update_endpoint(a.id, plain.id, ch.clone(), None, at(7))
        .await
    {
        Err(StoreError::Conflict(_)) => {}
        other => return Err(fail(format!("a taken key must conflict, got {other:?}"))),
    }
    ch.settings.key = Some("beta".into());
    let got = store
        .update_endpoint(a.id, plain.id, ch, None, at(8))
        .await?;
    assert_eq!(got.settings.key.as_deref(), Some("beta"));
    Ok(())
}

/// One apply deletes, updates and creates in one go; the endpoints it does not name keep their
/// `updated_at` and version; an unkeyed endpoint is never touched.
pub async fn apply_writes_the_whole_plan(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", Some(4), None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let made = store
        .create_endpoints(
            a.id,
            vec![
                keyed("k1", 1),
                keyed("k2", 2),
                keyed("k3", 3),
                plain_endpoint("p", at(4)),
            ],
        )
        .await?
        .created;
    let (k1, k2, k3, p) = (&made[0], &made[1], &made[2], &made[3]);
    // Another workspace cannot delete or change a's endpoints: nothing written.
    let foreign = ApplyWrite {
        deletes: vec![(k3.id, k3.version)],
        ..ApplyWrite::default()
    };
    match store.apply_endpoints(b.id, foreign, at(9)).await {
        Err(StoreError::NotFound) => {}
        other => return Err(fail(format!("another workspace's endpoint: {other:?}"))),
    }
    assert_eq!(all(&*store, a.id).await?.len(), 4);

    let mut ch = EndpointChanges::of(k2);
    ch.settings.name = "renamed".into();
    // Full at 4 endpoints: the create fits because the delete comes first.
    let write = ApplyWrite {
        creates: vec![keyed("k4", 10)],
        updates: vec![ApplyUpdate {
            id: k2.id,
            version: k2.version,
            changes: ch,
        }],
        deletes: vec![(k3.id, k3.version)],
    };
    store.apply_endpoints(a.id, write, at(20)).await?;
    assert_eq!(keys_of(&*store, a.id).await?, ["k1", "k2", "k4"]);
    let k2_now = store.get_endpoint(a.id, k2.id).await?.ok_or("k2 gone")?;
    assert_eq!(
        (
            k2_now.settings.name.as_str(),
            k2_now.version,
            k2_now.updated_at
        ),
        ("renamed", k2.version + 1, at(20))
    );
    assert_eq!(store.get_endpoint(a.id, k1.id).await?.as_ref(), Some(k1));
    assert_eq!(store.get_endpoint(a.id, p.id).await?.as_ref(), Some(p));
    assert_eq!(store.get_endpoint(a.id, k3.id).await?, None);
    // An empty write is no error and writes nothing.
    store
        .apply_endpoints(a.id, ApplyWrite::default(), at(30))
        .await?;
    assert_eq!(store.get_endpoint(a.id, k1.id).await?.as_ref(), Some(k1));
    Ok(())
}

/// A failing part writes nothing: a stale version, a taken key, the plan limit.
pub async fn apply_is_one_transaction(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", Some(3), None).await?;
    let made = store
        .create_endpoints(a.id, vec![keyed("k1", 1), keyed("k2", 2)])
        .await?
        .created;
    let (k1, k2) = (&made[0], &made[1]);
    let before = all(&*store, a.id).await?;
    let mut ch = EndpointChanges::of(k1);
    ch.settings.name = "renamed".into();
    let update = |version| ApplyUpdate {
        id: k1.id,
        version,
        changes: ch.clone(),
    };
    type Case = (&'static str, ApplyWrite, fn(&StoreError) -> bool);
    let cases: Vec<Case> = vec![
        (
            "a stale version",
            ApplyWrite {
                creates: vec![keyed("k3", 3)],
                updates: vec![update(k1.version + 7)],
                deletes: vec![(k2.id, k2.version)],
            },
            |e| matches!(e, StoreError::Changed),
        ),
        (
            "a taken key",
            ApplyWrite {
                creates: vec![keyed("k2", 3)],
                updates: vec![update(k1.version)],
                deletes: vec![],
            },
            |e| matches!(e, StoreError::Conflict(_)),
        ),
        (
            "the plan limit",
            ApplyWrite {
                creates: vec![keyed("k3", 3), keyed("k4", 4)],
                updates: vec![update(k1.version)],
                deletes: vec![],
            },
            |e| matches!(e, StoreError::Conflict(m) if *m == apply_limit_message(3)),
        ),
        (
            "a deleted endpoint that is gone",
            ApplyWrite {
                creates: vec![keyed("k3", 3)],
                updates: vec![update(k1.version)],
                deletes: vec![(new_id(), 1)],
            },
            |e| matches!(e, StoreError::NotFound),
        ),
    ];
    for (what, write, expected) in cases {
        match store.apply_endpoints(a.id, write, at(50)).await {
            Err(e) if expected(&e) => {}
            other => return Err(fail(format!("{what}: unexpected {other:?}"))),
        }
        if all(&*store, a.id).await? != before {
            return Err(fail(format!("{what}: the failed apply wrote something")));
        }
    }
    Ok(())
}

/// Expands the apply cases (see [`crate::conformance_suite!`]).
#[macro_export]
macro_rules! apply_conformance_cases {
    ($setup:path, $teardown:path) => {
        $crate::apply_conformance_cases!(@cases $setup, $teardown;
            apply_keys_are_unique_per_workspace,
            apply_writes_the_whole_plan,
            apply_is_one_transaction,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_apply::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
