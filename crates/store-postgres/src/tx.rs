//! Transactions retried whole on a transient conflict (issue 23): [`transient`] tells a
//! deadlock or serialization failure, [`retrying!`] runs an operation again on one with the
//! policy of [`apidrift_store::retry`], and [`tx!`] / [`statement!`] are the two shapes every
//! write of this adapter takes. Declared before the other modules so that their macros are in
//! scope there.

/// Whether PostgreSQL aborted the whole transaction for a conflict that running it again may not
/// meet: a serialization failure (`40001`) or a deadlock (`40P01`). Both roll the transaction
/// back entirely, so it is safe to run again from the start.
///
/// The driver reports `40001` as [`DatabaseErrorKind::SerializationFailure`] but `40P01` only by
/// its message (diesel's error information carries no SQLSTATE): a server whose `lc_messages` is
/// not English reports deadlocks in its own language, which are then not retried (`ALTER ROLE …
/// SET lc_messages = 'C'` restores the retry; docs/storage.md).
///
/// [`DatabaseErrorKind::SerializationFailure`]: diesel::result::DatabaseErrorKind::SerializationFailure
pub(crate) fn transient(e: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error as D};
    match e {
        D::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => true,
        D::DatabaseError(_, info) => info.message() == DEADLOCK_MESSAGE,
        _ => false,
    }
}

/// PostgreSQL's message for SQLSTATE `40P01` (in the C and English locales).
const DEADLOCK_MESSAGE: &str = "deadlock detected";

/// Runs `$run` (an expression giving `Result<_, Error>`, e.g. an awaited transaction) and runs it
/// again while it fails with a [`transient`] conflict, up to
/// [`apidrift_store::retry::MAX_ATTEMPTS`] runs with a jittered pause between them. `$run` must
/// be one whole transaction or one auto-committed statement: a transient error means nothing of
/// it was written.
/// `retrying!(@raw …)` answers the adapter's own [`crate::Error`] (for a caller that tells some of
/// its errors apart), `retrying!(…)` a [`apidrift_store::StoreError`].
macro_rules! retrying {
    ($run:expr) => {
        retrying!(@raw $run).map_err(::apidrift_store::StoreError::from)
    };
    (@raw $run:expr) => {{
        let mut attempt = 1u32;
        loop {
            let result: ::std::result::Result<_, crate::Error> = $run;
            match result {
                Err(crate::Error::Db(e))
                    if attempt < ::apidrift_store::retry::MAX_ATTEMPTS && crate::tx::transient(&e) =>
                {
                    ::tokio::time::sleep(::apidrift_store::retry::backoff(attempt)).await;
                    attempt += 1;
                }
                other => break other,
            }
        }
    }};
}

/// Runs `$body` (an async block using `$c: &mut AsyncPgConnection`) in a transaction, retried
/// whole on a deadlock or serialization failure ([`retrying!`]).
/// `tx!(@raw …)` answers the adapter's own [`crate::Error`].
macro_rules! tx {
    ($self:ident, |$c:ident| $body:expr) => {
        tx!(@raw $self, |$c| $body).map_err(::apidrift_store::StoreError::from)
    };
    (@raw $self:ident, |$c:ident| $body:expr) => {
        retrying!(@raw
            async {
                let mut conn = $self.conn().await?;
                <::diesel_async::AsyncPgConnection as ::diesel_async::AsyncConnection>::transaction::<
                    _,
                    crate::Error,
                    _,
                >(&mut *conn, async |$c| $body)
                .await
            }
            .await
        )
    };
}

/// Runs `$body` on a pooled connection without a transaction, retried on a deadlock or
/// serialization failure: for a write that is ONE statement (its own transaction) and may lock
/// rows of several tables (a claim, a finish).
macro_rules! statement {
    ($self:ident, |$c:ident| $body:expr) => {
        retrying!(
            async {
                let mut conn = $self.conn().await?;
                let $c: &mut ::diesel_async::AsyncPgConnection = &mut conn;
                let out: crate::Result<_> = $body;
                out
            }
            .await
        )
    };
}
