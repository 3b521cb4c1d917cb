//! The SSRF-safe outbound client (D14): every request is sent only to an address it checked
//! against the policy itself, with the whole exchange under one deadline.
//!
//! Each request goes: policy check of the URL (the same `Url` that was validated) → IP literal
//! canonicalised and judged, or the name judged, resolved once (with a timeout) and every answer
//! judged (one blocked answer refuses the request) → an idle connection to one of those checked
//! addresses, or TCP to the checked addresses only (no second lookup) → TLS (rustls, ring,
//! TLS 1.2/1.3, webpki roots) → HTTP/1.1 (hyper) with bounded header count and size → body read
//! and decoded into a buffer capped at 10 MiB after decompression.
//!
//! Keep-alive ([`KeepAlive`], on by default): a GET or HEAD may reuse an idle connection only
//! when its pool key matches — the workspace the request is made for ([`FetchRequest::workspace`];
//! requests made for no workspace share only among themselves), scheme, host as written in the
//! URL (for https, the TLS server name the connection was verified for) and port — and the
//! address it is connected to is one of the addresses this request has just checked. The lookup
//! and the judgement happen on every request, reused connection or not, so an answer that
//! changed or is now refused is never served by an older connection. A connection goes back to
//! the pool only after its response was read completely within the caps, from an HTTP/1.1
//! response without `Connection: close`, and only while no byte is waiting on it: a byte that
//! arrives on an idle connection (read by hyper or still in the socket, which is peeked right
//! before reuse) means the upstream sent something nobody asked for, and the connection is
//! closed instead of reused. Any failure drops a connection. A request that fails on a reused
//! connection before any response arrives (the upstream closed it while idle) is sent once more
//! on a fresh connection. Other methods always dial a fresh connection and close it. Idle
//! connections expire after [`IDLE_TIMEOUT`]; at most [`MAX_IDLE_PER_KEY`] per key and
//! [`MAX_IDLE_TOTAL`] in all are kept.
//! No proxy variables are read and no cookie is kept.

use crate::body::BodyDecoder;
use crate::error::{FetchError, FetchErrorKind};
use crate::resolve::{Dialer, Resolver, SystemResolver, TcpDialer};
use apidrift_model::HttpMethod;
use apidrift_model::net::{self, AllowList, UrlError};
use apidrift_model::validate::{Credential, ExtraHeader};
use base64::Engine as _;
use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use url::{Host, Url};
use uuid::Uuid;

/// Largest body kept, after decompression (D8).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Most redirects followed when an endpoint allows them (D14).
pub const MAX_REDIRECTS: u8 = 5;
/// Most response headers accepted.
pub const MAX_RESPONSE_HEADERS: usize = 100;
/// Largest response head (status line and headers), in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Bound of one name resolution.
pub const DNS_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound of one TCP connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Sent as `User-Agent` unless the endpoint sets its own.
pub const USER_AGENT: &str = concat!("apidrift/", env!("CARGO_PKG_VERSION"));
/// How long an idle connection is kept for reuse.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most idle connections kept per pool key (scheme, host, port).
pub const MAX_IDLE_PER_KEY: usize = 4;
/// Most idle connections kept in all.
pub const MAX_IDLE_TOTAL: usize = 256;
/// Longest wait, after a response was read, for its connection to accept the next request;
/// one that is not ready by then is closed rather than pooled.
const READY_WAIT: Duration = Duration::from_millis(100);

/// Limits of the client; [`Limits::default`] has the D8/D14 figures. Tests shrink them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_redirects: u8,
    pub max_headers: usize,
    pub max_head_bytes: usize,
    pub dns_timeout: Duration,
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: MAX_BODY_BYTES,
            max_redirects: MAX_REDIRECTS,
            max_headers: MAX_RESPONSE_HEADERS,
            max_head_bytes: MAX_HEAD_BYTES,
            dns_timeout: DNS_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
        }
    }
}

/// Connection reuse of the client; [`KeepAlive::default`] is on with [`IDLE_TIMEOUT`],
/// [`MAX_IDLE_PER_KEY`] and [`MAX_IDLE_TOTAL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// Whether GET and HEAD may reuse an idle connection (off: every request dials).
    pub enabled: bool,
    /// An idle connection older than this is closed instead of reused.
    pub idle_timeout: Duration,
    /// Most idle connections kept per scheme, host and port (the oldest is closed first).
    pub max_idle_per_key: usize,
    /// Most idle connections kept in all (the oldest is closed first).
    pub max_idle_total: usize,
}

impl Default for KeepAlive {
    fn default() -> Self {
        KeepAlive {
            enabled: true,
            idle_timeout: IDLE_TIMEOUT,
            max_idle_per_key: MAX_IDLE_PER_KEY,
            max_idle_total: MAX_IDLE_TOTAL,
        }
    }
}

impl KeepAlive {
    /// No reuse: one fresh connection per request.
    pub fn disabled() -> KeepAlive {
        KeepAlive {
            enabled: false,
            ..KeepAlive::default()
        }
    }
}

/// One outbound request.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The URL as the policy parsed it ([`Client::check_url`] or `net::check_url`).
    pub url: Url,
    pub method: HttpMethod,
    pub credential: Credential,
    /// Extra request headers (the endpoint's `headers`).
    pub headers: Vec<ExtraHeader>,
    /// Sent for methods other than GET and HEAD.
    pub body: Option<Vec<u8>>,
    /// `Content-Type` of `body`.
    pub content_type: Option<String>,
    /// Bounds the whole exchange: DNS, connect, TLS, headers and body, over every hop.
    pub timeout: Duration,
    /// Follow up to [`Limits::max_redirects`] redirects (D14); off by default.
    pub follow_redirects: bool,
    /// The workspace the request is made for. Idle connections are shared only between
    /// requests of the same workspace, so bytes one workspace's upstream leaves on a connection
    /// never reach another workspace's request; `None` (webhook deliveries, the CLI) shares only
    /// with other requests made for no workspace.
    pub workspace: Option<Uuid>,
}

impl FetchRequest {
    /// A plain GET with no credential, the default 10 s timeout, no redirects and no workspace.
    pub fn get(url: Url) -> FetchRequest {
        FetchRequest {
            url,
            method: HttpMethod::Get,
            credential: Credential::None,
            headers: Vec::new(),
            body: None,
            content_type: None,
            timeout: Duration::from_millis(u64::from(apidrift_model::validate::DEFAULT_TIMEOUT_MS)),
            follow_redirects: false,
            workspace: None,
        }
    }

    fn has_credentials(&self) -> bool {
        !matches!(self.credential, Credential::None) || !self.headers.is_empty()
    }
}

/// A response: status, headers (lower-case names, values decoded lossily), decoded body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// From the start of the first lookup to the last body byte, over every hop.
    pub elapsed: Duration,
    /// The URL that answered (differs from the request's after redirects).
    pub url: Url,
    pub redirects: u8,
}

impl FetchResponse {
    /// The first value of a header (name in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn content_type(&self) -> Option<&str> {
        self.header("content-type")
    }

    /// Response time in whole milliseconds.
    pub fn elapsed_ms(&self) -> u32 {
        u32::try_from(self.elapsed.as_millis()).unwrap_or(u32::MAX)
    }
}

/// Builds a [`Client`]: resolver, dialer, extra trust anchors, limits and keep-alive are
/// injectable.
#[derive(Debug)]
pub struct ClientBuilder {
    allow: AllowList,
    resolver: Arc<dyn Resolver>,
    dialer: Arc<dyn Dialer>,
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    webpki_roots: bool,
    limits: Limits,
    keep_alive: KeepAlive,
}

impl ClientBuilder {
    /// Replaces the system resolver (tests count lookups with a stub).
    pub fn resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Replaces the TCP dialer (tests record the dialled addresses).
    pub fn dialer(mut self, dialer: Arc<dyn Dialer>) -> Self {
        self.dialer = dialer;
        self
    }

    /// Trusts one more certificate authority (DER).
    pub fn add_root_certificate(mut self, der: Vec<u8>) -> Self {
        self.extra_roots
            .push(rustls::pki_types::CertificateDer::from(der));
        self
    }

    /// Whether the Mozilla roots of `webpki-roots` are trusted (default true).
    pub fn webpki_roots(mut self, on: bool) -> Self {
        self.webpki_roots = on;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Connection reuse (default: [`KeepAlive::default`], on).
    pub fn keep_alive(mut self, keep_alive: KeepAlive) -> Self {
        self.keep_alive = keep_alive;
        self
    }

    pub fn build(self) -> Result<Client, FetchError> {
        let mut roots = rustls::RootCertStore::empty();
        if self.webpki_roots {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        for der in self.extra_roots {
            roots.add(der).map_err(|e| {
                FetchError::new(
                    FetchErrorKind::TlsError,
                    format!("an extra root certificate is invalid: {e}"),
                )
            })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| FetchError::new(FetchErrorKind::TlsError, e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Client {
            inner: Arc::new(Inner {
                allow: self.allow,
                resolver: self.resolver,
                dialer: self.dialer,
                tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
                limits: self.limits,
                pool: Pool::new(self.keep_alive),
            }),
        })
    }
}

/// The outbound client. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    allow: AllowList,
    resolver: Arc<dyn Resolver>,
    dialer: Arc<dyn Dialer>,
    tls: tokio_rustls::TlsConnector,
    limits: Limits,
    pool: Pool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("allow", &self.inner.allow)
            .field("limits", &self.inner.limits)
            .field("keep_alive", &self.inner.pool.config)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with the system resolver, plain TCP, the webpki roots and default limits.
    pub fn builder(allow: AllowList) -> ClientBuilder {
        ClientBuilder {
            allow,
            resolver: Arc::new(SystemResolver),
            dialer: Arc::new(TcpDialer),
            extra_roots: Vec::new(),
            webpki_roots: true,
            limits: Limits::default(),
            keep_alive: KeepAlive::default(),
        }
    }

    /// The default client for an allow-list.
    pub fn new(allow: AllowList) -> Result<Client, FetchError> {
        Client::builder(allow).build()
    }

    pub fn allow_list(&self) -> &AllowList {
        &self.inner.allow
    }

    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    pub fn keep_alive(&self) -> KeepAlive {
        self.inner.pool.config
    }

    /// Parses and judges a URL with the client's allow-list (D6, D14).
    pub fn check_url(&self, text: &str) -> Result<Url, FetchError> {
        net::check_url(text, &self.inner.allow).map_err(policy_error)
    }

    /// Performs the request. Never panics on what the upstream sends; every failure is a
    /// [`FetchError`] with its kind.
    pub async fn fetch(&self, req: &FetchRequest) -> Result<FetchResponse, FetchError> {
        let start = Instant::now();
        let deadline = start + req.timeout;
        let result = self.fetch_hops(req, start, deadline).await;
        result.map_err(|mut e| {
            e.elapsed = start.elapsed();
            e
        })
    }

    async fn fetch_hops(
        &self,
        req: &FetchRequest,
        start: Instant,
        deadline: Instant,
    ) -> Result<FetchResponse, FetchError> {
        let limits = self.inner.limits;
        // The stored URL is judged again: the allow-list may have changed since it was created.
        let mut url = net::check_url(req.url.as_str(), &self.inner.allow).map_err(policy_error)?;
        let mut method = req.method;
        let mut body = req.body.clone();
        let mut redirects: u8 = 0;
        loop {
            let head = self
                .exchange(req, &url, method, body.as_deref(), deadline)
                .await?;
            let status = head.response.status().as_u16();
            if req.follow_redirects && matches!(status, 301 | 302 | 303 | 307 | 308) {
                if redirects >= limits.max_redirects {
                    return Err(FetchError::new(
                        FetchErrorKind::TooManyRedirects,
                        format!("more than {} redirects", limits.max_redirects),
                    ));
                }
                let next = self.redirect_target(req, &url, &head.response)?;
                redirects += 1;
                if status == 303 || (matches!(status, 301 | 302) && method == HttpMethod::Post) {
                    if method != HttpMethod::Head {
                        method = HttpMethod::Get;
                    }
                    body = None;
                }
                drop(head);
                url = next;
                continue;
            }
            let headers = response_headers(head.response.headers());
            let (body, reusable) = self.read_body(head, method, deadline).await?;
            let response = FetchResponse {
                status,
                headers,
                body,
                elapsed: start.elapsed(),
                url,
                redirects,
            };
            if let Some((key, conn)) = reusable {
                self.release(key, conn, deadline).await;
            }
            return Ok(response);
        }
    }

    fn redirect_target(
        &self,
        req: &FetchRequest,
        from: &Url,
        response: &http::Response<hyper::body::Incoming>,
    ) -> Result<Url, FetchError> {
        let invalid = |m: &str| FetchError::new(FetchErrorKind::InvalidRedirect, m.to_owned());
        let location = response
            .headers()
            .get(header::LOCATION)
            .ok_or_else(|| invalid("redirect without a Location header"))?
            .to_str()
            .map_err(|_| invalid("redirect Location is not valid text"))?;
        let next = from
            .join(location)
            .map_err(|e| invalid(&format!("redirect Location is not a valid URL ({e})")))?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(invalid(&format!(
                "redirect to a {:?} URL refused: only http and https are followed",
                next.scheme()
            )));
        }
        if from.scheme() == "https" && next.scheme() == "http" {
            return Err(invalid("redirect from https to http refused"));
        }
        if req.has_credentials() && next.origin() != from.origin() {
            return Err(invalid(&format!(
                "redirect to another origin ({}) refused while credentials are attached",
                next.origin().ascii_serialization()
            )));
        }
        net::check_url(next.as_str(), &self.inner.allow).map_err(|e| match e {
            UrlError::Blocked(why) => FetchError::new(
                FetchErrorKind::SsrfBlocked,
                format!("redirect refused: {why}"),
            ),
            other => invalid(&format!("redirect target refused: {other}")),
        })
    }

    /// Sends one request on a reused or a fresh connection; returns the response head with its
    /// connection.
    async fn exchange(
        &self,
        req: &FetchRequest,
        url: &Url,
        method: HttpMethod,
        body: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<Head, FetchError> {
        // Every request judges its own addresses, reused connection or not.
        let addrs = self.checked_addresses(url, deadline).await?;
        let port = url.port_or_known_default().unwrap_or(80);
        let key = self.pool_key(req.workspace, url, method, port);
        if let Some(key) = &key
            && let Some(mut conn) = self.inner.pool.checkout(key, &addrs)
        {
            conn.wire.set_idle(false);
            let request = build_request(req, url, method, body)?;
            match timeout_at(deadline, conn.sender.send_request(request)).await {
                Err(_) => return Err(timeout("waiting for the response headers")),
                Ok(Ok(response)) => {
                    return Ok(Head {
                        response,
                        conn,
                        key: Some(key.clone()),
                    });
                }
                Ok(Err(e)) if lost_while_idle(&e) => {
                    tracing::debug!(
                        peer = %conn.peer,
                        error = %e,
                        "a reused connection was closed before the response: sending on a fresh one"
                    );
                }
                Ok(Err(e)) => return Err(classify_hyper(&e, false)),
            }
        }
        let mut conn = self.open(url, &addrs, port, deadline).await?;
        let request = build_request(req, url, method, body)?;
        let response = timeout_at(deadline, conn.sender.send_request(request))
            .await
            .map_err(|_| timeout("waiting for the response headers"))?
            .map_err(|e| classify_hyper(&e, false))?;
        Ok(Head {
            response,
            conn,
            key,
        })
    }

    /// The pool key of a request that may reuse a connection and return it: GET and HEAD with
    /// keep-alive on. `None` means dial fresh and close.
    fn pool_key(
        &self,
        workspace: Option<Uuid>,
        url: &Url,
        method: HttpMethod,
        port: u16,
    ) -> Option<PoolKey> {
        if !self.inner.pool.config.enabled || !matches!(method, HttpMethod::Get | HttpMethod::Head)
        {
            return None;
        }
        PoolKey::of(workspace, url, port)
    }

    /// Dials the checked addresses, then TLS for https and the HTTP/1.1 handshake.
    async fn open(
        &self,
        url: &Url,
        addrs: &[IpAddr],
        port: u16,
        deadline: Instant,
    ) -> Result<Conn, FetchError> {
        let limits = self.inner.limits;
        let host = url.host_str().unwrap_or_default();
        let (tcp, peer) = self.connect(host, addrs, port, deadline).await?;
        let stream = if url.scheme() == "https" {
            let name = server_name(url)?;
            let tls = timeout_at(deadline, self.inner.tls.connect(name, tcp))
                .await
                .map_err(|_| timeout("during the TLS handshake"))?
                .map_err(|e| {
                    FetchError::new(
                        FetchErrorKind::TlsError,
                        format!("TLS handshake failed: {}", tls_cause(&e)),
                    )
                })?;
            Stream::Tls(Box::new(tls))
        } else {
            Stream::Plain(tcp)
        };
        let mut builder = hyper::client::conn::http1::Builder::new();
        builder
            .max_buf_size(limits.max_head_bytes.max(8192))
            .max_headers(limits.max_headers);
        let wire = Arc::new(Wire::new(stream));
        let io = TokioIo::new(WireIo(wire.clone()));
        let (sender, conn) = timeout_at(deadline, builder.handshake(io))
            .await
            .map_err(|_| timeout("during the HTTP handshake"))?
            .map_err(|e| classify_hyper(&e, false))?;
        let driver = AbortOnDrop(tokio::spawn(async move {
            let _ = conn.await;
        }));
        Ok(Conn {
            sender,
            _driver: driver,
            peer,
            wire,
        })
    }

    /// Reads and decodes the body. Also returns the connection when it may be pooled: the
    /// request's method allows it, the body was read completely within the caps, and the
    /// response is HTTP/1.1 without `Connection: close`. Any error drops the connection.
    async fn read_body(
        &self,
        head: Head,
        method: HttpMethod,
        deadline: Instant,
    ) -> Result<(Vec<u8>, Option<(PoolKey, Conn)>), FetchError> {
        let cap = self.inner.limits.max_body_bytes;
        let Head {
            response,
            conn,
            key,
        } = head;
        let key = key.filter(|_| {
            response.version() == http::Version::HTTP_11 && !says_close(response.headers())
        });
        if method == HttpMethod::Head {
            // A HEAD response has no body: the exchange is complete with its head.
            return Ok((Vec::new(), key.map(|k| (k, conn))));
        }
        if let Some(len) = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            && len > cap as u64
        {
            return Err(FetchError::new(
                FetchErrorKind::BodyTooLarge,
                format!("the response declares {len} bytes, more than the {cap}-byte limit"),
            ));
        }
        let mut decoder = BodyDecoder::new(
            response
                .headers()
                .get_all(header::CONTENT_ENCODING)
                .iter()
                .filter_map(|v| v.to_str().ok()),
            cap,
        )?;
        let mut incoming = response.into_body();
        loop {
            let frame = timeout_at(deadline, incoming.frame())
                .await
                .map_err(|_| timeout("while reading the response body"))?;
            match frame {
                None => break,
                Some(Err(e)) => return Err(classify_hyper(&e, true)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        decoder.push(&data)?;
                    }
                }
            }
        }
        let body = decoder.finish()?;
        Ok((body, key.map(|k| (k, conn))))
    }

    /// Puts a connection whose exchange completed back into the pool once hyper is ready to
    /// send on it again; one that closed or is not ready within [`READY_WAIT`] is dropped, and
    /// so is one on which any byte arrived after the response.
    ///
    /// hyper signals readiness only after its driver found its read buffer empty with the
    /// response done (bytes read along with the response make it fail the connection instead).
    /// From then on the connection is idle: a byte the driver reads marks it stray, and a byte
    /// still in the socket is seen by a peek, here and again right before reuse.
    async fn release(&self, key: PoolKey, mut conn: Conn, deadline: Instant) {
        let limit = deadline.min(Instant::now() + READY_WAIT);
        if let Ok(Ok(())) = timeout_at(limit, conn.sender.ready()).await {
            conn.wire.set_idle(true);
            if conn.wire.disturbed() {
                tracing::debug!(
                    peer = %conn.peer,
                    "bytes arrived after the response: the connection is closed, not kept"
                );
                return;
            }
            self.inner.pool.put(key, conn);
        }
    }

    /// The addresses a URL may be dialled at: the canonical IP literal, or the answers of ONE
    /// lookup, each judged by the policy. Any blocked answer refuses the whole request.
    async fn checked_addresses(
        &self,
        url: &Url,
        deadline: Instant,
    ) -> Result<Vec<IpAddr>, FetchError> {
        let allow = &self.inner.allow;
        let judge = |ip: IpAddr| {
            let ip = ip.to_canonical();
            net::check_ip(ip, allow).map(|()| ip).map_err(policy_error)
        };
        match url.host() {
            Some(Host::Ipv4(ip)) => Ok(vec![judge(IpAddr::V4(ip))?]),
            Some(Host::Ipv6(ip)) => Ok(vec![judge(IpAddr::V6(ip))?]),
            Some(Host::Domain(name)) => {
                net::check_name(name, allow).map_err(policy_error)?;
                let dns_deadline = deadline.min(Instant::now() + self.inner.limits.dns_timeout);
                let answers = timeout_at(dns_deadline, self.inner.resolver.lookup(name))
                    .await
                    .map_err(|_| {
                        FetchError::new(
                            FetchErrorKind::DnsTimeout,
                            format!("resolving {name} took too long"),
                        )
                    })?
                    .map_err(|e| {
                        FetchError::new(
                            FetchErrorKind::DnsFailed,
                            format!("resolving {name} failed: {e}"),
                        )
                    })?;
                if answers.is_empty() {
                    return Err(FetchError::new(
                        FetchErrorKind::DnsFailed,
                        format!("{name} has no address"),
                    ));
                }
                let mut out = Vec::with_capacity(answers.len());
                for ip in answers {
                    let canonical = ip.to_canonical();
                    let ip = net::check_ip(canonical, allow)
                        .map(|()| canonical)
                        .map_err(|e| refused_answer(name, canonical, e))?;
                    if !out.contains(&ip) {
                        out.push(ip);
                    }
                }
                Ok(out)
            }
            None => Err(FetchError::new(
                FetchErrorKind::InvalidUrl,
                "the URL has no host",
            )),
        }
    }

    /// Dials the checked addresses in order until one answers; returns the stream and the
    /// address it was dialled at. A failure names `host` as the URL gives it (a name, or the
    /// literal address the user wrote), never the address a name resolved to, which goes to the
    /// debug log.
    async fn connect(
        &self,
        host: &str,
        addrs: &[IpAddr],
        port: u16,
        deadline: Instant,
    ) -> Result<(TcpStream, SocketAddr), FetchError> {
        let mut last = FetchError::new(FetchErrorKind::ConnectFailed, "no address to connect to");
        for ip in addrs {
            let addr = SocketAddr::new(*ip, port);
            let limit = deadline.min(Instant::now() + self.inner.limits.connect_timeout);
            match timeout_at(limit, self.inner.dialer.dial(addr)).await {
                Ok(Ok(stream)) => return Ok((stream, addr)),
                Ok(Err(e)) => {
                    tracing::debug!(host, address = %addr, error = %e, "connecting failed");
                    let kind = match e.kind() {
                        io::ErrorKind::ConnectionRefused => FetchErrorKind::ConnectRefused,
                        io::ErrorKind::TimedOut => FetchErrorKind::ConnectTimeout,
                        _ => FetchErrorKind::ConnectFailed,
                    };
                    last =
                        FetchError::new(kind, format!("connecting to {host}:{port} failed: {e}"));
                }
                Err(_) => {
                    tracing::debug!(host, address = %addr, "connecting took too long");
                    last = FetchError::new(
                        FetchErrorKind::ConnectTimeout,
                        format!("connecting to {host}:{port} took too long"),
                    );
                }
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        Err(last)
    }
}

/// A response head and its connection; `key` is set when the connection may go back to the
/// pool once the response was read.
struct Head {
    response: http::Response<hyper::body::Incoming>,
    conn: Conn,
    key: Option<PoolKey>,
}

/// One HTTP/1.1 connection: its request sender, the task driving it (aborted when dropped, so a
/// connection is never left behind), the checked address it was dialled at and its stream's
/// watch.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    _driver: AbortOnDrop,
    peer: SocketAddr,
    wire: Arc<Wire>,
}

/// Where an idle connection may be reused: the same workspace, scheme, host and port. For https
/// the host is the TLS server name the connection was verified for, so it never serves another
/// name. The workspace keeps each tenant's connections apart: whatever one workspace's upstream
/// leaves on a connection can only ever be read by that workspace's requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    workspace: Option<Uuid>,
    https: bool,
    host: String,
    port: u16,
}

impl PoolKey {
    fn of(workspace: Option<Uuid>, url: &Url, port: u16) -> Option<PoolKey> {
        let https = url.scheme() == "https";
        let host = url.host_str()?;
        // `server_name` sends a domain without its trailing dot.
        let host = if https {
            host.trim_end_matches('.')
        } else {
            host
        };
        Some(PoolKey {
            workspace,
            https,
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

/// An idle connection and when it went idle.
struct Idle {
    conn: Conn,
    since: Instant,
}

impl Idle {
    /// Young enough, still open, and nothing was read from it since it went idle.
    fn usable(&self, now: Instant, idle_timeout: Duration) -> bool {
        now.saturating_duration_since(self.since) < idle_timeout
            && !self.conn.sender.is_closed()
            && !self.conn.wire.stray()
    }
}

/// The idle connections of a client, by key; each list is in the order its connections went
/// idle (oldest first). The lock is never held across an await.
struct Pool {
    config: KeepAlive,
    idle: Mutex<HashMap<PoolKey, Vec<Idle>>>,
}

impl Pool {
    fn new(config: KeepAlive) -> Pool {
        Pool {
            config,
            idle: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PoolKey, Vec<Idle>>> {
        // A panic while the lock was held can at worst leave a connection missing or stale, and
        // every connection is checked before it is reused: the map stays usable.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the most recently idle connection of `key` whose peer is one of `addrs` (the
    /// addresses the request has just checked) and that is ready for a request. Expired and
    /// closed connections of the key, and those on which any byte arrived while idle (peeked
    /// now, without reading), are dropped on the way.
    fn checkout(&self, key: &PoolKey, addrs: &[IpAddr]) -> Option<Conn> {
        let now = Instant::now();
        let mut idle = self.lock();
        let list = idle.get_mut(key)?;
        list.retain(|i| {
            let keep = i.usable(now, self.config.idle_timeout) && !i.conn.wire.disturbed();
            if !keep {
                tracing::debug!(peer = %i.conn.peer, "an idle connection is closed, not reused");
            }
            keep
        });
        let found = list.iter().rposition(|i| {
            i.conn.peer.port() == key.port
                && addrs.contains(&i.conn.peer.ip())
                && i.conn.sender.is_ready()
        });
        let conn = found.map(|at| list.remove(at).conn);
        if list.is_empty() {
            idle.remove(key);
        }
        conn
    }

    /// Keeps an idle connection: prunes expired and closed ones, then closes the oldest over
    /// the per-key and the total limit.
    fn put(&self, key: PoolKey, conn: Conn) {
        let KeepAlive {
            idle_timeout,
            max_idle_per_key,
            max_idle_total,
            ..
        } = self.config;
        if max_idle_per_key == 0 || max_idle_total == 0 {
            return;
        }
        let now = Instant::now();
        let mut idle = self.lock();
        idle.retain(|_, list| {
            list.retain(|i| i.usable(now, idle_timeout));
            !list.is_empty()
        });
        let list = idle.entry(key).or_default();
        list.push(Idle { conn, since: now });
        if list.len() > max_idle_per_key {
            let over = list.len() - max_idle_per_key;
            list.drain(..over);
        }
        let mut total: usize = idle.values().map(Vec::len).sum();
        while total > max_idle_total {
            let oldest = idle
                .iter()
                .filter_map(|(k, list)| list.first().map(|i| (i.since, k)))
                .min_by_key(|(since, _)| *since)
                .map(|(_, k)| k.clone());
            let Some(k) = oldest else { break };
            if let Some(list) = idle.get_mut(&k) {
                list.remove(0);
                if list.is_empty() {
                    idle.remove(&k);
                }
            }
            total -= 1;
        }
    }

    /// How many idle connections are kept.
    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }
}

/// Whether a request on a reused connection failed before any response because the upstream
/// had closed the connection while it was idle: GET and HEAD are then sent once more on a
/// fresh connection.
fn lost_while_idle(e: &hyper::Error) -> bool {
    e.is_canceled()
        || e.is_closed()
        || e.is_incomplete_message()
        || matches!(
            io_cause(e),
            Some(
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
            )
        )
}

/// Whether the response's `Connection` header says `close` (an unreadable one counts as yes).
fn says_close(headers: &http::HeaderMap) -> bool {
    headers.get_all(header::CONNECTION).iter().any(|v| {
        v.to_str().map_or(true, |text| {
            text.split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("close"))
        })
    })
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A plain or TLS connection.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A connection's stream as hyper reads and writes it, watched for bytes that arrive while the
/// connection is idle (between a completed response and the next request).
struct Wire {
    stream: Mutex<Stream>,
    /// Set while the connection is in the pool.
    idle: AtomicBool,
    /// Set when a byte was read while idle; such a connection is never reused.
    stray: AtomicBool,
}

impl Wire {
    fn new(stream: Stream) -> Wire {
        Wire {
            stream: Mutex::new(stream),
            idle: AtomicBool::new(false),
            stray: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Stream> {
        // The guard is only held for one non-blocking read, write or peek; a panic during one
        // leaves a stream that at worst fails, and a failed stream is never pooled.
        self.stream.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_idle(&self, idle: bool) {
        self.idle.store(idle, Ordering::SeqCst);
    }

    /// Whether a byte was read while the connection was idle.
    fn stray(&self) -> bool {
        self.stray.load(Ordering::SeqCst)
    }

    /// Whether anything arrived since the connection went idle: a byte read, or a byte, an end
    /// of stream or an error waiting in the socket (peeked, not read: the socket is
    /// non-blocking, so nothing waiting reads as `WouldBlock`). For https the TCP stream is
    /// peeked, so any TLS record counts — including a close_notify, which ends reuse anyway.
    fn disturbed(&self) -> bool {
        if self.stray() {
            return true;
        }
        let stream = self.lock();
        let tcp = match &*stream {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        };
        let mut byte = [MaybeUninit::<u8>::uninit(); 1];
        !matches!(
            socket2::SockRef::from(tcp).peek(&mut byte),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock
        )
    }
}

/// The IO hyper drives: the shared [`Wire`], recording a byte read while the connection is idle.
struct WireIo(Arc<Wire>);

impl AsyncRead for WireIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let wire = &self.0;
        let before = buf.filled().len();
        let polled = Pin::new(&mut *wire.lock()).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(())))
            && buf.filled().len() > before
            && wire.idle.load(Ordering::SeqCst)
        {
            wire.stray.store(true, Ordering::SeqCst);
        }
        polled
    }
}

impl AsyncWrite for WireIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0.lock()).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0.lock()).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0.lock()).poll_shutdown(cx)
    }
}

/// The refusal of a name because an address it resolves to is refused. The message names the
/// host and the rule with the way to allow a range, never the address: it is shown to whoever
/// reads the check, the send-test answer or the delivery log, and would map internal names to
/// internal addresses. The operator finds the address in the debug log.
fn refused_answer(name: &str, address: IpAddr, e: UrlError) -> FetchError {
    let UrlError::Blocked(why) = &e else {
        return policy_error(e);
    };
    tracing::debug!(
        host = %name,
        %address,
        %why,
        "a resolved address is refused by the outbound policy"
    );
    FetchError::new(
        FetchErrorKind::SsrfBlocked,
        format!("{name} resolves to an address that outbound requests may not reach: {e}"),
    )
}

/// A URL the address policy refused before any lookup: an address written in the URL (named,
/// since the caller wrote it) with what to do about it, or a malformed URL.
fn policy_error(e: UrlError) -> FetchError {
    let text = match &e {
        UrlError::Blocked(why) => {
            return FetchError::new(
                FetchErrorKind::SsrfBlocked,
                format!("refused by the outbound address policy: {why}: {e}"),
            );
        }
        UrlError::Invalid(_) | UrlError::TooLong => format!("the URL is {e}"),
        UrlError::Port => format!("the URL's {e}"),
        _ => format!("the URL {e}"),
    };
    FetchError::new(FetchErrorKind::InvalidUrl, text)
}

fn timeout(phase: &str) -> FetchError {
    FetchError::new(
        FetchErrorKind::Timeout,
        format!("the endpoint's timeout elapsed {phase}"),
    )
}

fn server_name(url: &Url) -> Result<rustls::pki_types::ServerName<'static>, FetchError> {
    use rustls::pki_types::ServerName;
    match url.host() {
        Some(Host::Ipv4(ip)) => Ok(ServerName::IpAddress(IpAddr::V4(ip).into())),
        Some(Host::Ipv6(ip)) => Ok(ServerName::IpAddress(IpAddr::V6(ip).into())),
        Some(Host::Domain(d)) => {
            ServerName::try_from(d.trim_end_matches('.').to_owned()).map_err(|_| {
                FetchError::new(
                    FetchErrorKind::TlsError,
                    format!("{d} is not a valid TLS name"),
                )
            })
        }
        None => Err(FetchError::new(
            FetchErrorKind::InvalidUrl,
            "the URL has no host",
        )),
    }
}

fn tls_cause(e: &io::Error) -> String {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls_error) => tls_reason(rustls_error),
        None => e.to_string(),
    }
}

/// A TLS failure in words a person reads: rustls renders several of its causes with `Debug`
/// (`invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))`), which is never shown.
pub(crate) fn tls_reason(e: &rustls::Error) -> String {
    use rustls::{CertificateError as C, Error as E};
    let cert = "the server's certificate";
    match e {
        E::InvalidCertificate(c) => match c {
            C::BadEncoding => format!("{cert} is malformed"),
            C::Expired | C::ExpiredContext { .. } => format!("{cert} has expired"),
            C::NotValidYet | C::NotValidYetContext { .. } => format!("{cert} is not valid yet"),
            C::Revoked => format!("{cert} has been revoked"),
            C::UnknownIssuer => format!("{cert} is not issued by a trusted certificate authority"),
            C::BadSignature => format!("{cert} has an invalid signature"),
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                format!("{cert} is not valid for this host name")
            }
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                format!("{cert} is not meant for a TLS server")
            }
            // webpki's reasons arrive as `Other`, displayed as their `Debug` name.
            C::Other(inner) => match plain_words(&inner.to_string()) {
                sentence if sentence.starts_with("the ") || sentence.starts_with("an ") => sentence,
                words => format!("{cert} was refused: {words}"),
            },
            other => format!("{cert} was refused: {}", plain_words(&format!("{other:?}"))),
        },
        E::NoCertificatesPresented => "the server presented no certificate".to_owned(),
        E::AlertReceived(alert) => format!(
            "the server ended the handshake with the alert \"{}\"",
            plain_words(&format!("{alert:?}"))
        ),
        E::PeerIncompatible(_) => {
            "the server supports no TLS version or cipher suite apidrift accepts (TLS 1.2 or newer)"
                .to_owned()
        }
        E::PeerMisbehaved(_)
        | E::InvalidMessage(_)
        | E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. } => {
            "the server broke the TLS protocol (is it speaking TLS on this port?)".to_owned()
        }
        E::DecryptError => "a message from the server could not be decrypted".to_owned(),
        other => format!(
            "the TLS handshake failed: {}",
            plain_words(&format!("{other:?}"))
        ),
    }
}

/// The innermost name of a `Debug` rendering, in words: `Other(OtherError(CaUsedAsEndEntity))`
/// → `ca used as end entity`. Known certificate checks get a sentence of their own.
fn plain_words(debug: &str) -> String {
    let inner = debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !matches!(*w, "Other" | "OtherError"))
        .find(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap_or("unknown");
    match inner {
        "CaUsedAsEndEntity" => {
            return "the server's certificate is a CA certificate used as an end-entity certificate"
                .to_owned();
        }
        "EndEntityUsedAsCa" => {
            return "an end-entity certificate is used as a CA certificate in the server's chain"
                .to_owned();
        }
        "SelfSigned" => return "the server's certificate is self-signed".to_owned(),
        _ => {}
    }
    let mut out = String::with_capacity(inner.len() + 8);
    let chars: Vec<char> = inner.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
        let prev_lower = i > 0 && chars[i - 1].is_ascii_lowercase();
        if i > 0 && c.is_ascii_uppercase() && (prev_lower || next_lower) {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Maps a hyper failure to a kind by walking its causes.
fn classify_hyper(e: &hyper::Error, in_body: bool) -> FetchError {
    // hyper 1 has no public "too large" predicate; its message for that parse error is stable.
    let kind = if e.is_parse() && e.to_string().contains("too large") {
        FetchErrorKind::HeadersTooLarge
    } else if e.is_parse() || e.is_parse_status() {
        FetchErrorKind::ProtocolError
    } else if let Some(io_kind) = io_cause(e) {
        match io_kind {
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
                FetchErrorKind::ConnectionReset
            }
            io::ErrorKind::UnexpectedEof if in_body => FetchErrorKind::IncompleteBody,
            io::ErrorKind::InvalidData if has_rustls_cause(e) => FetchErrorKind::TlsError,
            _ if in_body => FetchErrorKind::IncompleteBody,
            _ => FetchErrorKind::ConnectionClosed,
        }
    } else if e.is_incomplete_message() {
        if in_body {
            FetchErrorKind::IncompleteBody
        } else {
            FetchErrorKind::ConnectionClosed
        }
    } else if in_body {
        FetchErrorKind::IncompleteBody
    } else if e.is_closed() || e.is_canceled() {
        FetchErrorKind::ConnectionClosed
    } else {
        FetchErrorKind::ProtocolError
    };
    let what = match kind {
        FetchErrorKind::HeadersTooLarge => format!(
            "the response head is too large (more than {MAX_RESPONSE_HEADERS} headers or {MAX_HEAD_BYTES} bytes)"
        ),
        _ => format!("{e}"),
    };
    FetchError::new(kind, what)
}

fn io_cause(e: &(dyn std::error::Error + 'static)) -> Option<io::ErrorKind> {
    let mut cur = e.source();
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

fn has_rustls_cause(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = e.source();
    while let Some(err) = cur {
        if err.is::<rustls::Error>() {
            return true;
        }
        if let Some(io) = err.downcast_ref::<io::Error>()
            && io.get_ref().is_some_and(|i| i.is::<rustls::Error>())
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn response_headers(map: &http::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn header_value(name: &str, value: &str) -> Result<HeaderValue, FetchError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        FetchError::new(
            FetchErrorKind::InvalidRequest,
            format!("the value of header {name} is not valid in HTTP"),
        )
    })?;
    v.set_sensitive(true);
    Ok(v)
}

fn header_name(name: &str) -> Result<HeaderName, FetchError> {
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        FetchError::new(
            FetchErrorKind::InvalidRequest,
            format!("{name:?} is not a valid header name"),
        )
    })
}

fn build_request(
    req: &FetchRequest,
    url: &Url,
    method: HttpMethod,
    body: Option<&[u8]>,
) -> Result<http::Request<Full<Bytes>>, FetchError> {
    let invalid = |m: String| FetchError::new(FetchErrorKind::InvalidRequest, m);
    let mut target = url.path().to_owned();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    let host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let method_value = http::Method::from_bytes(method.as_str().as_bytes())
        .map_err(|e| invalid(format!("method: {e}")))?;
    let send_body = !matches!(method, HttpMethod::Get | HttpMethod::Head);
    let payload = match body {
        Some(b) if send_body => Bytes::copy_from_slice(b),
        _ => Bytes::new(),
    };
    let mut builder = http::Request::builder().method(method_value).uri(target);
    let headers = builder
        .headers_mut()
        .ok_or_else(|| invalid("the request target is invalid".into()))?;
    headers.insert(
        header::HOST,
        HeaderValue::from_str(&host).map_err(|_| invalid("invalid host".into()))?,
    );
    headers.insert(header::USER_AGENT, HeaderValue::from_static(USER_AGENT));
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/json, */*;q=0.5"),
    );
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("gzip, deflate, br"),
    );
    if send_body && body.is_some() {
        let ct = req
            .content_type
            .as_deref()
            .unwrap_or(apidrift_model::validate::DEFAULT_CONTENT_TYPE);
        headers.insert(header::CONTENT_TYPE, header_value("content-type", ct)?);
    }
    for extra in &req.headers {
        headers.insert(
            header_name(&extra.name)?,
            header_value(&extra.name, extra.value.expose())?,
        );
    }
    match &req.credential {
        Credential::None => {}
        Credential::Bearer { token } | Credential::Oauth { token } => {
            headers.insert(
                header::AUTHORIZATION,
                header_value("authorization", &format!("Bearer {}", token.expose()))?,
            );
        }
        Credential::ApiKey { header: name, key } => {
            headers.insert(header_name(name)?, header_value(name, key.expose())?);
        }
        Credential::Basic { username, password } => {
            let raw = format!("{}:{}", username.expose(), password.expose());
            let encoded = base64::engine::general_purpose::STANDARD.encode(raw.as_bytes());
            headers.insert(
                header::AUTHORIZATION,
                header_value("authorization", &format!("Basic {encoded}"))?,
            );
        }
        Credential::Custom {
            header: name,
            value,
        } => {
            headers.insert(header_name(name)?, header_value(name, value.expose())?);
        }
        // A credential style added to the model after this fetcher: refuse rather than send the
        // request without it.
        other => {
            return Err(invalid(format!(
                "auth type {} is not supported by this version: update apidrift or change the endpoint's auth",
                other.auth_type()
            )));
        }
    }
    builder
        .body(Full::new(payload))
        .map_err(|e| invalid(format!("the request could not be built: {e}")))
}

/// No user-facing message of the monitor carries a Rust `Debug` rendering (issue 14).
#[cfg(test)]
mod wording {
    use super::*;
    use crate::{FetchErrorKind, MonitorError};
    use apidrift_model::validate::validate_entry;
    use rustls::{CertificateError, Error as TlsError, OtherError};

    /// Fragments only `Debug` output produces.
    const DEBUG_MARKS: &[&str] = &[
        "Some(",
        "None",
        "Other(",
        "OtherError",
        "{ ",
        "::",
        "Error(",
    ];

    fn assert_plain(text: &str) {
        for mark in DEBUG_MARKS {
            assert!(
                !text.contains(mark),
                "{mark:?} in user-facing text {text:?}"
            );
        }
    }

    #[derive(Debug)]
    struct WebpkiLike(&'static str);

    impl std::fmt::Display for WebpkiLike {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            // webpki's Display is its Debug.
            f.write_str(self.0)
        }
    }

    impl std::error::Error for WebpkiLike {}

    fn tls_errors() -> Vec<TlsError> {
        let mut all: Vec<TlsError> = [
            CertificateError::BadEncoding,
            CertificateError::Expired,
            CertificateError::NotValidYet,
            CertificateError::Revoked,
            CertificateError::UnknownIssuer,
            CertificateError::BadSignature,
            CertificateError::NotValidForName,
            CertificateError::InvalidPurpose,
            CertificateError::UnhandledCriticalExtension,
            CertificateError::UnknownRevocationStatus,
        ]
        .into_iter()
        .map(TlsError::InvalidCertificate)
        .collect();
        for name in [
            "CaUsedAsEndEntity",
            "EndEntityUsedAsCa",
            "UnsupportedCertVersion",
        ] {
            all.push(TlsError::InvalidCertificate(CertificateError::Other(
                OtherError(std::sync::Arc::new(WebpkiLike(name))),
            )));
        }
        all.extend([
            TlsError::NoCertificatesPresented,
            TlsError::AlertReceived(rustls::AlertDescription::HandshakeFailure),
            TlsError::AlertReceived(rustls::AlertDescription::ProtocolVersion),
            TlsError::PeerIncompatible(rustls::PeerIncompatible::Tls12NotOffered),
            TlsError::PeerMisbehaved(rustls::PeerMisbehaved::IllegalMiddleboxChangeCipherSpec),
            TlsError::InvalidMessage(rustls::InvalidMessage::MessageTooShort),
            TlsError::DecryptError,
            TlsError::General("x".into()),
            TlsError::UnsupportedNameType,
        ]);
        all
    }

    #[test]
    fn tls_failures_read_as_sentences() {
        for e in tls_errors() {
            let text = tls_reason(&e);
            assert_plain(&text);
            assert!(!text.is_empty());
        }
        let ca = TlsError::InvalidCertificate(CertificateError::Other(OtherError(
            std::sync::Arc::new(WebpkiLike("CaUsedAsEndEntity")),
        )));
        assert_eq!(
            tls_reason(&ca),
            "the server's certificate is a CA certificate used as an end-entity certificate"
        );
        assert_eq!(
            plain_words("Other(OtherError(UnsupportedCertVersion))"),
            "unsupported cert version"
        );
    }

    #[test]
    fn policy_fetch_and_pipeline_messages_are_plain() {
        let blocked = policy_error(UrlError::Blocked("10.0.0.1 is private".into()));
        assert!(!blocked.message.contains("resolves to refused"));
        let mut messages = vec![
            blocked.to_string(),
            policy_error(UrlError::Scheme).to_string(),
            policy_error(UrlError::Invalid("bad".into())).to_string(),
            timeout("while reading the body").to_string(),
            refused_answer(
                "api.test",
                IpAddr::from([10, 0, 0, 1]),
                UrlError::Blocked("10.0.0.1 is private".into()),
            )
            .to_string(),
        ];
        for kind in FetchErrorKind::ALL {
            messages.push(FetchError::new(*kind, "cause").to_string());
        }
        let fetch = FetchError::new(FetchErrorKind::TlsError, tls_reason(&tls_errors()[0]));
        for e in [
            MonitorError::NotFound,
            MonitorError::NoBaseline,
            MonitorError::QuotaExhausted { used: 3, quota: 3 },
            MonitorError::CaptureFailed(fetch.clone()),
            MonitorError::Endpoint("the URL is refused".into()),
            MonitorError::Diff("too deep".into()),
            MonitorError::Store(apidrift_store::StoreError::InvalidInput(
                "endpoints.name must not contain a NUL character (U+0000): remove it and try again"
                    .into(),
            )),
        ] {
            messages.push(e.to_string());
        }
        // The service's texts of these errors are checked in `apidrift-app` (error.rs).
        for text in &messages {
            assert_plain(text);
        }
    }

    #[test]
    fn validation_reasons_are_plain() {
        let allow = apidrift_model::net::AllowList::default();
        let url = "https://example.com/";
        let entries = [
            serde_json::json!(3),
            serde_json::json!({}),
            serde_json::json!({"name": "n"}),
            serde_json::json!({"name": "n", "url": 3}),
            serde_json::json!({"name": "n", "url": "http://10.0.0.1/"}),
            serde_json::json!({"name": "n", "url": url, "method": "FETCH"}),
            serde_json::json!({"name": "n", "url": url, "method": 3}),
            serde_json::json!({"name": "n", "url": url, "diffMode": "x"}),
            serde_json::json!({"name": "n", "url": url, "timeoutMs": 0}),
            serde_json::json!({"name": "n", "url": url, "auth": {"type": "x"}}),
            serde_json::json!({"name": "n", "url": url, "schedule": {"frequency": "x"}}),
            serde_json::json!({"name": "n", "url": url, "headers": {"X": "\u{1}"}}),
            serde_json::json!({"name": "n", "url": url, "headers": {"Host": "h"}}),
            serde_json::json!({"name": "n", "url": url, "description": "\u{0}"}),
            serde_json::json!({"name": "n", "url": url, "ignorePaths": [3]}),
        ];
        for entry in &entries {
            let reason = validate_entry(entry, &allow).err().unwrap_or_default();
            assert!(!reason.is_empty(), "{entry} is refused");
            assert_plain(&reason);
        }
    }
}

/// Keep-alive against loopback upstreams the tests start: which requests reuse a connection,
/// which dial, and that a connection is only ever reused to an address the request checked.
#[cfg(test)]
mod keep_alive {
    use super::*;
    use async_trait::async_trait;
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// What the upstream does with one request: `(n, total)` is the request's number on its
    /// connection and over the whole upstream, both from 0.
    enum Reply {
        /// Answer and keep the connection open.
        Answer(Vec<u8>),
        /// Answer, then close the connection.
        AnswerAndClose(Vec<u8>),
        /// Close the connection without answering.
        HangUp,
    }

    type ReplyFn = dyn Fn(usize, usize) -> Reply + Send + Sync;

    /// A loopback upstream serving any number of requests per connection, counting the
    /// connections it accepted.
    struct Upstream {
        addr: SocketAddr,
        accepted: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Upstream {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Upstream {
        /// On 127.0.0.1, any port.
        async fn start(
            reply: impl Fn(usize, usize) -> Reply + Send + Sync + 'static,
        ) -> io::Result<Upstream> {
            Upstream::bind(SocketAddr::from(([127, 0, 0, 1], 0)), None, Arc::new(reply)).await
        }

        /// Always answers `body` and keeps the connection open.
        async fn answering(body: &'static str) -> io::Result<Upstream> {
            Upstream::start(move |_, _| Reply::Answer(ok(body))).await
        }

        async fn bind(
            addr: SocketAddr,
            tls: Option<tokio_rustls::TlsAcceptor>,
            reply: Arc<ReplyFn>,
        ) -> io::Result<Upstream> {
            let listener = TcpListener::bind(addr).await?;
            let addr = listener.local_addr()?;
            let accepted = Arc::new(AtomicUsize::new(0));
            let counter = accepted.clone();
            let total = Arc::new(AtomicUsize::new(0));
            let task = tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let (reply, total, tls) = (reply.clone(), total.clone(), tls.clone());
                    tokio::spawn(async move {
                        match tls {
                            None => serve(stream, reply, total).await,
                            Some(acceptor) => {
                                if let Ok(stream) = acceptor.accept(stream).await {
                                    serve(stream, reply, total).await;
                                }
                            }
                        }
                    });
                }
            });
            Ok(Upstream {
                addr,
                accepted,
                task,
            })
        }

        fn url(&self, path: &str) -> String {
            format!("http://{}{path}", self.addr)
        }

        fn accepted(&self) -> usize {
            self.accepted.load(Ordering::SeqCst)
        }
    }

    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
        mut s: S,
        reply: Arc<ReplyFn>,
        total: Arc<AtomicUsize>,
    ) {
        let mut n = 0;
        while let Ok(head) = read_request(&mut s).await {
            let reply = match reply(n, total.fetch_add(1, Ordering::SeqCst)) {
                // The answer to HEAD is the head alone.
                Reply::Answer(bytes) if head.starts_with("head ") => {
                    Reply::Answer(head_only(bytes))
                }
                other => other,
            };
            match reply {
                Reply::Answer(bytes) => {
                    if s.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Reply::AnswerAndClose(bytes) => {
                    let _ = s.write_all(&bytes).await;
                    let _ = s.shutdown().await;
                    return;
                }
                Reply::HangUp => return,
            }
            n += 1;
        }
    }

    fn head_only(mut bytes: Vec<u8>) -> Vec<u8> {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            bytes.truncate(end + 4);
        }
        bytes
    }

    /// Reads one request head and its `Content-Length` body; returns the head in lower case.
    async fn read_request<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<String> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                while buf.len() < end + 4 + len {
                    let n = s.read(&mut chunk).await?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                return Ok(head);
            }
            let n = s.read(&mut chunk).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// A 200 with a JSON body and no `Connection` header (HTTP/1.1 keeps the connection).
    fn ok(body: &str) -> Vec<u8> {
        with_headers(body, "")
    }

    fn with_headers(body: &str, extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// A resolver answering each name from a queue: successive lookups get successive answers,
    /// the last one repeats.
    #[derive(Debug, Default)]
    struct Answers {
        table: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
        lookups: AtomicUsize,
    }

    impl Answers {
        fn new(entries: &[(&str, &[&[IpAddr]])]) -> Arc<Answers> {
            let table = entries
                .iter()
                .map(|(name, seq)| ((*name).to_owned(), seq.iter().map(|a| a.to_vec()).collect()))
                .collect();
            Arc::new(Answers {
                table: Mutex::new(table),
                lookups: AtomicUsize::new(0),
            })
        }

        fn lookups(&self) -> usize {
            self.lookups.load(Ordering::SeqCst)
        }
    }

    #[async_trait]
    impl Resolver for Answers {
        async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
            self.lookups.fetch_add(1, Ordering::SeqCst);
            let mut table = self
                .table
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            let queue = table
                .get_mut(host)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "NXDOMAIN"))?;
            let answer = if queue.len() > 1 {
                queue.pop_front()
            } else {
                queue.front().cloned()
            };
            Ok(answer.unwrap_or_default())
        }
    }

    /// Records every address dialled.
    #[derive(Debug, Default)]
    struct Recording {
        dialled: Mutex<Vec<SocketAddr>>,
    }

    impl Recording {
        fn dialled(&self) -> Vec<SocketAddr> {
            self.dialled.lock().map(|d| d.clone()).unwrap_or_default()
        }
    }

    #[async_trait]
    impl Dialer for Recording {
        async fn dial(&self, addr: SocketAddr) -> io::Result<TcpStream> {
            if let Ok(mut d) = self.dialled.lock() {
                d.push(addr);
            }
            TcpDialer.dial(addr).await
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse()
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    }

    fn loopback() -> Result<AllowList, String> {
        AllowList::parse("127.0.0.0/8")
    }

    /// A loopback client with short limits and the given keep-alive.
    fn client_with(keep_alive: KeepAlive) -> Result<Client, Box<dyn std::error::Error>> {
        Ok(builder(loopback()?, Answers::new(&[]))
            .keep_alive(keep_alive)
            .build()?)
    }

    fn client() -> Result<Client, Box<dyn std::error::Error>> {
        client_with(KeepAlive::default())
    }

    fn builder(allow: AllowList, resolver: Arc<Answers>) -> ClientBuilder {
        Client::builder(allow)
            .resolver(resolver)
            .webpki_roots(false)
            .limits(Limits {
                dns_timeout: Duration::from_millis(500),
                connect_timeout: Duration::from_millis(500),
                ..Limits::default()
            })
    }

    fn get(url: &str) -> Result<FetchRequest, url::ParseError> {
        let mut r = FetchRequest::get(Url::parse(url)?);
        r.timeout = Duration::from_secs(5);
        Ok(r)
    }

    fn with_method(url: &str, method: HttpMethod) -> Result<FetchRequest, url::ParseError> {
        let mut r = get(url)?;
        r.method = method;
        Ok(r)
    }

    #[test]
    fn keep_alive_defaults() {
        let k = KeepAlive::default();
        assert!(k.enabled);
        assert_eq!(k.idle_timeout, Duration::from_secs(30));
        assert_eq!((k.max_idle_per_key, k.max_idle_total), (4, 256));
        assert!(!KeepAlive::disabled().enabled);
    }

    #[tokio::test]
    async fn sequential_gets_share_one_connection() -> TestResult {
        let up = Upstream::answering("{\"n\":1}").await?;
        let client = client()?;
        for _ in 0..3 {
            let resp = client.fetch(&get(&up.url("/a"))?).await?;
            assert_eq!(
                (resp.status, resp.body.as_slice()),
                (200, b"{\"n\":1}".as_slice())
            );
        }
        // HEAD takes and returns the pooled connection too.
        let resp = client
            .fetch(&with_method(&up.url("/a"), HttpMethod::Head)?)
            .await?;
        assert_eq!(resp.status, 200);
        client.fetch(&get(&up.url("/b"))?).await?;
        assert_eq!(up.accepted(), 1);
        assert_eq!(client.inner.pool.idle_count(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn different_ports_get_their_own_connections() -> TestResult {
        let one = Upstream::answering("{}").await?;
        let two = Upstream::answering("{}").await?;
        let client = client()?;
        for _ in 0..2 {
            client.fetch(&get(&one.url("/"))?).await?;
            client.fetch(&get(&two.url("/"))?).await?;
        }
        assert_eq!((one.accepted(), two.accepted()), (1, 1));
        assert_eq!(client.inner.pool.idle_count(), 2);
        Ok(())
    }

    /// The same address under another name (`localhost` vs `127.0.0.1`) is another key.
    #[tokio::test]
    async fn another_host_name_is_another_key() -> TestResult {
        let up = Upstream::answering("{}").await?;
        let resolver = Answers::new(&[("localhost", &[&[ip("127.0.0.1")]])]);
        let client = builder(loopback()?, resolver).build()?;
        let port = up.addr.port();
        client
            .fetch(&get(&format!("http://127.0.0.1:{port}/"))?)
            .await?;
        client
            .fetch(&get(&format!("http://localhost:{port}/"))?)
            .await?;
        assert_eq!(up.accepted(), 2);
        // Host names are compared lower-cased.
        client
            .fetch(&get(&format!("http://LocalHost:{port}/"))?)
            .await?;
        assert_eq!(up.accepted(), 2);
        Ok(())
    }

    /// The upstream answers, then closes without saying `Connection: close`: the next request
    /// still succeeds, on a new connection.
    #[tokio::test]
    async fn idle_connection_closed_by_the_upstream_is_replaced() -> TestResult {
        let up =
            Upstream::start(|_, total| Reply::AnswerAndClose(ok(&format!("{{\"n\":{total}}}"))))
                .await?;
        let client = client()?;
        let first = client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(first.body, b"{\"n\":0}");
        let second = client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(second.body, b"{\"n\":1}");
        assert_eq!(up.accepted(), 2);
        Ok(())
    }

    /// The upstream closes the idle connection just as the next request arrives (it reads the
    /// request, then hangs up): the request is sent once more, on a fresh connection.
    #[tokio::test]
    async fn request_lost_on_a_reused_connection_is_retried_once() -> TestResult {
        let up = Upstream::start(|n, total| {
            if n == 0 {
                Reply::Answer(ok(&format!("{{\"n\":{total}}}")))
            } else {
                Reply::HangUp
            }
        })
        .await?;
        let client = client()?;
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(client.inner.pool.idle_count(), 1);
        let second = client.fetch(&get(&up.url("/"))?).await?;
        // Request 1 was lost on the reused connection; request 2 was the retry.
        assert_eq!(second.body, b"{\"n\":2}");
        assert_eq!(up.accepted(), 2);
        Ok(())
    }

    /// A failure on a fresh connection is reported, never retried: one retry at most.
    #[tokio::test]
    async fn failure_on_a_fresh_connection_is_not_retried() -> TestResult {
        let silent = Upstream::start(|_, _| Reply::HangUp).await?;
        let client = client()?;
        let err = client.fetch(&get(&silent.url("/"))?).await.err();
        assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::ConnectionClosed));
        assert_eq!(silent.accepted(), 1);

        // Answers the first request of the first connection only: the request lost on the
        // reused connection is retried once on a fresh one, which fails too and is reported.
        let once = Upstream::start(|n, total| {
            if n == 0 && total == 0 {
                Reply::Answer(ok("{}"))
            } else {
                Reply::HangUp
            }
        })
        .await?;
        client.fetch(&get(&once.url("/"))?).await?;
        let err = client.fetch(&get(&once.url("/"))?).await.err();
        assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::ConnectionClosed));
        assert_eq!(once.accepted(), 2);
        Ok(())
    }

    /// Binds a second upstream on 127.0.0.2 at the port of one on 127.0.0.1, so one URL can
    /// resolve to either.
    async fn pair() -> Result<(Upstream, Upstream), Box<dyn std::error::Error>> {
        let mut last = None;
        for _ in 0..10 {
            let a = Upstream::answering("{\"at\":\"a\"}").await?;
            let b_addr = SocketAddr::new(ip("127.0.0.2"), a.addr.port());
            let reply: Arc<ReplyFn> = Arc::new(|_, _| Reply::Answer(ok("{\"at\":\"b\"}")));
            match Upstream::bind(b_addr, None, reply).await {
                Ok(b) => return Ok((a, b)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(|| "no port pair".into(), Into::into))
    }

    /// The name resolves to A, then to B: the second request dials B and does not reuse the
    /// idle connection to A, which this request did not check.
    #[tokio::test]
    async fn reuse_only_to_an_address_the_request_checked() -> TestResult {
        let (a, b) = pair().await?;
        let resolver = Answers::new(&[("api.test", &[&[a.addr.ip()], &[b.addr.ip()]])]);
        let dialer = Arc::new(Recording::default());
        let client = builder(loopback()?, resolver.clone())
            .dialer(dialer.clone())
            .build()?;
        let url = format!("http://api.test:{}/", a.addr.port());
        let first = client.fetch(&get(&url)?).await?;
        assert_eq!(first.body, b"{\"at\":\"a\"}");
        assert_eq!(client.inner.pool.idle_count(), 1);
        let second = client.fetch(&get(&url)?).await?;
        assert_eq!(second.body, b"{\"at\":\"b\"}");
        assert_eq!(dialer.dialled(), vec![a.addr, b.addr]);
        // The name still resolves to B: B's connection is reused, and the lookup happened anyway.
        let third = client.fetch(&get(&url)?).await?;
        assert_eq!(third.body, b"{\"at\":\"b\"}");
        assert_eq!(dialer.dialled(), vec![a.addr, b.addr]);
        assert_eq!((a.accepted(), b.accepted()), (1, 1));
        assert_eq!(resolver.lookups(), 3);
        Ok(())
    }

    /// The name now resolves to a refused address: the request is refused although an idle
    /// connection to its former, allowed address is in the pool.
    #[tokio::test]
    async fn refused_answer_is_refused_despite_a_pooled_connection() -> TestResult {
        let up = Upstream::answering("{}").await?;
        let resolver = Answers::new(&[(
            "rebind.test",
            &[&[up.addr.ip()], &[ip("10.0.0.5")], &[up.addr.ip()]],
        )]);
        let dialer = Arc::new(Recording::default());
        let client = builder(loopback()?, resolver.clone())
            .dialer(dialer.clone())
            .build()?;
        let url = format!("http://rebind.test:{}/", up.addr.port());
        client.fetch(&get(&url)?).await?;
        assert_eq!(client.inner.pool.idle_count(), 1);
        let err = client.fetch(&get(&url)?).await.err();
        assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::SsrfBlocked));
        assert_eq!(dialer.dialled(), vec![up.addr]);
        // With the answer allowed again, the pooled connection serves the name.
        client.fetch(&get(&url)?).await?;
        assert_eq!(dialer.dialled(), vec![up.addr]);
        assert_eq!(resolver.lookups(), 3);
        Ok(())
    }

    #[tokio::test]
    async fn body_over_the_cap_is_not_pooled() -> TestResult {
        let big = "x".repeat(100);
        let up = Upstream::start(move |_, total| {
            if total == 0 {
                Reply::Answer(ok(&big))
            } else {
                Reply::Answer(ok("{}"))
            }
        })
        .await?;
        let client = builder(loopback()?, Answers::new(&[]))
            .limits(Limits {
                max_body_bytes: 16,
                ..Limits::default()
            })
            .build()?;
        let err = client.fetch(&get(&up.url("/"))?).await.err();
        assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::BodyTooLarge));
        assert_eq!(client.inner.pool.idle_count(), 0);
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(up.accepted(), 2);
        Ok(())
    }

    #[tokio::test]
    async fn undecodable_body_is_not_pooled() -> TestResult {
        let up = Upstream::start(|_, total| {
            if total == 0 {
                Reply::Answer(with_headers("garbage!", "content-encoding: gzip\r\n"))
            } else {
                Reply::Answer(ok("{}"))
            }
        })
        .await?;
        let client = client()?;
        let err = client.fetch(&get(&up.url("/"))?).await.err();
        assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::DecodeError));
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(up.accepted(), 2);
        Ok(())
    }

    /// `Connection: close` (and an HTTP/1.0 answer) means the connection is not kept, even if
    /// the upstream left it open.
    #[tokio::test]
    async fn connection_close_and_http_1_0_are_not_pooled() -> TestResult {
        let up = Upstream::start(|_, total| match total {
            0 => Reply::Answer(with_headers("{}", "Connection: keep-alive, Close\r\n")),
            1 => Reply::Answer(
                b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\n{}"
                    .to_vec(),
            ),
            _ => Reply::Answer(ok("{}")),
        })
        .await?;
        let client = client()?;
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(client.inner.pool.idle_count(), 0);
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(client.inner.pool.idle_count(), 0);
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(up.accepted(), 3);
        assert_eq!(client.inner.pool.idle_count(), 1);
        Ok(())
    }

    /// Methods other than GET and HEAD dial fresh, leave the pool alone and are not pooled.
    #[tokio::test]
    async fn other_methods_dial_fresh() -> TestResult {
        let up = Upstream::answering("{}").await?;
        let client = client()?;
        client.fetch(&get(&up.url("/"))?).await?;
        let mut post = with_method(&up.url("/"), HttpMethod::Post)?;
        post.body = Some(b"{}".to_vec());
        client.fetch(&post).await?;
        assert_eq!(up.accepted(), 2);
        assert_eq!(client.inner.pool.idle_count(), 1);
        for method in [HttpMethod::Put, HttpMethod::Patch, HttpMethod::Delete] {
            client.fetch(&with_method(&up.url("/"), method)?).await?;
        }
        assert_eq!(up.accepted(), 5);
        // The GET's connection was kept for the next GET.
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(up.accepted(), 5);
        Ok(())
    }

    #[tokio::test]
    async fn idle_connections_expire() -> TestResult {
        let up = Upstream::answering("{}").await?;
        let client = client_with(KeepAlive {
            idle_timeout: Duration::from_millis(100),
            ..KeepAlive::default()
        })?;
        client.fetch(&get(&up.url("/"))?).await?;
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(up.accepted(), 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        client.fetch(&get(&up.url("/"))?).await?;
        assert_eq!(up.accepted(), 2);
        Ok(())
    }

    #[tokio::test]
    async fn disabled_keep_alive_dials_every_request() -> TestResult {
        let up = Upstream::answering("{}").await?;
        let client = client_with(KeepAlive::disabled())?;
        for _ in 0..3 {
            client.fetch(&get(&up.url("/"))?).await?;
        }
        assert_eq!(up.accepted(), 3);
        assert_eq!(client.inner.pool.idle_count(), 0);
        Ok(())
    }

    /// Six requests at once need six connections; four stay idle for the key.
    #[tokio::test]
    async fn at_most_four_idle_connections_per_key() -> TestResult {
        let up = Upstream::answering("{}").await?;
        let client = client()?;
        // Spawned before any of them runs: each finds the pool empty and dials.
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let (client, req) = (client.clone(), get(&up.url("/"))?);
            set.spawn(async move { client.fetch(&req).await.map(|r| r.status) });
        }
        while let Some(done) = set.join_next().await {
            assert_eq!(done??, 200);
        }
        assert_eq!(up.accepted(), 6);
        assert_eq!(client.inner.pool.idle_count(), 4);
        Ok(())
    }

    /// Over the total, the connection idle the longest is closed.
    #[tokio::test]
    async fn the_oldest_idle_connection_goes_over_the_total() -> TestResult {
        let ups = [
            Upstream::answering("{}").await?,
            Upstream::answering("{}").await?,
            Upstream::answering("{}").await?,
        ];
        let client = client_with(KeepAlive {
            max_idle_total: 2,
            ..KeepAlive::default()
        })?;
        for up in &ups {
            client.fetch(&get(&up.url("/"))?).await?;
        }
        assert_eq!(client.inner.pool.idle_count(), 2);
        // The third's and the second's connections were kept, the first's closed.
        client.fetch(&get(&ups[2].url("/"))?).await?;
        client.fetch(&get(&ups[1].url("/"))?).await?;
        client.fetch(&get(&ups[0].url("/"))?).await?;
        let accepted: Vec<usize> = ups.iter().map(Upstream::accepted).collect();
        assert_eq!(accepted, vec![2, 1, 1]);
        Ok(())
    }

    // ------------------------------------------------------------------ https

    /// A CA and a leaf certificate signed by it, as DER.
    struct Pki {
        ca: Vec<u8>,
        cert: Vec<u8>,
        key: Vec<u8>,
    }

    /// A CA and a leaf for `names`.
    fn pki(names: &[&str]) -> Result<Pki, rcgen::Error> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_key = rcgen::KeyPair::generate()?;
        let ca = params.self_signed(&ca_key)?;
        let issuer = rcgen::Issuer::new(params, ca_key);
        let leaf = rcgen::CertificateParams::new(
            names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        )?;
        let key = rcgen::KeyPair::generate()?;
        let cert = leaf.signed_by(&key, &issuer)?;
        Ok(Pki {
            ca: ca.der().to_vec(),
            cert: cert.der().to_vec(),
            key: key.serialize_der(),
        })
    }

    /// For https the key is the TLS server name: a connection verified for one name never
    /// serves another, even at the same address and port.
    #[tokio::test]
    async fn https_connections_are_kept_per_server_name() -> TestResult {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let Pki { ca, cert, key } = pki(&["a.test", "b.test"])?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert)],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
            )?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let reply: Arc<ReplyFn> = Arc::new(|_, _| Reply::Answer(ok("{}")));
        let up =
            Upstream::bind(SocketAddr::from(([127, 0, 0, 1], 0)), Some(acceptor), reply).await?;
        let here: &[&[IpAddr]] = &[&[ip("127.0.0.1")]];
        let resolver = Answers::new(&[("a.test", here), ("b.test", here), ("b.test.", here)]);
        let client = builder(loopback()?, resolver)
            .add_root_certificate(ca)
            .build()?;
        let port = up.addr.port();
        for name in ["a.test", "b.test", "A.test", "b.test."] {
            let resp = client
                .fetch(&get(&format!("https://{name}:{port}/"))?)
                .await?;
            assert_eq!(resp.status, 200, "{name}");
        }
        assert_eq!(up.accepted(), 2);
        assert_eq!(client.inner.pool.idle_count(), 2);
        Ok(())
    }

    // --------------------------------------------------------- planted responses

    const REAL: &str = "{\"v\":\"real\"}";
    const FORGED: &str = "{\"v\":\"FORGED\"}";

    /// A 200 with a chunked body ending in a trailer.
    fn chunked_with_trailers(body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\
             trailer: x-sum\r\n\r\n{:x}\r\n{body}\r\n0\r\nx-sum: 1\r\n\r\n",
            body.len()
        )
        .into_bytes()
    }

    fn real_answer(chunked: bool) -> Vec<u8> {
        if chunked {
            chunked_with_trailers(REAL)
        } else {
            ok(REAL)
        }
    }

    /// The request of one workspace.
    fn of(workspace: Uuid, mut req: FetchRequest) -> FetchRequest {
        req.workspace = Some(workspace);
        req
    }

    impl Upstream {
        /// Answers every request with [`REAL`] (chunked with trailers, or with a length); the
        /// answers to `/a` are followed, `after` later and in a separate write, by a second
        /// complete response with [`FORGED`] that nobody asked for.
        async fn planting(after: Duration, chunked: bool) -> io::Result<Upstream> {
            let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
            let addr = listener.local_addr()?;
            let accepted = Arc::new(AtomicUsize::new(0));
            let counter = accepted.clone();
            let task = tokio::spawn(async move {
                while let Ok((mut s, _)) = listener.accept().await {
                    counter.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(async move {
                        while let Ok(head) = read_request(&mut s).await {
                            let answer = real_answer(chunked);
                            if s.write_all(&answer).await.is_err() || s.flush().await.is_err() {
                                return;
                            }
                            if head.starts_with("get /a ") {
                                if !after.is_zero() {
                                    tokio::time::sleep(after).await;
                                }
                                if s.write_all(&ok(FORGED)).await.is_err() {
                                    return;
                                }
                            }
                        }
                    });
                }
            });
            Ok(Upstream {
                addr,
                accepted,
                task,
            })
        }
    }

    /// Workspace A's upstream plants a response after each answer to A; workspace B's request
    /// to the same address right after A's reads the real answer, every time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_planted_response_never_reaches_another_workspace() -> TestResult {
        let (a, b) = (Uuid::from_u128(0xa), Uuid::from_u128(0xb));
        let mut failed = Vec::new();
        for chunked in [false, true] {
            for after_ms in [0, 2] {
                let up = Upstream::planting(Duration::from_millis(after_ms), chunked).await?;
                let client = client()?;
                let mut forged = 0;
                for _ in 0..200 {
                    // A's own answers may be planted on: that is A's upstream answering A.
                    let _ = client.fetch(&of(a, get(&up.url("/a"))?)).await;
                    let resp = client.fetch(&of(b, get(&up.url("/b"))?)).await?;
                    if resp.body != REAL.as_bytes() {
                        forged += 1;
                    }
                }
                if forged > 0 {
                    failed.push(format!(
                        "chunked {chunked}, planted {after_ms} ms after: {forged} of 200 forged"
                    ));
                }
            }
        }
        assert!(failed.is_empty(), "{failed:?}");
        Ok(())
    }

    /// A blocking upstream on a thread of its own: answers each request with [`REAL`], then
    /// waits for the test's word, writes a [`FORGED`] response in a separate write and says
    /// when it is written. So the planted bytes are on the idle connection, unread, before the
    /// next request starts.
    struct Planter {
        addr: SocketAddr,
        accepted: Arc<AtomicUsize>,
        plant: Option<std::sync::mpsc::Sender<()>>,
        planted: std::sync::mpsc::Receiver<()>,
    }

    impl Planter {
        fn start(chunked: bool) -> io::Result<Planter> {
            use std::io::{Read, Write};
            let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
            let addr = listener.local_addr()?;
            let accepted = Arc::new(AtomicUsize::new(0));
            let counter = accepted.clone();
            let (plant, plant_rx) = std::sync::mpsc::channel::<()>();
            let (planted_tx, planted) = std::sync::mpsc::channel::<()>();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut s) = stream else { return };
                    counter.fetch_add(1, Ordering::SeqCst);
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    'requests: loop {
                        let end = loop {
                            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break end + 4;
                            }
                            match s.read(&mut chunk) {
                                Ok(0) | Err(_) => break 'requests,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        buf.drain(..end);
                        if s.write_all(&real_answer(chunked)).is_err() {
                            break;
                        }
                        // The test dropped its sender: it is over.
                        if plant_rx.recv().is_err() {
                            return;
                        }
                        let _ = s.write_all(ok(FORGED).as_slice());
                        if planted_tx.send(()).is_err() {
                            return;
                        }
                    }
                }
            });
            Ok(Planter {
                addr,
                accepted,
                plant: Some(plant),
                planted,
            })
        }

        /// Plants a response on the connection that carried the last answer; returns once it
        /// is written.
        fn plant(&self) -> Result<(), Box<dyn std::error::Error>> {
            self.plant.as_ref().ok_or("no upstream")?.send(())?;
            self.planted.recv_timeout(Duration::from_secs(5))?;
            Ok(())
        }
    }

    impl Drop for Planter {
        fn drop(&mut self) {
            // Ends the thread: its next recv fails, and a connection wakes a blocked accept.
            self.plant = None;
            let _ = std::net::TcpStream::connect(self.addr);
        }
    }

    /// Within one workspace too, a connection on which bytes arrived after its response is
    /// never reused: the request dials afresh and reads its own answer.
    #[tokio::test]
    async fn a_planted_response_that_arrived_is_never_read() -> TestResult {
        let ws = Uuid::from_u128(0xa);
        let mut failed = Vec::new();
        for chunked in [false, true] {
            let planter = Planter::start(chunked)?;
            let client = client()?;
            let url = format!("http://{}/", planter.addr);
            let mut forged = 0;
            for _ in 0..200 {
                match client.fetch(&of(ws, get(&url)?)).await {
                    Ok(resp) if resp.body == REAL.as_bytes() => {}
                    _ => forged += 1,
                }
                planter.plant()?;
            }
            // Every request found its connection planted on and dialled a fresh one.
            let dialled = planter.accepted.load(Ordering::SeqCst);
            if forged > 0 || dialled != 200 {
                failed.push(format!(
                    "chunked {chunked}: {forged} of 200 forged, {dialled} connections"
                ));
            }
        }
        assert!(failed.is_empty(), "{failed:?}");
        Ok(())
    }
}
