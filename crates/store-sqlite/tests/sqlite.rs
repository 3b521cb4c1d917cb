//! The conformance suite on SQLite (a temporary database file per test), plus the SQLite-only
//! tests: migrations from an empty file, URL forms, `:memory:`, concurrent stores on one file,
//! and the raw-dump canary.

use apidrift_seal::{Binding, Field, KeyRing, SecretKey};
use apidrift_store::testkit::{self, TestResult};
use apidrift_store::{ConnectOptions, OpsStore, SealedField, Store, StoreError};
use apidrift_store_sqlite::SqliteStore;
use std::sync::Arc;
use tempfile::TempDir;
use uuid::Uuid;

fn seal_field(field: SealedField) -> Field {
    match field {
        SealedField::EndpointAuth => Field::EndpointAuth,
        SealedField::EndpointHeaders => Field::EndpointHeaders,
        SealedField::EndpointRequestBody => Field::EndpointRequestBody,
        SealedField::BaselineBody => Field::BaselineBody,
        _ => Field::CheckBody,
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn setup() -> Result<Option<(Arc<dyn Store>, TempDir)>, BoxError> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("apidrift.db").display());
    let store = SqliteStore::connect(&url).await?;
    Ok(Some((Arc::new(store), dir)))
}

async fn teardown(dir: TempDir) -> Result<(), BoxError> {
    dir.close()?;
    Ok(())
}

apidrift_store::conformance_suite!(setup = setup, teardown = teardown);
apidrift_store::ops_conformance_suite!(setup = setup, teardown = teardown);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_run_up_from_empty() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fresh.db");
    let options = ConnectOptions {
        migrate: false,
        ..ConnectOptions::default()
    };
    let store = SqliteStore::connect_with(path.to_str().unwrap_or_default(), options).await?;
    // Nothing applied yet: the tables do not exist.
    assert!(store.count_workspaces().await.is_err());
    let report = store.migrate().await?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    let expected = std::fs::read_dir(root)?
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
        .count();
    assert_eq!(report.applied.len(), expected);
    assert_eq!(store.count_workspaces().await?, 0);
    assert!(store.migrate().await?.applied.is_empty());
    // A second store on the same file finds nothing to do.
    let again = SqliteStore::connect(&format!("sqlite://{}", path.display())).await?;
    assert!(again.migrate().await?.applied.is_empty());
    Ok(())
}

/// A new database and its `-wal` and `-shm` files are created 0600 whatever the umask (the
/// test process runs with the usual 022, which would leave them world-readable); an existing
/// database that others can read is named, with the command that fixes it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_files_are_private() -> TestResult {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("private.db");
    let url = format!("sqlite://{}", path.display());
    let store = SqliteStore::connect(&url).await?;
    testkit::workspace(&store, "modes", None, None).await?;
    let mode = |name: &str| -> std::io::Result<u32> {
        Ok(std::fs::metadata(dir.path().join(name))?
            .permissions()
            .mode()
            & 0o777)
    };
    for name in ["private.db", "private.db-wal", "private.db-shm"] {
        assert_eq!(mode(name)?, 0o600, "{name}");
    }
    assert_eq!(apidrift_store_sqlite::loose_permissions(&url), None);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    let warning = apidrift_store_sqlite::loose_permissions(&url).unwrap_or_default();
    assert!(
        warning.contains(&format!("chmod 600 {}", path.display())) && warning.contains("644"),
        "{warning}"
    );
    assert_eq!(
        apidrift_store_sqlite::loose_permissions("sqlite::memory:"),
        None
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_url_uses_one_database() -> TestResult {
    let store = SqliteStore::connect("sqlite::memory:").await?;
    let ws = testkit::workspace(&store, "mem", None, None).await?;
    // Several concurrent calls all see the same (single) in-memory database.
    let (a, b, c) = tokio::join!(
        store.get_workspace(ws.id),
        store.get_workspace(ws.id),
        store.count_workspaces()
    );
    assert!(a?.is_some() && b?.is_some());
    assert_eq!(c?, 1);
    Ok(())
}

/// Short reads run on the calling thread's own connection (issue 29): on a current-thread runtime
/// every read below uses one connection, opened before the writes, and each still sees every
/// commit that finished before it started — this store's (writer thread) and another store's on
/// the same file (another process) — and a memory database still answers them.
#[tokio::test(flavor = "current_thread")]
async fn calling_thread_reads_see_every_finished_commit() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("fresh.db").display());
    let store = SqliteStore::connect(&url).await?;
    let other = SqliteStore::connect(&url).await?;
    let ws = testkit::workspace(&store, "fresh", None, None).await?;
    // The thread's read connection exists (and has read) before the writes below.
    assert_eq!(store.count_endpoints(ws.id).await?, 0);
    for i in 0..5i64 {
        let row = testkit::plain_endpoint(&format!("mine-{i}"), testkit::at(i));
        let created = store.create_endpoints(ws.id, vec![row]).await?.created;
        let id = created.first().ok_or("nothing created")?.id;
        assert!(store.get_endpoint(ws.id, id).await?.is_some());
        assert_eq!(store.count_endpoints(ws.id).await?, 2 * i as u64 + 1);
        let row = testkit::plain_endpoint(&format!("theirs-{i}"), testkit::at(100 + i));
        let created = other.create_endpoints(ws.id, vec![row]).await?.created;
        let id = created.first().ok_or("nothing created")?.id;
        assert!(store.get_endpoint(ws.id, id).await?.is_some());
        let page = store
            .list_endpoints(
                ws.id,
                &apidrift_store::EndpointFilter::default(),
                apidrift_store::PageRequest {
                    limit: 100,
                    offset: 0,
                },
            )
            .await?;
        assert_eq!(page.total, 2 * i as u64 + 2);
        assert_eq!(page.items.first().map(|e| e.id), Some(id));
    }
    let memory = SqliteStore::connect("sqlite::memory:").await?;
    let ws = testkit::workspace(&memory, "mem", None, None).await?;
    let row = testkit::plain_endpoint("m", testkit::at(0));
    let created = memory.create_endpoints(ws.id, vec![row]).await?.created;
    let id = created.first().ok_or("nothing created")?.id;
    assert!(memory.get_endpoint(ws.id, id).await?.is_some());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_urls_fail_clearly() -> TestResult {
    let err = SqliteStore::connect("postgres://localhost/db").await.err();
    assert!(matches!(err, Some(StoreError::InvalidUrl(_))), "{err:?}");
    let err = SqliteStore::connect("sqlite:///nonexistent-dir-apidrift/x/y.db")
        .await
        .err();
    assert!(matches!(err, Some(StoreError::Unavailable(_))), "{err:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_worth_of_writers_share_one_file() -> TestResult {
    // Two independent stores (separate pools, as two processes would have) write at once.
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    let first: Arc<dyn Store> = Arc::new(SqliteStore::connect(&url).await?);
    let second: Arc<dyn Store> = Arc::new(SqliteStore::connect(&url).await?);
    let ws = testkit::workspace(&*first, "shared", None, None).await?;
    let mut tasks = tokio::task::JoinSet::new();
    for (n, store) in [first.clone(), second.clone()].into_iter().enumerate() {
        tasks.spawn(async move {
            for i in 0..40i64 {
                let row = testkit::plain_endpoint(&format!("s{n}-{i}"), testkit::at(i));
                store.create_endpoints(ws.id, vec![row]).await?;
            }
            Ok::<(), StoreError>(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    assert_eq!(second.count_endpoints(ws.id).await?, 80);
    Ok(())
}

/// Reads every byte SQLite wrote (main file and WAL) for the canary test.
fn raw_dump(dir: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        all.extend(std::fs::read(entry?.path())?);
    }
    Ok(all)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_dump_holds_no_canary_secret() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("canary.db").display());
    let store = SqliteStore::connect(&url).await?;
    let canary = testkit::Canary::new();
    let ring = KeyRing::new(SecretKey::generate()?, vec![])?;
    let seal = |plain: &[u8], ws: Uuid, row: Uuid, field: SealedField| {
        let binding = Binding::new(ws.into_bytes(), row.into_bytes(), seal_field(field));
        ring.seal(plain, &binding).unwrap_or_default()
    };
    let hash = apidrift_seal::token::hash;
    let token_hash = canary.write(&store, &seal, &hash).await?;
    drop(store);
    let dump = raw_dump(dir.path())?;
    canary.assert_dump(&token_hash, |needle| contains(&dump, needle))?;
    Ok(())
}

/// Opens a backup copy without migrating it (it must already be complete).
async fn open_copy(path: &std::path::Path) -> Result<SqliteStore, StoreError> {
    SqliteStore::connect_with(
        &format!("sqlite://{}", path.display()),
        ConnectOptions {
            migrate: false,
            ..ConnectOptions::default()
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn backup_copies_every_committed_row_while_writers_continue() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("live.db").display());
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&url).await?);
    let ws = testkit::workspace(&*store, "live", None, None).await?;
    for i in 0..50i64 {
        let row = testkit::plain_endpoint(&format!("before-{i}"), testkit::at(i));
        store.create_endpoints(ws.id, vec![row]).await?;
    }
    // A writer keeps inserting while the backup runs.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let row = testkit::plain_endpoint(&format!("during-{n}"), testkit::at(1000 + n));
                store.create_endpoints(ws.id, vec![row]).await?;
                n += 1;
            }
            Ok::<i64, StoreError>(n)
        })
    };
    // Let the writer get going (its rows are committed one by one).
    while store.count_endpoints(ws.id).await? < 70 {
        tokio::task::yield_now().await;
    }
    let committed_before = store.count_endpoints(ws.id).await?;
    let target = dir.path().join("copy.db");
    store.backup_to(&target).await?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written_during = writer.await??;
    assert!(written_during > 0, "the writer never ran");
    let copy = open_copy(&target).await?;
    let copied = copy.count_endpoints(ws.id).await?;
    assert!(copied >= committed_before, "{copied} < {committed_before}");
    assert!(copied <= store.count_endpoints(ws.id).await?);
    assert_eq!(copy.list_workspaces().await?, vec![ws.clone()]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&target)?.permissions().mode() & 0o777,
            0o600
        );
    }
    // No partial file is left beside the copy.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".partial-"))
        .collect();
    assert!(leftovers.is_empty());

    // An existing file is never overwritten.
    let err = store.backup_to(&target).await.err();
    assert!(matches!(err, Some(StoreError::InvalidInput(ref m)) if m.contains("already exists")));
    assert_eq!(
        open_copy(&target).await?.count_endpoints(ws.id).await?,
        copied
    );
    // A folder that does not exist fails cleanly.
    let err = store
        .backup_to(&dir.path().join("missing-dir").join("x.db"))
        .await
        .err();
    assert!(err.is_some());
    Ok(())
}
