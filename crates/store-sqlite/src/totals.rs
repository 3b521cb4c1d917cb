//! Counting: SQL counts as `u64`, the trigger-kept row counts of a workspace and page totals.
//! Statements of the SQLite adapter over one connection; the caller picks the transaction.

use crate::Result;
use crate::rows::id;
use crate::schema::workspace_counts;
use apidrift_store::PageRequest;
use diesel::prelude::*;
use uuid::Uuid;

pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(crate) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The trigger-kept row counts of a workspace: (endpoints, diffs, breaking diffs).
pub(crate) fn counts(c: &mut SqliteConnection, ws: Uuid) -> Result<(u64, u64, u64)> {
    let row: Option<(i64, i64, i64)> = workspace_counts::table
        .find(id(ws))
        .select((
            workspace_counts::endpoints,
            workspace_counts::diffs,
            workspace_counts::breaking_diffs,
        ))
        .first(c)
        .optional()?;
    Ok(row
        .map(|(e, d, b)| (count(e), count(d), count(b)))
        .unwrap_or((0, 0, 0)))
}

/// The total without a second statement when the page itself proves it.
pub(crate) fn known_total(page: PageRequest, len: usize) -> Option<u64> {
    let len = len as u64;
    if (len > 0 || page.offset == 0) && len < u64::from(page.limit) {
        Some(page.offset + len)
    } else {
        None
    }
}
