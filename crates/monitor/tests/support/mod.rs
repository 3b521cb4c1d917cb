//! Shared test helpers: a raw loopback server, a lookup-counting stub resolver and a dialer that
//! records every address it is asked to dial.

#![allow(dead_code, reason = "each test binary uses a subset")]

use apidrift_model::net::AllowList;
use apidrift_monitor::{Client, ClientBuilder, Dialer, Limits, Resolver, TcpDialer};
use async_trait::async_trait;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A loopback server that runs `handler` for every accepted connection.
pub struct Server {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start<F, Fut>(handler: F) -> io::Result<Server>
    where
        F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let handler = Arc::new(handler);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let h = handler.clone();
                tokio::spawn(async move { h(stream).await });
            }
        });
        Ok(Server { addr, hits, task })
    }

    /// A server answering every request with the same raw bytes, recording each request head.
    pub async fn fixed(response: Vec<u8>) -> io::Result<(Server, Arc<Mutex<Vec<String>>>)> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let response = Arc::new(response);
        let server = Server::start(move |mut s| {
            let log = log.clone();
            let response = response.clone();
            async move {
                if let Ok(head) = read_request(&mut s).await {
                    if let Ok(mut l) = log.lock() {
                        l.push(head);
                    }
                    let _ = s.write_all(&response).await;
                    let _ = s.shutdown().await;
                }
            }
        })
        .await?;
        Ok((server, seen))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Reads one request (head and a `Content-Length` body) and returns it as text.
pub async fn read_request(s: &mut TcpStream) -> io::Result<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A complete HTTP/1.1 response with a body.
pub fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

pub fn json_ok(body: &str) -> Vec<u8> {
    response(
        "200 OK",
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
}

/// How the stub resolver answers a name.
#[derive(Debug, Clone)]
pub enum Answer {
    Addrs(Vec<IpAddr>),
    /// Successive lookups get successive answers (the last one repeats): DNS rebinding.
    Sequence(Vec<Vec<IpAddr>>),
    NxDomain,
    Hang,
}

/// A resolver that answers from a table and counts lookups.
#[derive(Debug, Default)]
pub struct StubResolver {
    table: Mutex<HashMap<String, Answer>>,
    pub lookups: AtomicUsize,
}

impl StubResolver {
    pub fn new(entries: &[(&str, Answer)]) -> Arc<StubResolver> {
        Arc::new(StubResolver {
            table: Mutex::new(
                entries
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            ),
            lookups: AtomicUsize::new(0),
        })
    }

    pub fn count(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Resolver for StubResolver {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        let n = self.lookups.fetch_add(1, Ordering::SeqCst);
        let answer = self
            .table
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .get(host)
            .cloned()
            .unwrap_or(Answer::NxDomain);
        match answer {
            Answer::Addrs(a) => Ok(a),
            Answer::Sequence(seq) => Ok(seq
                .get(n.min(seq.len().saturating_sub(1)))
                .cloned()
                .unwrap_or_default()),
            Answer::NxDomain => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no such host (NXDOMAIN)",
            )),
            Answer::Hang => {
                std::future::pending::<()>().await;
                Ok(Vec::new())
            }
        }
    }
}

/// What the recording dialer does once it has recorded the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialMode {
    /// Really connect (loopback test servers).
    Connect,
    /// Answer "connection refused" without touching the network.
    Refuse,
    /// Never answer: a black-holed SYN.
    BlackHole,
}

/// A dialer that records every address it is asked to dial.
#[derive(Debug)]
pub struct RecordingDialer {
    pub dialled: Mutex<Vec<SocketAddr>>,
    pub mode: DialMode,
}

impl RecordingDialer {
    pub fn new(mode: DialMode) -> Arc<RecordingDialer> {
        Arc::new(RecordingDialer {
            dialled: Mutex::new(Vec::new()),
            mode,
        })
    }

    pub fn dialled(&self) -> Vec<SocketAddr> {
        self.dialled.lock().map(|d| d.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Dialer for RecordingDialer {
    async fn dial(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        if let Ok(mut d) = self.dialled.lock() {
            d.push(addr);
        }
        match self.mode {
            DialMode::Connect => TcpDialer.dial(addr).await,
            DialMode::Refuse => Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "refused by the test dialer",
            )),
            DialMode::BlackHole => {
                std::future::pending::<()>().await;
                Err(io::Error::other("unreachable"))
            }
        }
    }
}

/// The allow-list the loopback tests use.
pub fn loopback() -> AllowList {
    AllowList::parse("127.0.0.0/8").unwrap_or_default()
}

/// Short limits so that every failure case finishes in well under a second.
pub fn short_limits() -> Limits {
    Limits {
        dns_timeout: Duration::from_millis(200),
        connect_timeout: Duration::from_millis(200),
        ..Limits::default()
    }
}

/// A client for loopback tests: allow-list 127.0.0.0/8, short limits, the given resolver.
pub fn builder(allow: AllowList, resolver: Arc<StubResolver>) -> ClientBuilder {
    Client::builder(allow)
        .resolver(resolver)
        .limits(short_limits())
        .webpki_roots(false)
}

pub fn loopback_client() -> Result<Client, apidrift_monitor::FetchError> {
    builder(loopback(), StubResolver::new(&[])).build()
}
