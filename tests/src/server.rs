//! Running `apidrift serve` for end-to-end tests, and a tiny HTTP/1.1 client with no
//! dependencies (one connection per request, `Connection: close`), so tests can send exactly the
//! bytes they mean (duplicated headers, wrong content types, oversized bodies).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Variables the binary reads; cleared so the developer's environment cannot leak into a test.
pub const CLEARED: &[&str] = &[
    "DATABASE_URL",
    "ENDPOINT_SECRET_KEY",
    "ENDPOINT_SECRET_KEY_PREVIOUS",
    "APIDRIFT_CONFIG",
    "APIDRIFT_DATABASE_URL",
    "APIDRIFT_SECRET_KEY_FILE",
    "APIDRIFT_SERVER__BIND",
    "APIDRIFT_LOG",
    "APIDRIFT_LOG_FORMAT",
    "APIDRIFT_METRICS__TOKEN",
    "APIDRIFT_WORKSPACE",
    "NO_COLOR",
];

/// A running `apidrift serve`. Its stdout and stderr are captured (see [`Server::output`]);
/// dropping it kills the process.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    output: Arc<Mutex<String>>,
    /// Standard error alone (the log).
    stderr: Arc<Mutex<String>>,
    /// The token printed by the first-run bootstrap, when it ran.
    pub bootstrap_token: Option<String>,
}

impl Server {
    /// Starts `apidrift serve --bind 127.0.0.1:0 --database-url URL EXTRA…` in `dir` with `env`
    /// and waits (up to 60 s) for its `listening on` line.
    pub fn start(
        dir: &std::path::Path,
        database_url: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Server, String> {
        let mut args = vec![
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--database-url",
            database_url,
        ];
        args.extend_from_slice(extra);
        Server::start_command(&args, dir, env)
    }

    /// Starts `apidrift ARGS…` (a command that serves, such as `serve` or `demo`) in `dir` with
    /// `env` and waits (up to 60 s) for its `listening on` line.
    pub fn start_command(
        args: &[&str],
        dir: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Result<Server, String> {
        let mut cmd = Command::new(crate::binary());
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in CLEARED {
            cmd.env_remove(name);
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start serve: {e}"))?;
        let output = Arc::new(Mutex::new(String::new()));
        let stderr_only = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        if let Some(stdout) = child.stdout.take() {
            let output = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    push(&output, &line);
                    let _ = tx.send(line);
                }
            });
        }
        if let Some(stderr) = child.stderr.take() {
            let output = output.clone();
            let only = stderr_only.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    push(&output, &line);
                    push(&only, &line);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut bootstrap_token = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if line.starts_with("svc_live_") {
                        bootstrap_token = Some(line.trim().to_owned());
                    }
                    if let Some(addr) = line.strip_prefix("apidrift: listening on http://") {
                        let addr = addr
                            .trim()
                            .parse()
                            .map_err(|e| format!("bad address line {line:?}: {e}"))?;
                        return Ok(Server {
                            child,
                            addr,
                            output,
                            stderr: stderr_only,
                            bootstrap_token,
                        });
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    std::thread::sleep(Duration::from_millis(100));
                    let text = output.lock().map(|o| o.clone()).unwrap_or_default();
                    return Err(format!("{args:?} did not start:\n{text}"));
                }
            }
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server wrote so far (stdout and stderr, line by line).
    pub fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// What the server wrote on standard error so far (its log), line by line.
    pub fn stderr_output(&self) -> String {
        self.stderr.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Sends SIGTERM and waits (up to `timeout`) for the process to exit; its exit status.
    pub fn terminate(&mut self, timeout: Duration) -> Result<std::process::ExitStatus, String> {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| format!("kill: {e}"))?;
        if !status.success() {
            return Err("kill -TERM failed".into());
        }
        self.wait_exit(timeout)
    }

    /// Waits (up to `timeout`) for the process to exit; its exit status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<std::process::ExitStatus, String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                return Err("serve did not stop".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A request to this server.
    pub fn request(&self, method: &str, path: &str) -> Request {
        Request {
            addr: self.addr,
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn push(output: &Mutex<String>, line: &str) {
    if let Ok(mut o) = output.lock() {
        o.push_str(line);
        o.push('\n');
    }
}

/// A request being built.
#[derive(Debug, Clone)]
pub struct Request {
    addr: SocketAddr,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// `Authorization: Bearer TOKEN`.
    pub fn bearer(self, token: &str) -> Self {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    /// A JSON body with `Content-Type: application/json`.
    pub fn json(self, body: &serde_json::Value) -> Self {
        self.header("Content-Type", "application/json")
            .body(body.to_string().into_bytes())
    }

    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// Sends the request and reads the whole response.
    pub fn send(&self) -> Result<Response, String> {
        let mut stream =
            TcpStream::connect(self.addr).map_err(|e| format!("connect {}: {e}", self.addr))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.method, self.path, self.addr
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.body.is_empty() || self.method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        // The server may answer (413, 401) and close before reading a large body: write on
        // another thread while this one reads, so the answer is read before the connection is
        // reset.
        let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
        let writing = std::thread::spawn(move || {
            let _ = writer.write_all(&bytes);
        });
        let mut raw = Vec::new();
        match stream.read_to_end(&mut raw) {
            Ok(_) => {}
            Err(e) if !raw.is_empty() => {
                let _ = e;
            }
            Err(e) => return Err(format!("read: {e}")),
        }
        let _ = writing.join();
        Response::parse(&raw)
    }
}

/// A response: status, headers (names lower-case) and body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    fn parse(raw: &[u8]) -> Result<Response, String> {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| format!("no header end in {:?}", String::from_utf8_lossy(raw)))?;
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
        if chunked {
            body = dechunk(&body);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        if size == 0 || data.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[(end + 4 + size).min(data.len())..];
    }
    out
}
