//! Short reads on the calling thread (issue 29): each thread that reads a file database keeps a
//! read connection of its own to it, and a short read (a page, a lookup by key) runs right there
//! instead of being handed to the blocking pool and back. A SQLite page read takes tens of
//! microseconds; the two thread hand-offs cost more (the list route spent 49 % of its time in the
//! kernel switching threads, docs/operations.md).
//!
//! * One connection per (thread, store): an actix worker or a runtime thread opens its
//!   connection on its first short read of a store, set up like the pooled ones
//!   ([`crate::setup_connection`]). A connection whose store is gone (every clone dropped) is
//!   closed at that thread's next short read, or when the thread ends.
//! * Freshness: no connection holds a transaction between two reads (a read is one autocommit
//!   statement or one deferred transaction that ends with it), so in WAL mode every read starts a
//!   new snapshot and sees every commit that finished before it started, the writer thread's and
//!   other processes' alike.
//! * A read that panics drops its connection (it may be left inside a transaction) before the
//!   panic goes on.
//! * When the thread's connection is already in use (a read inside a read, which the adapter
//!   never does) or the thread is ending, the read goes to the pool as before ([`Outcome::Busy`]).
//!
//! The trade-off: the read blocks its thread, so a slow one (a cold cache, another process
//! checkpointing) delays that worker's other requests. Only reads bounded by an index and a page
//! size use it; exports and scans of a whole workspace stay on the pool (docs/storage.md).

use crate::Result;
use apidrift_store::StoreError;
use diesel::SqliteConnection;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Tells the stores apart in a thread's list of connections.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One thread's connection to one store's database.
struct Slot {
    id: u64,
    owner: Weak<Readers>,
    conn: SqliteConnection,
}

thread_local! {
    /// This thread's read connections, one per live store.
    static SLOTS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

/// The calling-thread readers of one store (shared by its clones).
#[derive(Debug)]
pub(crate) struct Readers {
    id: u64,
    path: String,
}

/// What [`Readers::with`] did.
pub(crate) enum Outcome<R, F> {
    /// The read ran on this thread (or its connection could not be opened).
    Done(Result<R, StoreError>),
    /// This thread's connection is in use or gone: run `F` elsewhere.
    Busy(F),
}

impl Readers {
    /// The readers of the database file at `path`.
    pub(crate) fn new(path: String) -> Arc<Readers> {
        Arc::new(Readers {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            path,
        })
    }

    /// Runs `f` on this thread's connection to the database, opening it on first use.
    pub(crate) fn with<R, F>(self: &Arc<Self>, f: F) -> Outcome<R, F>
    where
        F: FnOnce(&mut SqliteConnection) -> Result<R>,
    {
        let mut f = Some(f);
        let ran = SLOTS.try_with(|cell| {
            let Ok(mut slots) = cell.try_borrow_mut() else {
                return None;
            };
            let f = f.take()?;
            // Close the connections of stores that are gone.
            slots.retain(|s| s.owner.strong_count() > 0);
            let index = match slots.iter().position(|s| s.id == self.id) {
                Some(i) => i,
                None => match crate::setup_connection(&self.path) {
                    Ok(conn) => {
                        slots.push(Slot {
                            id: self.id,
                            owner: Arc::downgrade(self),
                            conn,
                        });
                        slots.len() - 1
                    }
                    Err(e) => return Some(Err(StoreError::Unavailable(e.to_string()))),
                },
            };
            let conn = &mut slots[index].conn;
            match catch_unwind(AssertUnwindSafe(|| f(conn))) {
                Ok(result) => Some(result.map_err(StoreError::from)),
                Err(panic) => {
                    // It may have stopped inside a transaction: never reuse it.
                    slots.swap_remove(index);
                    drop(slots);
                    resume_unwind(panic)
                }
            }
        });
        match (ran, f) {
            (Ok(Some(result)), _) => Outcome::Done(result),
            (_, Some(f)) => Outcome::Busy(f),
            // `f` was taken only on the path that returns `Some`.
            (_, None) => Outcome::Done(Err(StoreError::Unavailable(
                "the thread's read connection was lost".into(),
            ))),
        }
    }

    /// How many read connections this thread holds (all stores).
    #[cfg(test)]
    pub(crate) fn open_here() -> usize {
        SLOTS.with(|cell| cell.borrow().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn temp_db() -> std::io::Result<(tempfile::TempDir, String)> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.db").to_string_lossy().into_owned();
        Ok((dir, path))
    }

    fn done<R, F>(o: Outcome<R, F>) -> Result<R, StoreError> {
        match o {
            Outcome::Done(r) => r,
            Outcome::Busy(_) => Err(StoreError::Unavailable("busy".into())),
        }
    }

    fn select_one(c: &mut SqliteConnection) -> Result<()> {
        Ok(c.batch_execute("SELECT 1")?)
    }

    #[test]
    fn one_connection_per_thread_and_store_closed_with_the_store() -> TestResult {
        let (_dir, path) = temp_db()?;
        let a = Readers::new(path.clone());
        let b = Readers::new(path);
        let before = Readers::open_here();
        for _ in 0..3 {
            done(a.with(select_one))?;
        }
        done(b.with(select_one))?;
        assert_eq!(Readers::open_here(), before + 2);
        drop(b);
        done(a.with(select_one))?;
        assert_eq!(Readers::open_here(), before + 1);
        Ok(())
    }

    #[test]
    fn a_read_inside_a_read_goes_elsewhere() -> TestResult {
        let (_dir, path) = temp_db()?;
        let a = Readers::new(path);
        let inner_busy = done(a.with(|_| {
            let inner = a.with(|_| Ok(()));
            Ok(matches!(inner, Outcome::Busy(_)))
        }))?;
        assert!(inner_busy);
        Ok(())
    }

    #[test]
    fn a_panicking_read_drops_its_connection() -> TestResult {
        let (_dir, path) = temp_db()?;
        let a = Readers::new(path);
        done(a.with(select_one))?;
        let before = Readers::open_here();
        let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let _ = a.with(|c| -> Result<()> {
                c.batch_execute("BEGIN")?;
                std::panic::resume_unwind(Box::new("inside a transaction"))
            });
        }));
        assert!(panicked.is_err());
        assert_eq!(Readers::open_here(), before - 1);
        // The next read opens a fresh connection, outside any transaction.
        done(a.with(|c| Ok(c.batch_execute("BEGIN; COMMIT")?)))?;
        Ok(())
    }
}
