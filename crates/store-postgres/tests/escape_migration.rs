//! Migration `2026-11-22-100000_escape_nul` on data written before it: U+10FFFF stored as given
//! (the rule before the escape) reads back unchanged once the migration has doubled it, in text
//! columns, jsonb values and jsonb keys. Rows without U+10FFFF are left byte for byte.

use apidrift_store::testkit::{self, TestResult};
use apidrift_store::{ConnectOptions, Store};
use apidrift_store_postgres::PgStore;
use apidrift_store_postgres::testdb::TestDb;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use serde_json::json;

const UP: &str = include_str!("../../../migrations/postgres/2026-11-22-100000_escape_nul/up.sql");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_migration_keeps_values_written_before_it() -> TestResult {
    let Some(db) = TestDb::create().await? else {
        return Ok(());
    };
    let result = async {
        let options = ConnectOptions {
            migrate: true,
            max_connections: Some(2),
        };
        let store = PgStore::connect_with(&db.url, options).await?;
        let ws = testkit::workspace(&store, "old", None, None).await?;
        let e = testkit::endpoint_row("e", testkit::t0());
        let plain = testkit::endpoint_row("plain", testkit::t0());
        store
            .create_endpoints(ws.id, vec![e.clone(), plain.clone()])
            .await?;
        let b = store
            .record_baseline(ws.id, testkit::baseline(e.id, testkit::t0()), None)
            .await?;
        let c = testkit::check(e.id, testkit::at(1));
        store.record_check(ws.id, c.clone(), None).await?;

        // What an older version wrote: U+10FFFF as it is, next to a '0' and doubled.
        let old_tags = vec!["a\u{10FFFF}0".to_owned(), "\u{10FFFF}\u{10FFFF}".to_owned()];
        let old_shape = json!({"k\u{10FFFF}0": ["\u{10FFFF}", {"\u{10FFFF}": 1}], "plain": "x"});
        let old_message = "boom \u{10FFFF}0 \u{10FFFF}";
        let mut conn = AsyncPgConnection::establish(&db.url).await?;
        let sql = format!(
            "UPDATE endpoints SET tags = '{tags}'::jsonb WHERE id = '{e}'; \
             UPDATE baselines SET shape = '{shape}'::jsonb WHERE id = '{b}'; \
             UPDATE checks SET error_message = '{message}' WHERE id = '{c}';",
            tags = json!(old_tags),
            e = e.id,
            shape = old_shape,
            b = b.id,
            message = old_message,
            c = c.id,
        );
        conn.batch_execute(&sql).await?;
        let untouched = store.get_endpoint(ws.id, plain.id).await?;

        conn.batch_execute(UP).await?;

        let got = store
            .get_endpoint(ws.id, e.id)
            .await?
            .ok_or("endpoint missing")?;
        assert_eq!(got.settings.tags, old_tags);
        let got = store
            .active_baseline(ws.id, e.id)
            .await?
            .ok_or("baseline missing")?;
        assert_eq!(got.shape, old_shape);
        let got = store.get_check(ws.id, c.id).await?.ok_or("check missing")?;
        assert_eq!(got.error_message.as_deref(), Some(old_message));
        assert_eq!(store.get_endpoint(ws.id, plain.id).await?, untouched);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    db.drop_db().await?;
    result
}
