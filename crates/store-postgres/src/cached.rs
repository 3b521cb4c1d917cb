//! Raw SQL that PostgreSQL parses and plans once per connection.
//!
//! diesel-async keeps a prepared statement per connection for every query built with diesel's
//! DSL, but never for `diesel::sql_query` (its text may be built at run time), so PostgreSQL
//! parsed and planned each raw statement again on every call: parsing and planning were about
//! 15 % of the machine's CPU in the check benchmark. The adapter's raw statements are constants:
//! [`cached`] takes a `&'static str` with `$1`, `$2`… placeholders (in any order, repeated as
//! often as the SQL needs) and binds exactly like `sql_query`; diesel-async prepares it once per
//! connection, keyed by its text.

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};
use diesel::{QueryResult, result::Error};
use std::marker::PhantomData;

/// A constant SQL text and its bind values, `$1` first.
#[must_use = "a query runs only with execute, load or get_result"]
pub(crate) struct Cached<B> {
    sql: &'static str,
    binds: B,
}

/// One bind value and its SQL type.
pub(crate) struct Bound<ST, V> {
    value: V,
    _type: PhantomData<ST>,
}

/// `sql` with `$n` placeholders (and no `$` anywhere else), as [`diesel::sql_query`]; a
/// placeholder without its bind is an error when the statement runs.
pub(crate) fn cached(sql: &'static str) -> Cached<()> {
    Cached { sql, binds: () }
}

impl<B> Cached<B> {
    /// Binds the next placeholder (`$1`, then `$2`…), as `SqlQuery::bind`.
    pub(crate) fn bind<ST, V>(self, value: V) -> Cached<(B, Bound<ST, V>)> {
        Cached {
            sql: self.sql,
            binds: (
                self.binds,
                Bound {
                    value,
                    _type: PhantomData,
                },
            ),
        }
    }
}

/// The bind values of a [`Cached`]: pushed by number, wherever the SQL refers to them.
pub(crate) trait Binds {
    /// How many values are bound.
    const LEN: usize;
    /// Pushes the value of placeholder `$index+1` (it is sent once per reference).
    fn push<'b>(&'b self, index: usize, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()>;
}

impl Binds for () {
    const LEN: usize = 0;
    fn push<'b>(&'b self, _index: usize, _out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        Err(unbound())
    }
}

impl<B, ST, V> Binds for (B, Bound<ST, V>)
where
    B: Binds,
    Pg: HasSqlType<ST>,
    V: ToSql<ST, Pg>,
{
    const LEN: usize = B::LEN + 1;
    fn push<'b>(&'b self, index: usize, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        if index + 1 == Self::LEN {
            // Writes `$k` (the next number of the statement sent) and collects the value.
            out.push_bind_param::<ST, V>(&self.1.value)
        } else {
            self.0.push(index, out)
        }
    }
}

fn unbound() -> Error {
    Error::QueryBuilderError("a cached statement refers to a placeholder that has no bind".into())
}

impl<B: Binds> QueryFragment<Pg> for Cached<B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let sql = self.sql;
        let bytes = sql.as_bytes();
        let mut used = vec![false; B::LEN];
        let (mut from, mut at) = (0, 0);
        while at < bytes.len() {
            if bytes[at] == b'$' {
                let digits = bytes[at + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits > 0 {
                    let number: usize = sql[at + 1..at + 1 + digits]
                        .parse()
                        .map_err(|_| unbound())?;
                    let index = number.checked_sub(1).ok_or_else(unbound)?;
                    out.push_sql(&sql[from..at]);
                    self.binds.push(index, &mut out)?;
                    if let Some(u) = used.get_mut(index) {
                        *u = true;
                    }
                    at += 1 + digits;
                    from = at;
                    continue;
                }
            }
            at += 1;
        }
        out.push_sql(&sql[from..]);
        if used.iter().any(|u| !u) {
            return Err(Error::QueryBuilderError(
                "a cached statement has a bind that no placeholder uses".into(),
            ));
        }
        Ok(())
    }
}

// No static id: diesel-async keys the prepared statement by its SQL text (and bind types).
impl<B> QueryId for Cached<B> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Cached<B> {
    type SqlType = Untyped;
}

// `execute`, `load` and `get_result` come from diesel-async's blanket `RunQueryDsl`.

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::sql_types::{BigInt, Text};

    fn sql_of<B: Binds>(q: &Cached<B>) -> QueryResult<String> {
        use diesel::query_builder::QueryBuilder;
        let mut builder = diesel::pg::PgQueryBuilder::default();
        q.to_sql(&mut builder, &Pg)?;
        Ok(builder.finish())
    }

    #[test]
    fn repeated_and_reordered_placeholders_are_sent_once_per_reference() -> QueryResult<()> {
        let q = cached("SELECT $2 WHERE $1 IS NULL OR $1 > $2")
            .bind::<BigInt, _>(7)
            .bind::<Text, _>("x");
        assert_eq!(sql_of(&q)?, "SELECT $1 WHERE $2 IS NULL OR $3 > $4");
        let shown = diesel::debug_query::<Pg, _>(&q).to_string();
        assert!(shown.contains(r#"["x", 7, 7, "x"]"#), "{shown}");
        Ok(())
    }

    #[test]
    fn a_missing_or_unused_bind_is_an_error() {
        let missing = cached("SELECT $1, $2").bind::<BigInt, _>(1);
        assert!(sql_of(&missing).is_err());
        let unused = cached("SELECT $1")
            .bind::<BigInt, _>(1)
            .bind::<BigInt, _>(2);
        assert!(sql_of(&unused).is_err());
        let zero = cached("SELECT $0").bind::<BigInt, _>(1);
        assert!(sql_of(&zero).is_err());
    }
}
