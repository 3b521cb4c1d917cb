//! The SSRF-safe outbound client (D14): one fresh connection per request, to an address checked
//! against the policy, with the whole exchange under one deadline.
//!
//! Each request goes: policy check of the URL (the same `Url` that was validated) → IP literal
//! canonicalised and judged, or the name judged, resolved once (with a timeout) and every answer
//! judged (one blocked answer refuses the request) → TCP to the checked addresses only (no second
//! lookup) → TLS (rustls, ring, TLS 1.2/1.3, webpki roots) → HTTP/1.1 (hyper) with bounded header
//! count and size → body read and decoded into a buffer capped at 10 MiB after decompression.
//! No proxy variables are read, no cookie is kept, no connection is reused.

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
use hyper_util::rt::TokioIo;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use url::{Host, Url};

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
}

impl FetchRequest {
    /// A plain GET with no credential, the default 10 s timeout and no redirects.
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

/// Builds a [`Client`]: resolver, dialer, extra trust anchors and limits are injectable.
#[derive(Debug)]
pub struct ClientBuilder {
    allow: AllowList,
    resolver: Arc<dyn Resolver>,
    dialer: Arc<dyn Dialer>,
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    webpki_roots: bool,
    limits: Limits,
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
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("allow", &self.inner.allow)
            .field("limits", &self.inner.limits)
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
            let body = self.read_body(head, method, deadline).await?;
            return Ok(FetchResponse {
                status,
                headers,
                body,
                elapsed: start.elapsed(),
                url,
                redirects,
            });
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

    /// Connects and sends one request; returns the response head with its connection.
    async fn exchange(
        &self,
        req: &FetchRequest,
        url: &Url,
        method: HttpMethod,
        body: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<Head, FetchError> {
        let limits = self.inner.limits;
        let addrs = self.checked_addresses(url, deadline).await?;
        let port = url.port_or_known_default().unwrap_or(80);
        let tcp = self.connect(&addrs, port, deadline).await?;
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
        let (mut sender, conn) = timeout_at(deadline, builder.handshake(TokioIo::new(stream)))
            .await
            .map_err(|_| timeout("during the HTTP handshake"))?
            .map_err(|e| classify_hyper(&e, false))?;
        let driver = AbortOnDrop(tokio::spawn(async move {
            let _ = conn.await;
        }));
        let request = build_request(req, url, method, body)?;
        let response = timeout_at(deadline, sender.send_request(request))
            .await
            .map_err(|_| timeout("waiting for the response headers"))?
            .map_err(|e| classify_hyper(&e, false))?;
        Ok(Head {
            response,
            _driver: driver,
        })
    }

    async fn read_body(
        &self,
        head: Head,
        method: HttpMethod,
        deadline: Instant,
    ) -> Result<Vec<u8>, FetchError> {
        let cap = self.inner.limits.max_body_bytes;
        let Head { response, _driver } = head;
        if method == HttpMethod::Head {
            return Ok(Vec::new());
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
        drop(_driver);
        decoder.finish()
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
                        .map_err(|e| match e {
                            UrlError::Blocked(why) => FetchError::new(
                                FetchErrorKind::SsrfBlocked,
                                format!("{name} resolves to a refused address: {why}"),
                            ),
                            other => policy_error(other),
                        })?;
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

    /// Dials the checked addresses in order until one answers.
    async fn connect(
        &self,
        addrs: &[IpAddr],
        port: u16,
        deadline: Instant,
    ) -> Result<TcpStream, FetchError> {
        let mut last = FetchError::new(FetchErrorKind::ConnectFailed, "no address to connect to");
        for ip in addrs {
            let addr = SocketAddr::new(*ip, port);
            let limit = deadline.min(Instant::now() + self.inner.limits.connect_timeout);
            match timeout_at(limit, self.inner.dialer.dial(addr)).await {
                Ok(Ok(stream)) => return Ok(stream),
                Ok(Err(e)) => {
                    let kind = match e.kind() {
                        io::ErrorKind::ConnectionRefused => FetchErrorKind::ConnectRefused,
                        io::ErrorKind::TimedOut => FetchErrorKind::ConnectTimeout,
                        _ => FetchErrorKind::ConnectFailed,
                    };
                    last = FetchError::new(kind, format!("connecting to {addr} failed: {e}"));
                }
                Err(_) => {
                    last = FetchError::new(
                        FetchErrorKind::ConnectTimeout,
                        format!("connecting to {addr} took too long"),
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

/// A response head and the task driving its connection (aborted when dropped, so a connection
/// is never left behind).
struct Head {
    response: http::Response<hyper::body::Incoming>,
    _driver: AbortOnDrop,
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

fn policy_error(e: UrlError) -> FetchError {
    match e {
        UrlError::Blocked(why) => FetchError::new(
            FetchErrorKind::SsrfBlocked,
            format!("refused by the outbound address policy: {why}"),
        ),
        other => FetchError::new(FetchErrorKind::InvalidUrl, format!("the URL is {other}")),
    }
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
    use crate::service::ServiceError;
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
        ];
        for kind in FetchErrorKind::ALL {
            messages.push(FetchError::new(*kind, "cause").to_string());
        }
        let fetch = FetchError::new(FetchErrorKind::TlsError, tls_reason(&tls_errors()[0]));
        let id = uuid::Uuid::nil();
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
            messages.push(ServiceError::from_monitor(e, "endpoint", id).to_string());
        }
        for e in [
            ServiceError::Invalid("x".into()),
            ServiceError::not_found("endpoint", id),
            ServiceError::TooLarge(10),
            ServiceError::NoKey(", so credentials cannot be sealed"),
            ServiceError::Store(apidrift_store::StoreError::NotFound),
        ] {
            messages.push(e.to_string());
        }
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
