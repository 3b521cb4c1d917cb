//! Raw SQL that SQLite compiles once per connection.
//!
//! diesel keeps the prepared statement of every query built with its DSL in the connection's
//! statement cache, but never the one of `diesel::sql_query`: its text may be built at run time,
//! so it is compiled again on every call (SQLite's parser and code generator, tens of
//! microseconds for an `INSERT … ON CONFLICT`). The statements of this adapter are constants:
//! [`cached`] takes a `&'static str` with `?` placeholders and binds exactly like `sql_query`, and
//! diesel caches its statement by its text. (Transactions stay diesel's: its batch inserts open
//! nested ones, which only its transaction manager tracks.)

use diesel::prelude::*;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};
use diesel::sqlite::Sqlite;
use std::marker::PhantomData;

/// A constant SQL text and its bind values, in placeholder order.
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

/// `sql` with `?` placeholders (and no `?` anywhere else: numbered `?1` forms are not
/// supported), as [`diesel::sql_query`]; a bind count that differs from the placeholders' is an
/// error when the statement runs.
pub(crate) fn cached(sql: &'static str) -> Cached<()> {
    Cached { sql, binds: () }
}

impl<B> Cached<B> {
    /// Binds the next placeholder, as `SqlQuery::bind`.
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

/// The bind values of a [`Cached`], pushed with the SQL text before each placeholder.
pub(crate) trait Binds {
    fn walk<'b>(
        &'b self,
        parts: &mut std::str::Split<'static, char>,
        out: &mut AstPass<'_, 'b, Sqlite>,
    ) -> QueryResult<()>;
}

impl Binds for () {
    fn walk<'b>(
        &'b self,
        _parts: &mut std::str::Split<'static, char>,
        _out: &mut AstPass<'_, 'b, Sqlite>,
    ) -> QueryResult<()> {
        Ok(())
    }
}

impl<B, ST, V> Binds for (B, Bound<ST, V>)
where
    B: Binds,
    Sqlite: HasSqlType<ST>,
    V: ToSql<ST, Sqlite>,
{
    fn walk<'b>(
        &'b self,
        parts: &mut std::str::Split<'static, char>,
        out: &mut AstPass<'_, 'b, Sqlite>,
    ) -> QueryResult<()> {
        self.0.walk(parts, out)?;
        let before = parts.next().ok_or_else(placeholders_mismatch)?;
        out.push_sql(before);
        // Writes the `?` back and collects the value.
        out.push_bind_param::<ST, V>(&self.1.value)
    }
}

fn placeholders_mismatch() -> diesel::result::Error {
    diesel::result::Error::QueryBuilderError(
        "a cached statement has a different number of placeholders and binds".into(),
    )
}

impl<B: Binds> QueryFragment<Sqlite> for Cached<B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        let mut parts = self.sql.split('?');
        self.binds.walk(&mut parts, &mut out)?;
        let rest = parts.next().ok_or_else(placeholders_mismatch)?;
        if parts.next().is_some() {
            return Err(placeholders_mismatch());
        }
        out.push_sql(rest);
        Ok(())
    }
}

// No static id: diesel keys the cached statement by its SQL text (and bind types).
impl<B> QueryId for Cached<B> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Cached<B> {
    type SqlType = Untyped;
}

impl<B, Conn> RunQueryDsl<Conn> for Cached<B> {}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::sql_types::{BigInt, Nullable, Text};

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[derive(QueryableByName, Debug, PartialEq)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        n: i64,
        #[diesel(sql_type = Nullable<Text>)]
        t: Option<String>,
    }

    fn conn() -> Result<SqliteConnection, Box<dyn std::error::Error>> {
        let mut c = SqliteConnection::establish(":memory:")?;
        cached("CREATE TABLE t (n INTEGER NOT NULL, t TEXT)").execute(&mut c)?;
        Ok(c)
    }

    #[test]
    fn binds_in_placeholder_order_and_loads_by_name() -> TestResult {
        let mut c = conn()?;
        for (n, t) in [(1, Some("a")), (2, None), (3, Some("c"))] {
            cached("INSERT INTO t (n, t) VALUES (?, ?)")
                .bind::<BigInt, _>(n)
                .bind::<Nullable<Text>, _>(t)
                .execute(&mut c)?;
        }
        let rows: Vec<Row> = cached("SELECT n, t FROM t WHERE n >= ? AND n <= ? ORDER BY n")
            .bind::<BigInt, _>(2)
            .bind::<BigInt, _>(3)
            .load(&mut c)?;
        assert_eq!(
            rows,
            vec![
                Row { n: 2, t: None },
                Row {
                    n: 3,
                    t: Some("c".into())
                }
            ]
        );
        Ok(())
    }

    #[test]
    fn a_bind_count_that_does_not_match_is_an_error_not_a_wrong_query() -> TestResult {
        let mut c = conn()?;
        let too_few = cached("INSERT INTO t (n, t) VALUES (?, ?)")
            .bind::<BigInt, _>(1)
            .execute(&mut c);
        assert!(too_few.is_err());
        let too_many = cached("INSERT INTO t (n) VALUES (?)")
            .bind::<BigInt, _>(1)
            .bind::<BigInt, _>(2)
            .execute(&mut c);
        assert!(too_many.is_err());
        let row: Row = cached("SELECT count(*) AS n, NULL AS t FROM t").get_result(&mut c)?;
        assert_eq!(row.n, 0);
        Ok(())
    }
}
