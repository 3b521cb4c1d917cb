//! The writer thread: every write of a file database runs on one connection owned by one thread,
//! and the writes that arrive while a transaction is open are committed together.
//!
//! SQLite has one writer at a time. Writers that each took a pooled connection and a
//! `BEGIN IMMEDIATE` of their own found the lock taken and waited in SQLite's busy handler (which
//! sleeps 1, 2, 5, 10… ms between tries instead of waking when the lock is free), and each paid a
//! commit and a hop to the blocking pool. Here a caller sends its closure and awaits the answer;
//! the thread takes every closure waiting (up to [`MAX_BATCH`]), runs them in ONE
//! `BEGIN IMMEDIATE` transaction, each inside its own savepoint, commits, and only then answers:
//! * a closure that fails is rolled back to its savepoint alone: the others still commit, and
//!   its caller gets its own error;
//! * when the transaction cannot begin or commit, every caller of the batch gets that error and
//!   nothing of the batch is written;
//! * a caller hears `Ok` only after the commit, so what it wrote is visible to every reader
//!   when it goes on.
//!
//! The transaction is diesel's (`immediate_transaction`, savepoints through `transaction`), so
//! its transaction manager stays the one that knows the depth (diesel's batch inserts nest).
//!
//! No deadlock retry (the PostgreSQL adapter retries `40P01`/`40001`, issue 23): SQLite has no row
//! locks, and `BEGIN IMMEDIATE` takes the database's one write lock before the first statement,
//! so two writers never hold parts of each other's locks and nothing can deadlock. `SQLITE_BUSY`
//! reaches a caller only when another process held the write lock longer than `busy_timeout`
//! (5 s) while this batch tried to begin; the batch then wrote nothing, and trying again would
//! only add another wait of the same length.

use crate::{Error, map_db};
use apidrift_store::StoreError;
use diesel::connection::Connection;
use diesel::sqlite::SqliteConnection;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use tokio::sync::oneshot;

/// Most writes committed in one transaction.
pub(crate) const MAX_BATCH: usize = 64;

/// What a job tells its caller once the batch's transaction ended: `Err` when it did not
/// commit.
type Finish = Box<dyn FnOnce(Result<(), &StoreError>) + Send>;
/// One write: run on the writer's connection inside the batch's transaction, or told that the
/// transaction could not begin (`None`, it must not run).
type Job = Box<dyn FnOnce(Option<&mut SqliteConnection>) -> Finish + Send>;

/// The handle of the writer thread. Cheap to clone; the thread stops when the last handle is
/// dropped.
#[derive(Clone)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl Writer {
    /// Starts the thread; `open` makes its connection (again after a closure panicked).
    pub(crate) fn start<O>(open: O) -> Result<Writer, StoreError>
    where
        O: Fn() -> Result<SqliteConnection, StoreError> + Send + 'static,
    {
        let conn = open()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("apidrift-sqlite-writer".into())
            .spawn(move || run(conn, &queue, &open))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the writer thread: {e}")))?;
        Ok(Writer { jobs })
    }

    /// Runs `f` in the next batch's transaction, in a savepoint of its own; answers after the
    /// commit.
    pub(crate) async fn write<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> crate::Result<R> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel::<Result<R, StoreError>>();
        let job: Job = Box::new(move |conn| {
            let outcome: Option<Result<R, StoreError>> =
                conn.map(|c| c.transaction::<R, Error, _>(f).map_err(StoreError::from));
            Box::new(move |batch| {
                let reply = match (batch, outcome) {
                    (Err(e), _) => Err(copy(e)),
                    (Ok(()), Some(own)) => own,
                    // Not run although the batch committed: cannot happen (a job is given no
                    // connection only when the transaction did not begin).
                    (Ok(()), None) => Err(StoreError::Database("the write did not run".into())),
                };
                // The caller may have gone (its request was cancelled): nothing to tell then.
                let _ = answer.send(reply);
            })
        });
        self.jobs.send(job).map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the database writer stopped; restart the service".into())
}

/// The same error for every caller of a failed batch.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::NotFound => StoreError::NotFound,
        StoreError::Conflict(m) => StoreError::Conflict(m.clone()),
        StoreError::InvalidInput(m) => StoreError::InvalidInput(m.clone()),
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        StoreError::Corrupt(m) => StoreError::Corrupt(m.clone()),
        StoreError::Database(m) => StoreError::Database(m.clone()),
        other => StoreError::Database(other.to_string()),
    }
}

fn run<O>(mut conn: SqliteConnection, queue: &mpsc::Receiver<Job>, open: &O)
where
    O: Fn() -> Result<SqliteConnection, StoreError>,
{
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut finishers: Vec<Finish> = Vec::with_capacity(batch.len());
        let mut pending = batch.into_iter();
        let ran = catch_unwind(AssertUnwindSafe(|| {
            conn.immediate_transaction::<(), diesel::result::Error, _>(|c| {
                for job in pending.by_ref() {
                    finishers.push(job(Some(c)));
                }
                Ok(())
            })
        }));
        let outcome = match ran {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(map_db(e)),
            Err(_) => {
                // A closure panicked inside the transaction (the panic hook has printed it): its
                // caller hears that the writer stopped (its answer was dropped), the batch is
                // abandoned, and a fresh connection replaces this one (closing it rolls back
                // what was open).
                match open() {
                    Ok(fresh) => conn = fresh,
                    Err(_) => return,
                }
                Err(StoreError::Database(
                    "the write was rolled back with another that failed; try again".into(),
                ))
            }
        };
        // Jobs the transaction never reached (it could not begin, or a panic stopped it).
        for job in pending {
            finishers.push(job(None));
        }
        let outcome = outcome.as_ref().map(|_| ());
        for finish in finishers {
            finish(outcome);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::prelude::*;
    use diesel::sql_types::BigInt;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    fn open(path: String) -> impl Fn() -> Result<SqliteConnection, StoreError> + Send + 'static {
        move || {
            let mut c = SqliteConnection::establish(&path)
                .map_err(|e| StoreError::Unavailable(e.to_string()))?;
            diesel::connection::SimpleConnection::batch_execute(
                &mut c,
                "PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS t (n INTEGER NOT NULL UNIQUE);",
            )
            .map_err(map_db)?;
            Ok(c)
        }
    }

    fn insert(n: i64) -> impl FnOnce(&mut SqliteConnection) -> crate::Result<usize> + Send {
        move |c| {
            Ok(crate::cached::cached("INSERT INTO t (n) VALUES (?)")
                .bind::<BigInt, _>(n)
                .execute(c)?)
        }
    }

    fn count(path: &str) -> Result<i64, Box<dyn std::error::Error>> {
        let mut c = SqliteConnection::establish(path)?;
        let row: N = crate::cached::cached("SELECT count(*) AS n FROM t").get_result(&mut c)?;
        Ok(row.n)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writes_all_commit_and_a_failing_one_fails_alone() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("w.db").to_string_lossy().into_owned();
        let writer = Writer::start(open(path.clone()))?;
        let mut tasks = Vec::new();
        for n in 0..200i64 {
            let w = writer.clone();
            tasks.push(tokio::spawn(async move { w.write(insert(n)).await }));
        }
        // Duplicates of 10 and 20 violate the unique index: they fail, nothing else does.
        for n in [10, 20] {
            let w = writer.clone();
            tasks.push(tokio::spawn(async move { w.write(insert(n)).await }));
        }
        let mut ok = 0;
        let mut conflicts = 0;
        for t in tasks {
            match t.await? {
                Ok(1) => ok += 1,
                Err(StoreError::Conflict(_)) => conflicts += 1,
                other => return Err(format!("unexpected {other:?}").into()),
            }
        }
        assert_eq!((ok, conflicts), (200, 2));
        assert_eq!(count(&path)?, 200);
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_comes_after_the_commit() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("w.db").to_string_lossy().into_owned();
        let writer = Writer::start(open(path.clone()))?;
        for n in 0..5 {
            writer.write(insert(n)).await?;
            // Another connection sees the row as soon as the write answered.
            assert_eq!(count(&path)?, n + 1);
        }
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_write_rolls_back_its_batch_and_the_writer_goes_on() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("w.db").to_string_lossy().into_owned();
        let writer = Writer::start(open(path.clone()))?;
        let panicked = writer
            .write(|c| {
                insert(1)(c)?;
                let rows: Vec<N> = crate::cached::cached("SELECT n FROM t").load(c)?;
                // Always true: the row was just inserted. The panic stands for a bug in a
                // closure.
                assert!(rows.is_empty(), "a closure that panics mid-transaction");
                Ok(())
            })
            .await;
        assert!(matches!(panicked, Err(StoreError::Unavailable(_))));
        assert_eq!(count(&path)?, 0);
        writer.write(insert(2)).await?;
        assert_eq!(count(&path)?, 1);
        Ok(())
    }
}
