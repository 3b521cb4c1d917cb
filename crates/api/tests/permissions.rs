//! The one permission table (`apidrift_app::actions`) walked against what the service answers and
//! what the documentation says.
//!
//! The routes tables of docs/api.md (every route) and docs/console.md (every console form that
//! performs an action) list each route's scope, weakest role and rate class. For each row this
//! test sends requests (in process, SQLite) and checks that:
//! * the route lets exactly one action through (`Performed`), whose rule in the table is the
//!   row's scope, role and class;
//! * a token without the row's scope gets `403 token lacks scope …`; a token or a session with the
//!   role just below the row's gets `403 role … cannot <the action's verb>`; one with the row's
//!   role passes, and the answer's `RateLimit-Policy` names the row's class;
//! * every operation of `/openapi.json` has a row (with the scope its `security` names), and every
//!   action of the table is performed by some row.

use actix_web::HttpMessage as _;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as _, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::test::{self, TestRequest};
use apidrift_api::{AppState, Performed, Quota, RateLimits, create_app};
use apidrift_app::{Action, Actor, MintToken, RateClass, Service};
use apidrift_model::net::AllowList;
use apidrift_model::{Plan, Role, Scope};
use apidrift_seal::{KeyRing, SecretKey};
use apidrift_store::{NewWorkspace, Store, new_id};
use apidrift_store_sqlite::SqliteStore;
use std::collections::{BTreeSet, HashMap};
use std::error::Error;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

type TestResult = Result<(), Box<dyn Error>>;

const ROLES: [Role; 4] = [Role::Viewer, Role::Member, Role::Admin, Role::Owner];

/// Who a row lets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// No credential.
    Public,
    /// A bearer token with this scope.
    Token(Scope),
    /// A console session (cookie and CSRF token).
    Session,
}

/// One row of a routes table.
#[derive(Debug, Clone)]
struct Row {
    method: Method,
    path: String,
    who: Who,
    role: Option<Role>,
    class: Option<RateClass>,
}

fn class_named(name: &str) -> Option<RateClass> {
    [RateClass::Reads, RateClass::Checks, RateClass::Creates]
        .into_iter()
        .find(|c| c.as_str() == name)
}

/// The rows of the table headed `| Method | Path | Scope | Weakest role | Rate class |` in the
/// document at `path` (relative to the workspace root).
fn routes_table(path: &str) -> Result<Vec<Row>, Box<dyn Error>> {
    let file = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file)?;
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.trim() == "| Method | Path | Scope | Weakest role | Rate class |")
        .ok_or_else(|| format!("{path}: no routes table"))?;
    lines.next(); // |---|…
    let mut rows = Vec::new();
    for line in lines.take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, method, route, scope, role, class, ..] = cells[..] else {
            return Err(format!("{path}: a row with too few cells: {line}").into());
        };
        let who = if scope == "session" {
            Who::Session
        } else if let Some(name) = scope.strip_prefix('`').and_then(|s| s.strip_suffix('`')) {
            Who::Token(name.parse().map_err(|_| format!("{path}: scope {name}"))?)
        } else if scope.starts_with("none") {
            Who::Public
        } else {
            return Err(format!("{path}: unknown scope cell {scope:?}").into());
        };
        let role = match role {
            "" => None,
            r => Some(r.parse().map_err(|_| format!("{path}: role {r:?}"))?),
        };
        let class = class.split_whitespace().next().and_then(class_named);
        if who != Who::Public && (role.is_none() || class.is_none()) {
            return Err(format!("{path}: a role and a class are required: {line}").into());
        }
        rows.push(Row {
            method: method.parse()?,
            path: route.trim_matches('`').to_owned(),
            who,
            role,
            class,
        });
    }
    Ok(rows)
}

/// A workspace with a key, a service over it, generous rate limits, and a signed-in user of each
/// role.
struct World {
    _dir: tempfile::TempDir,
    service: Arc<Service>,
    ws: Uuid,
    /// Per role: the session cookie value and its CSRF token.
    sessions: HashMap<Role, (String, String)>,
}

async fn world() -> Result<World, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("permissions.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&path.to_string_lossy()).await?);
    let ws = store
        .create_workspace(NewWorkspace {
            id: new_id(),
            name: "perm".into(),
            plan: Plan::Enterprise,
            endpoint_limit: None,
            check_quota: None,
            created_at: OffsetDateTime::now_utc(),
        })
        .await?
        .id;
    let keys = KeyRing::new(SecretKey::generate()?, Vec::new())?;
    let service = Arc::new(Service::new(store, Some(keys), AllowList::default())?);
    let mut sessions = HashMap::new();
    for role in ROLES {
        let user = service
            .create_user(
                &format!("{role}@example.com"),
                "a long enough password",
                ws,
                role,
            )
            .await?;
        let cookie = service.start_session(user.user_id, ws).await?;
        let stored = service
            .find_session(&cookie)
            .await?
            .ok_or("the session just started is not found")?;
        sessions.insert(role, (cookie, stored.csrf_token));
    }
    Ok(World {
        _dir: dir,
        service,
        ws,
        sessions,
    })
}

impl World {
    async fn token(&self, role: Role, scopes: Vec<Scope>) -> Result<String, Box<dyn Error>> {
        let minted = self
            .service
            .mint_token(
                &Actor::operator(self.ws),
                MintToken {
                    name: "perm".into(),
                    scopes,
                    role,
                    expires_in_days: None,
                },
            )
            .await?;
        Ok(minted.expose().to_owned())
    }

    /// Sends `req` to a fresh app whose budgets never run out here.
    async fn send(&self, req: TestRequest) -> ServiceResponse<impl MessageBody> {
        let q = Quota::per_minute(1_000_000);
        let limits = RateLimits {
            reads: q,
            checks: q,
            creates: q,
            unauthenticated: q,
        };
        let state = AppState::new(self.service.clone(), limits);
        let doc = Arc::new(apidrift_api::openapi::document_bytes());
        let app = test::init_service(create_app(state, doc)).await;
        match app.call(req.to_request()).await {
            Ok(res) => res,
            Err(e) => panic!("the app failed instead of answering: {e}"),
        }
    }

    /// A request of `row` as `who` would send it: the path's ids made up, a body that passes
    /// the checks made before the action's (CSRF, content type, the import form's methods).
    fn request(&self, row: &Row, credential: Credential<'_>) -> TestRequest {
        let path = row.path.replace("{id}", &Uuid::now_v7().to_string());
        let req = TestRequest::default()
            .method(row.method.clone())
            .uri(&path)
            .insert_header((header::HOST, "localhost"));
        match credential {
            Credential::Bearer(token) => req
                .insert_header((header::AUTHORIZATION, format!("Bearer {token}")))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .set_payload("{}"),
            Credential::Session(role) => {
                let (cookie, csrf) = &self.sessions[&role];
                let req = req
                    .insert_header((header::ORIGIN, "http://localhost"))
                    .insert_header((header::COOKIE, format!("apidrift_session={cookie}")));
                if row.path.starts_with("/console/") {
                    req.insert_header((header::CONTENT_TYPE, "application/x-www-form-urlencoded"))
                        .set_payload(format!("_csrf={csrf}&methods=GET&document=x"))
                } else {
                    req.insert_header(("X-CSRF-Token", csrf.as_str()))
                        .insert_header((header::CONTENT_TYPE, "application/json"))
                        .set_payload(r#"{"document": {}}"#)
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Credential<'a> {
    Bearer(&'a str),
    Session(Role),
}

async fn body_text(res: ServiceResponse<impl MessageBody>) -> String {
    let bytes = test::read_body(res).await;
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The role just below `role`, if any.
fn below(role: Role) -> Option<Role> {
    let i = ROLES.iter().position(|r| *r == role)?;
    i.checked_sub(1).map(|i| ROLES[i])
}

/// Walks one row; returns the action it performs.
async fn walk(w: &World, doc: &str, row: &Row) -> Result<Action, Box<dyn Error>> {
    let here = format!("{doc}: {} {}", row.method, row.path);
    let (Some(role), Some(class)) = (row.role, row.class) else {
        return Err(format!("{here}: no role or class").into());
    };
    // At the row's role (and scope): let through for exactly one action, spending its class.
    let at = match row.who {
        Who::Token(scope) => {
            let token = w.token(role, vec![scope]).await?;
            w.send(w.request(row, Credential::Bearer(&token))).await
        }
        Who::Session => w.send(w.request(row, Credential::Session(role))).await,
        Who::Public => return Err(format!("{here}: public").into()),
    };
    let status = at.status().as_u16();
    let performed = at.request().extensions().get::<Performed>().cloned();
    let policy = at
        .headers()
        .get("RateLimit-Policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = body_text(at).await;
    assert!(
        status != 401 && status != 403,
        "{here}: refused at the documented role {role}: {status} {text}"
    );
    let Some(Performed(actions)) = performed else {
        return Err(format!("{here}: no action was checked ({status} {text})").into());
    };
    let [action] = actions[..] else {
        return Err(format!("{here}: not exactly one action: {actions:?}").into());
    };
    let rule = action.rule();
    assert_eq!(rule.min_role, role, "{here}: {action:?}'s role");
    assert_eq!(rule.class, class, "{here}: {action:?}'s class");
    if let Who::Token(scope) = row.who {
        assert_eq!(rule.scope, Some(scope), "{here}: {action:?}'s scope");
    }
    assert!(
        policy.starts_with(&format!("\"{}\";", class.as_str())),
        "{here}: RateLimit-Policy {policy:?} is not the {} class",
        class.as_str()
    );
    // Without the scope (every other one, the strongest role): refused naming it.
    if let Who::Token(scope) = row.who {
        let others: Vec<Scope> = Scope::ALL.iter().copied().filter(|s| *s != scope).collect();
        let token = w.token(Role::Owner, others).await?;
        let res = w.send(w.request(row, Credential::Bearer(&token))).await;
        assert_eq!(res.status().as_u16(), 403, "{here}: without {scope}");
        let text = body_text(res).await;
        assert!(
            text.contains(&format!("token lacks scope {scope}")),
            "{here}: without {scope}: {text}"
        );
    }
    // One role below: refused with the action's verb.
    if let Some(weaker) = below(role) {
        let res = match row.who {
            Who::Token(scope) => {
                let token = w.token(weaker, vec![scope]).await?;
                w.send(w.request(row, Credential::Bearer(&token))).await
            }
            _ => w.send(w.request(row, Credential::Session(weaker))).await,
        };
        assert_eq!(res.status().as_u16(), 403, "{here}: as {weaker}");
        let text = body_text(res).await;
        let expected = format!("role {weaker} cannot {}", rule.verb);
        assert!(text.contains(&expected), "{here}: as {weaker}: {text}");
    }
    Ok(action)
}

#[actix_web::test]
async fn routes_forms_docs_and_the_action_table_agree() -> TestResult {
    let w = world().await?;
    let api = routes_table("docs/api.md")?;
    let console = routes_table("docs/console.md")?;

    // Every operation of /openapi.json has exactly one row of docs/api.md, with its scope.
    let doc = apidrift_api::openapi::document();
    let doc = serde_json::to_value(&doc)?;
    let paths = doc["paths"].as_object().ok_or("no paths")?;
    let mut operations = BTreeSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().ok_or("a path item")? {
            let method: Method = method.to_uppercase().parse()?;
            let rows: Vec<&Row> = api
                .iter()
                .filter(|r| r.method == method && &r.path == path)
                .collect();
            let [row] = rows[..] else {
                return Err(format!("{method} {path}: {} rows in docs/api.md", rows.len()).into());
            };
            let security = &op["security"][0];
            let expected = match row.who {
                Who::Public => serde_json::Value::Null,
                Who::Token(scope) => serde_json::json!({ "bearer": [scope.to_string()] }),
                Who::Session => serde_json::json!({ "session": [] }),
            };
            assert_eq!(security, &expected, "{method} {path}: security");
            operations.insert((method.to_string(), path.clone()));
        }
    }
    for row in api.iter().filter(|r| r.who != Who::Public) {
        assert!(
            operations.contains(&(row.method.to_string(), row.path.clone())),
            "docs/api.md: {} {} is not in /openapi.json",
            row.method,
            row.path
        );
    }

    // Every row with credentials performs one action of the table, as documented.
    let mut used = BTreeSet::new();
    for (doc, rows) in [("docs/api.md", &api), ("docs/console.md", &console)] {
        for row in rows.iter().filter(|r| r.who != Who::Public) {
            let action = walk(&w, doc, row).await?;
            used.insert(action.name());
        }
    }
    let all: BTreeSet<&str> = Action::ALL.iter().map(|a| a.name()).collect();
    let unused: Vec<&&str> = all.difference(&used).collect();
    assert!(unused.is_empty(), "actions no route performs: {unused:?}");
    Ok(())
}
