//! A per-test environment shared by the end-to-end suites that drive the CLI and `serve` against
//! one backend: a temp dir, a database (a SQLite file, or a fresh PostgreSQL database dropped on
//! drop), a sealing key, and the environment every command of the suite runs with.

use apidrift_e2e::binary;
use apidrift_e2e::server::{CLEARED, Server};
use apidrift_seal::SecretKey;
use apidrift_store_postgres::testdb::TestDb;
use serde_json::Value;
use std::error::Error;
use std::process::{Command, Output};

/// Runs a future to completion on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, Box<dyn Error>> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct Env {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub key: String,
    pg: Option<TestDb>,
    /// Variables every command and server of the suite gets.
    vars: &'static [(&'static str, &'static str)],
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(pg) = self.pg.take() {
            let _ = block_on(pg.drop_db());
        }
    }
}

impl Env {
    /// `None` when PostgreSQL is skipped (`APIDRIFT_SKIP_POSTGRES=1`).
    pub fn new(
        backend: Backend,
        vars: &'static [(&'static str, &'static str)],
    ) -> Result<Option<Env>, Box<dyn Error>> {
        let dir = tempfile::tempdir()?;
        let key = SecretKey::generate()?.to_base64().to_string();
        let (url, pg) = match backend {
            Backend::Sqlite => (
                format!("sqlite://{}", dir.path().join("apidrift.db").display()),
                None,
            ),
            Backend::Postgres => {
                let Some(pg) = block_on(TestDb::create())?.map_err(|e| e.to_string())? else {
                    return Ok(None);
                };
                (pg.url.clone(), Some(pg))
            }
        };
        Ok(Some(Env {
            dir,
            url,
            key,
            pg,
            vars,
        }))
    }

    /// The PostgreSQL test database (`None` on SQLite).
    pub fn pg(&self) -> Option<&TestDb> {
        self.pg.as_ref()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary());
        cmd.args(args)
            .args(apidrift_e2e::database_args(args, &self.url))
            .current_dir(self.dir.path());
        for name in CLEARED {
            cmd.env_remove(name);
        }
        cmd.env("ENDPOINT_SECRET_KEY", &self.key);
        cmd.envs(self.vars.iter().copied());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Result<Output, Box<dyn Error>> {
        Ok(self.command(args).output()?)
    }

    /// Creates a workspace named `w` (`create`: more flags of `workspace create`, e.g. `--plan
    /// starter`) and a token of it with `scopes` and `role`: (workspace id, token).
    pub fn workspace_and_token(
        &self,
        create: &[&str],
        scopes: &str,
        role: &str,
    ) -> Result<(String, String), Box<dyn Error>> {
        let mut args = vec!["workspace", "create", "--name", "w"];
        args.extend_from_slice(create);
        let ws = self.cli(&args)?["id"]
            .as_str()
            .ok_or("no workspace id")?
            .to_owned();
        let token = self.cli(&[
            "token",
            "create",
            "--workspace",
            &ws,
            "--scopes",
            scopes,
            "--role",
            role,
        ])?["token"]
            .as_str()
            .ok_or("no token")?
            .to_owned();
        Ok((ws, token))
    }

    /// Runs a command that must succeed and print JSON.
    pub fn cli(&self, args: &[&str]) -> Result<Value, Box<dyn Error>> {
        let out = self.run(args)?;
        if !out.status.success() {
            return Err(format!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// `serve --no-bootstrap` with the suite's variables, the key and `extra`.
    pub fn serve(&self, extra: &[(&str, &str)]) -> Result<Server, Box<dyn Error>> {
        let mut env: Vec<(&str, &str)> = self.vars.to_vec();
        env.push(("ENDPOINT_SECRET_KEY", &self.key));
        env.extend_from_slice(extra);
        Ok(Server::start(
            self.dir.path(),
            &self.url,
            &["--no-bootstrap"],
            &env,
        )?)
    }
}
