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

/// One statement of a [`pipeline`]: a diesel-async future made on a shared reference to the
/// connection (`&mut &AsyncPgConnection`), which diesel-async lets several of be in flight.
pub(crate) type Step<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = diesel::QueryResult<T>> + Send + 'a>>;

/// Runs `steps` pipelined on their one connection: they are polled together, first to last on
/// every wake, so their requests leave in this order without waiting for one another (one round
/// trip for the lot once their statements are prepared) and PostgreSQL runs them one after the
/// other in that order. Every step runs to its end, so no answer is left unread before a
/// rollback; the first error in order is the answer (the later ones are only "transaction
/// aborted").
pub(crate) async fn pipeline<T>(steps: Vec<Step<'_, T>>) -> diesel::QueryResult<Vec<T>> {
    use std::task::Poll;
    // Each step, until it answers, and its answer.
    type Slot<'a, T> = (Option<Step<'a, T>>, Option<diesel::QueryResult<T>>);
    let mut slots: Vec<Slot<'_, T>> = steps.into_iter().map(|s| (Some(s), None)).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (step, out) in &mut slots {
            if let Some(future) = step {
                match future.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        *out = Some(result);
                        *step = None;
                    }
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    slots
        .into_iter()
        .map(|(_, out)| {
            // `poll_fn` returned only once every step had its answer.
            out.unwrap_or_else(|| {
                Err(diesel::result::Error::QueryBuilderError(
                    "a pipelined step did not finish".into(),
                ))
            })
        })
        .collect()
}

/// Runs `a` and `b` pipelined, as [`pipeline`] does with steps of one type: `a` is polled first
/// on every wake (its request leaves first), and both run to their end.
pub(crate) async fn join2<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    use std::task::Poll;
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    let (mut out_a, mut out_b) = (None, None);
    std::future::poll_fn(|cx| {
        if out_a.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            out_a = Some(v);
        }
        if out_b.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            out_b = Some(v);
        }
        match (out_a.take(), out_b.take()) {
            (Some(x), Some(y)) => Poll::Ready((x, y)),
            (x, y) => {
                (out_a, out_b) = (x, y);
                Poll::Pending
            }
        }
    })
    .await
}
