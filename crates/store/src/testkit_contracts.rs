//! The contract schema set cases of the conformance suite (feature `testkit`):
//! [`ContractStore`] — a set stored once per workspace and hash, each endpoint's contract a
//! reference into it, freed with its last reference by every write that drops one. Expanded by
//! [`crate::conformance_suite!`] through [`crate::contract_conformance_cases!`].

use crate::testkit::{TestResult, at, plain_endpoint, workspace};
use crate::*;
use serde_json::json;
use std::sync::Arc;

/// A set with a hash of the right form (the store does not recompute it).
fn set(seed: char, document: &str) -> NewContractSet {
    NewContractSet {
        hash: std::iter::repeat_n(seed, 64).collect(),
        document: Arc::from(document),
    }
}

fn reference(operation: &str, set: &NewContractSet) -> ResponseContract {
    ResponseContract {
        operation: operation.into(),
        status: 200,
        schema: json!({"$ref": "#/components/schemas/User",
            "x-apidrift": {"mediaType": "application/json",
                "mediaTypes": {"application/json": "#/components/schemas/User"}}}),
        set: Some(set.hash.clone()),
    }
}

fn with_contract(name: &str, n: i64, contract: ResponseContract) -> NewEndpointRow {
    let mut row = plain_endpoint(name, at(n));
    row.response_contract = Some(contract);
    row
}

const DOC: &str = r#"{"components":{"schemas":{"User":{"type":"object"}}}}"#;

/// Two endpoints of one document share one stored set; another workspace stores its own copy
/// and never sees the first's; deleting one endpoint keeps the other's contract and the set;
/// deleting both frees it.
pub async fn contract_sets_shared_and_freed(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let b = workspace(&*store, "b", None, None).await?;
    let s = set('a', DOC);
    let made = store
        .create_endpoints_with_sets(
            a.id,
            vec![
                with_contract("users", 1, reference("GET /users", &s)),
                with_contract("user", 2, reference("GET /users/{id}", &s)),
            ],
            vec![s.clone()],
        )
        .await?;
    assert_eq!(made.created.len(), 2);
    let (first, second) = (made.created[0].id, made.created[1].id);
    assert_eq!(store.contract_set_usage(a.id).await?, (1, DOC.len() as u64));
    let stored = store
        .contract_set(a.id, &s.hash)
        .await?
        .ok_or("the set is stored")?;
    assert_eq!(
        (stored.document.as_str(), stored.size_bytes),
        (DOC, DOC.len() as u64)
    );
    let got = store.get_endpoint(a.id, second).await?.ok_or("endpoint")?;
    assert_eq!(
        got.response_contract,
        Some(reference("GET /users/{id}", &s))
    );
    assert!(got.to_model().has_response_contract);

    // Writing the same set again writes nothing new; another workspace stores its own.
    store
        .create_endpoints_with_sets(
            a.id,
            vec![with_contract("again", 3, reference("GET /users", &s))],
            vec![s.clone()],
        )
        .await?;
    assert_eq!(store.contract_set_usage(a.id).await?.0, 1);
    assert!(store.contract_set(b.id, &s.hash).await?.is_none());
    store
        .create_endpoints_with_sets(
            b.id,
            vec![with_contract("theirs", 4, reference("GET /users", &s))],
            vec![s.clone()],
        )
        .await?;
    assert_eq!(store.contract_set_usage(b.id).await?.0, 1);

    // Deleting endpoints keeps the set while one refers to it.
    let again = store
        .list_endpoints(
            a.id,
            &EndpointFilter::default(),
            PageRequest {
                limit: 10,
                offset: 0,
            },
        )
        .await?
        .items
        .into_iter()
        .find(|e| e.settings.name == "again")
        .ok_or("again")?;
    store.delete_endpoint(a.id, again.id, None).await?;
    store.delete_endpoint(a.id, first, None).await?;
    let kept = store.get_endpoint(a.id, second).await?.ok_or("endpoint")?;
    assert_eq!(
        kept.response_contract,
        Some(reference("GET /users/{id}", &s))
    );
    assert_eq!(
        store.contract_set(a.id, &s.hash).await?.map(|x| x.document),
        Some(DOC.to_owned())
    );
    // The last reference goes by an apply's delete: the set goes with it.
    store
        .apply_endpoints(
            a.id,
            ApplyWrite {
                creates: vec![],
                updates: vec![],
                deletes: vec![(second, kept.version)],
            },
            at(10),
        )
        .await?;
    assert!(store.contract_set(a.id, &s.hash).await?.is_none());
    assert_eq!(store.contract_set_usage(a.id).await?, (0, 0));
    // The other workspace's copy is untouched.
    assert!(store.contract_set(b.id, &s.hash).await?.is_some());
    Ok(())
}

/// Replacing or removing a contract frees the set it referred to when nothing else does; a
/// write whose rows were all past the plan limit keeps no set; a reference to a set the write
/// does not carry, or that the workspace does not store, is refused; an inline contract (the
/// form written before sets) still round-trips.
pub async fn contract_sets_replaced_and_refused(store: Arc<dyn Store>) -> TestResult {
    let a = workspace(&*store, "a", None, None).await?;
    let (s1, s2) = (set('1', DOC), set('2', r#"{"other":{}}"#));
    let made = store
        .create_endpoints_with_sets(
            a.id,
            vec![with_contract("users", 1, reference("GET /users", &s1))],
            vec![s1.clone()],
        )
        .await?;
    let ep = made.created[0].id;
    store
        .set_contract_in_set(a.id, ep, reference("GET /users", &s2), s2.clone(), at(5))
        .await?;
    assert!(store.contract_set(a.id, &s1.hash).await?.is_none());
    assert!(store.contract_set(a.id, &s2.hash).await?.is_some());
    let got = store.get_endpoint(a.id, ep).await?.ok_or("endpoint")?;
    assert_eq!(
        (got.response_contract, got.updated_at),
        (Some(reference("GET /users", &s2)), at(5))
    );
    // A contract referring to a set the workspace stores may be set without carrying it.
    store
        .set_contract(a.id, ep, Some(reference("GET /users/{id}", &s2)), at(6))
        .await?;
    match store
        .set_contract(a.id, ep, Some(reference("GET /users", &s1)), at(7))
        .await
    {
        Err(StoreError::InvalidInput(_)) => {}
        other => return Err(format!("a dangling reference: {other:?}").into()),
    }
    // An inline contract replaces the reference and frees the set.
    let inline = ResponseContract {
        operation: "GET /users".into(),
        status: 200,
        schema: json!({"type": "object"}),
        set: None,
    };
    store
        .set_contract(a.id, ep, Some(inline.clone()), at(8))
        .await?;
    assert_eq!(store.contract_set_usage(a.id).await?, (0, 0));
    assert_eq!(
        store
            .get_endpoint(a.id, ep)
            .await?
            .and_then(|e| e.response_contract),
        Some(inline)
    );
    store
        .set_contract_in_set(a.id, ep, reference("GET /users", &s1), s1.clone(), at(9))
        .await?;
    store.set_contract(a.id, ep, None, at(10)).await?;
    assert_eq!(store.contract_set_usage(a.id).await?, (0, 0));

    // A set carried without a row that keeps it is not kept.
    let full = workspace(&*store, "full", Some(0), None).await?;
    let none = store
        .create_endpoints_with_sets(
            full.id,
            vec![with_contract("x", 1, reference("GET /x", &s1))],
            vec![s1.clone()],
        )
        .await?;
    assert!(none.created.is_empty());
    assert_eq!(store.contract_set_usage(full.id).await?, (0, 0));

    // Refused: a reference the write does not carry, a malformed hash, a missing endpoint.
    match store
        .create_endpoints_with_sets(
            a.id,
            vec![with_contract("y", 2, reference("GET /y", &s2))],
            vec![s1.clone()],
        )
        .await
    {
        Err(StoreError::InvalidInput(_)) => {}
        other => return Err(format!("a reference not carried: {other:?}").into()),
    }
    let bad = NewContractSet {
        hash: "not-a-hash".into(),
        document: Arc::from(DOC),
    };
    match store
        .create_endpoints_with_sets(a.id, vec![], vec![bad])
        .await
    {
        Err(StoreError::InvalidInput(_)) => {}
        other => return Err(format!("a malformed hash: {other:?}").into()),
    }
    match store
        .set_contract_in_set(
            a.id,
            new_id(),
            reference("GET /users", &s1),
            s1.clone(),
            at(11),
        )
        .await
    {
        Err(StoreError::NotFound) => {}
        other => return Err(format!("a missing endpoint: {other:?}").into()),
    }
    assert_eq!(store.contract_set_usage(a.id).await?, (0, 0));
    Ok(())
}

/// Expands the contract set cases (used by [`crate::conformance_suite!`]).
#[macro_export]
macro_rules! contract_conformance_cases {
    ($setup:path, $teardown:path) => {
        $crate::contract_conformance_cases!(@cases $setup, $teardown;
            contract_sets_shared_and_freed,
            contract_sets_replaced_and_refused,
        );
    };
    (@cases $setup:path, $teardown:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() -> $crate::testkit::TestResult {
                let Some((store, guard)) = $setup().await? else {
                    return Ok(());
                };
                let result = $crate::testkit_contracts::$case(store).await;
                $teardown(guard).await?;
                result
            }
        )*
    };
}
