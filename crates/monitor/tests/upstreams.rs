//! security-tests.md "Bad upstreams", every row that loopback can produce: bounded time, bounded
//! memory (the caps), and the recorded error kind. Each case uses a short deadline (300 ms).

mod support;

use apidrift_model::validate::{Credential, ExtraHeader};
use apidrift_model::{HttpMethod, SecretString};
use apidrift_monitor::{Client, FetchErrorKind, FetchRequest, FetchResponse, Limits};
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

const DEADLINE: Duration = Duration::from_millis(300);
/// Slack for a loaded 2-core CI machine.
const BOUND: Duration = Duration::from_millis(1500);

fn req(url: &str) -> Result<FetchRequest, Box<dyn std::error::Error>> {
    let mut r = FetchRequest::get(Url::parse(url)?);
    r.timeout = DEADLINE;
    Ok(r)
}

/// Fetches with the loopback client and returns the error kind and the time it took.
async fn kind_of(
    client: &Client,
    url: &str,
) -> Result<(Option<FetchErrorKind>, Duration), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let r = client.fetch(&req(url)?).await;
    Ok((r.err().map(|e| e.kind), started.elapsed()))
}

async fn expect(server: &Server, kind: FetchErrorKind) -> TestResult {
    let client = loopback_client()?;
    let (got, took) = kind_of(&client, &server.url("/")).await?;
    assert_eq!(got, Some(kind));
    assert!(took < BOUND, "took {took:?}");
    Ok(())
}

async fn read_head(s: &mut TcpStream) {
    let _ = read_request(s).await;
}

/// Row 1: SYN black-holed → `connect_timeout` at the connect bound (shrunk to 200 ms).
#[tokio::test]
async fn black_holed_syn_is_connect_timeout() -> TestResult {
    let dialer = RecordingDialer::new(DialMode::BlackHole);
    let client = builder(loopback(), StubResolver::new(&[]))
        .dialer(dialer)
        .build()?;
    let mut r = req("http://127.0.0.1:9/")?;
    r.timeout = Duration::from_secs(5);
    let started = Instant::now();
    let err = client.fetch(&r).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::ConnectTimeout));
    assert!(started.elapsed() < BOUND);
    // The deadline bounds the connect too when it is shorter than the connect bound.
    let (kind, took) = kind_of(&client, "http://127.0.0.1:9/").await?;
    assert_eq!(kind, Some(FetchErrorKind::ConnectTimeout));
    assert!(took < BOUND);
    assert_eq!(apidrift_monitor::CONNECT_TIMEOUT, Duration::from_secs(5));
    Ok(())
}

/// Row 2: nothing listening → RST → `connect_refused` at once.
#[tokio::test]
async fn refused_connection() -> TestResult {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let (kind, took) = kind_of(&loopback_client()?, &format!("http://127.0.0.1:{port}/")).await?;
    assert_eq!(kind, Some(FetchErrorKind::ConnectRefused));
    assert!(took < Duration::from_millis(200));
    Ok(())
}

/// Row 3: accepts, never writes → `timeout`.
#[tokio::test]
async fn silent_upstream_is_timeout() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await?;
    let (kind, took) = kind_of(&loopback_client()?, &server.url("/")).await?;
    assert_eq!(kind, Some(FetchErrorKind::Timeout));
    assert!(took >= DEADLINE && took < BOUND, "took {took:?}");
    Ok(())
}

/// Row 4: headers at one byte per 50 ms → `timeout` (per-read timeouts would never fire).
#[tokio::test]
async fn trickled_headers_are_timeout() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        for b in b"HTTP/1.1 200 OK\r\nx-slow: "
            .iter()
            .chain([b'a'; 1000].iter())
        {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    expect(&server, FetchErrorKind::Timeout).await
}

/// Rows 5 and 39: a body that trickles forever, or too slowly for its size → `timeout`.
#[tokio::test]
async fn trickled_body_is_timeout() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 921600\r\n\r\n")
            .await;
        loop {
            if s.write_all(&[b'x'; 100]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await?;
    expect(&server, FetchErrorKind::Timeout).await
}

/// Row 6: `Content-Length: 10GB` → `body_too_large` without reading it.
#[tokio::test]
async fn declared_huge_body() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10000000000\r\n\r\n{")
            .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await?;
    expect(&server, FetchErrorKind::BodyTooLarge).await
}

/// Row 7: an endless chunked body stops at the cap (10 MiB) → `body_too_large`.
#[tokio::test]
async fn endless_chunked_body() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .await;
        let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
        while s.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await?;
    let client = loopback_client()?;
    let mut r = req(&server.url("/"))?;
    r.timeout = Duration::from_secs(5);
    let started = Instant::now();
    let err = client.fetch(&r).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::BodyTooLarge));
    assert!(started.elapsed() < Duration::from_secs(5));
    Ok(())
}

/// Row 8: declares 1e6 bytes, sends 10, closes → `incomplete_body`.
#[tokio::test]
async fn short_body_is_incomplete() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n0123456789")
            .await;
        let _ = s.shutdown().await;
    })
    .await?;
    expect(&server, FetchErrorKind::IncompleteBody).await
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn encoded_server(encoding: &'static str, body: Vec<u8>) -> Vec<u8> {
    response(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("content-encoding", encoding),
        ],
        &body,
    )
}

/// A client with a 1 MiB body cap, so bombs are quick to build in a debug test.
fn small_cap_client() -> Result<Client, apidrift_monitor::FetchError> {
    builder(loopback(), StubResolver::new(&[]))
        .limits(Limits {
            max_body_bytes: 1024 * 1024,
            ..short_limits()
        })
        .build()
}

/// Rows 9 and 10: gzip bombs (single and stacked) stop at the cap after decompression.
#[tokio::test]
async fn gzip_bombs_stop_at_the_cap() -> TestResult {
    let zeros = vec![0u8; 8 * 1024 * 1024];
    let bomb = gzip(&zeros);
    assert!(bomb.len() < 64 * 1024, "the bomb is small on the wire");
    let client = small_cap_client()?;
    let (server, _) = Server::fixed(encoded_server("gzip", bomb.clone())).await?;
    let (kind, took) = kind_of(&client, &server.url("/")).await?;
    assert_eq!(kind, Some(FetchErrorKind::BodyTooLarge));
    assert!(took < BOUND);
    let (server, _) = Server::fixed(encoded_server("gzip, gzip", gzip(&bomb))).await?;
    let (kind, _) = kind_of(&client, &server.url("/")).await?;
    assert_eq!(kind, Some(FetchErrorKind::BodyTooLarge));
    Ok(())
}

/// Row 10: zstd is not decoded → `unsupported_encoding`; br decodes (and is capped).
#[tokio::test]
async fn other_encodings() -> TestResult {
    let (server, _) = Server::fixed(encoded_server("zstd", b"(\xb5/\xfd".to_vec())).await?;
    expect(&server, FetchErrorKind::UnsupportedEncoding).await?;
    // A hand-made brotli stream of "{}" (RFC 7932: WBITS 16, one uncompressed meta-block of
    // 2 bytes, then an empty last meta-block).
    let (server, _) = Server::fixed(encoded_server("br", b"\x10\x00\x10{}\x03".to_vec())).await?;
    let resp = loopback_client()?.fetch(&req(&server.url("/"))?).await?;
    assert_eq!(resp.body, b"{}");
    Ok(())
}

/// Row 11: corrupt gzip → `decode_error`.
#[tokio::test]
async fn corrupt_gzip_is_decode_error() -> TestResult {
    let (server, _) =
        Server::fixed(encoded_server("gzip", b"\x1f\x8b\x08\x00garbage!".to_vec())).await?;
    expect(&server, FetchErrorKind::DecodeError).await
}

/// Rows 15 and 40: invalid UTF-8 in a header and a large non-JSON error page are no failure:
/// the status is recorded, the value is kept lossily.
#[tokio::test]
async fn invalid_utf8_and_error_pages() -> TestResult {
    let mut raw =
        b"HTTP/1.1 500 Internal Server Error\r\nx-odd: \xff\xfe\r\ncontent-type: text/html\r\n"
            .to_vec();
    let page = vec![b'<'; 5 * 1024 * 1024];
    raw.extend_from_slice(format!("content-length: {}\r\n\r\n", page.len()).as_bytes());
    raw.extend_from_slice(&page);
    let (server, _) = Server::fixed(raw).await?;
    let client = loopback_client()?;
    let mut r = req(&server.url("/"))?;
    r.timeout = Duration::from_secs(5);
    let resp = client.fetch(&r).await?;
    assert_eq!(resp.status, 500);
    assert_eq!(resp.header("x-odd"), Some("\u{fffd}\u{fffd}"));
    assert_eq!(resp.body.len(), 5 * 1024 * 1024);
    Ok(())
}

/// Row 16: 10 000 headers → `headers_too_large` (at most 100 are accepted).
#[tokio::test]
async fn too_many_headers() -> TestResult {
    let mut raw = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..10_000 {
        raw.push_str(&format!("x-h{i}: v\r\n"));
    }
    raw.push_str("content-length: 0\r\n\r\n");
    let (server, _) = Server::fixed(raw.into_bytes()).await?;
    expect(&server, FetchErrorKind::HeadersTooLarge).await?;
    // 101 is one too many as well.
    let mut raw = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..101 {
        raw.push_str(&format!("x-h{i}: v\r\n"));
    }
    raw.push_str("content-length: 0\r\n\r\n");
    let (server, _) = Server::fixed(raw.into_bytes()).await?;
    expect(&server, FetchErrorKind::HeadersTooLarge).await
}

/// Row 17: one 1 MB header → `headers_too_large`.
#[tokio::test]
async fn one_huge_header() -> TestResult {
    let raw = format!(
        "HTTP/1.1 200 OK\r\nx-big: {}\r\ncontent-length: 0\r\n\r\n",
        "a".repeat(1024 * 1024)
    );
    let (server, _) = Server::fixed(raw.into_bytes()).await?;
    expect(&server, FetchErrorKind::HeadersTooLarge).await
}

/// Row 18: garbage status line → `protocol_error`.
#[tokio::test]
async fn garbage_status_line() -> TestResult {
    let (server, _) = Server::fixed(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()).await?;
    expect(&server, FetchErrorKind::ProtocolError).await
}

/// Row 19: conflicting Content-Length values → `protocol_error`.
#[tokio::test]
async fn conflicting_content_lengths() -> TestResult {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 7\r\n\r\nhello".to_vec();
    let (server, _) = Server::fixed(raw).await?;
    expect(&server, FetchErrorKind::ProtocolError).await
}

/// Row 19: both Content-Length and Transfer-Encoding: hyper follows RFC 9112 (chunked wins and
/// the length is ignored), so the response is read as chunked, bounded, without desync.
#[tokio::test]
async fn content_length_and_chunked() -> TestResult {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".to_vec();
    let (server, _) = Server::fixed(raw).await?;
    let resp = loopback_client()?.fetch(&req(&server.url("/"))?).await?;
    assert_eq!(resp.body, b"{}");
    Ok(())
}

/// Row 20: closes mid-headers → `connection_closed`.
#[tokio::test]
async fn closed_mid_headers() -> TestResult {
    let (server, _) = Server::fixed(b"HTTP/1.1 200 OK\r\ncontent-ty".to_vec()).await?;
    expect(&server, FetchErrorKind::ConnectionClosed).await?;
    let (server, _) = Server::fixed(Vec::new()).await?;
    expect(&server, FetchErrorKind::ConnectionClosed).await
}

/// Row 21: RST mid-body → `connection_reset`.
#[tokio::test]
async fn reset_mid_body() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n{\"partial\":")
            .await;
        let _ = s.flush().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        // SO_LINGER 0: close() sends RST instead of FIN.
        let std = s.into_std();
        if let Ok(std) = std {
            let sock = socket_linger_zero(std);
            drop(sock);
        }
    })
    .await?;
    expect(&server, FetchErrorKind::ConnectionReset).await
}

fn socket_linger_zero(std: std::net::TcpStream) -> Option<tokio::net::TcpStream> {
    let _ = std.set_nonblocking(true);
    let s = tokio::net::TcpStream::from_std(std).ok()?;
    #[allow(
        deprecated,
        reason = "set_linger(0) is exactly the RST this test needs"
    )]
    let _ = s.set_linger(Some(Duration::ZERO));
    Some(s)
}

/// Row 22: endless 1xx responses are bounded by the deadline.
#[tokio::test]
async fn endless_informational_responses() -> TestResult {
    let server = Server::start(|mut s| async move {
        read_head(&mut s).await;
        loop {
            if s.write_all(b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await?;
    expect(&server, FetchErrorKind::Timeout).await
}

/// Row 33: a 429 with a huge Retry-After is a response, answered at once (no sleeping).
#[tokio::test]
async fn rate_limited_upstream_is_a_response() -> TestResult {
    let (server, _) = Server::fixed(response(
        "429 Too Many Requests",
        &[("retry-after", "999999999")],
        b"{}",
    ))
    .await?;
    let started = Instant::now();
    let resp = loopback_client()?.fetch(&req(&server.url("/"))?).await?;
    assert_eq!(resp.status, 429);
    assert!(started.elapsed() < DEADLINE);
    Ok(())
}

/// Row 35: a Set-Cookie flood is ignored; no cookie is ever sent back.
#[tokio::test]
async fn cookies_are_never_kept() -> TestResult {
    let cookies: Vec<(String, String)> = (0..50)
        .map(|i| ("set-cookie".to_owned(), format!("c{i}=v; Path=/")))
        .collect();
    let pairs: Vec<(&str, &str)> = cookies
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (server, seen) = Server::fixed(response("200 OK", &pairs, b"{}")).await?;
    let client = loopback_client()?;
    client.fetch(&req(&server.url("/"))?).await?;
    client.fetch(&req(&server.url("/"))?).await?;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|h| !h.to_ascii_lowercase().contains("cookie"))
    );
    Ok(())
}

/// Credentials reach the upstream in each auth style (D6), with extra headers and a request
/// body for non-GET methods; a failure message never contains a credential.
#[tokio::test]
async fn credentials_in_each_auth_style() -> TestResult {
    let cases: Vec<(Credential, &str)> = vec![
        (
            Credential::Bearer {
                token: SecretString::new("tok-1"),
            },
            "authorization: Bearer tok-1",
        ),
        (
            Credential::Oauth {
                token: SecretString::new("tok-2"),
            },
            "authorization: Bearer tok-2",
        ),
        (
            Credential::ApiKey {
                header: "X-API-Key".into(),
                key: SecretString::new("key-3"),
            },
            "x-api-key: key-3",
        ),
        (
            Credential::Basic {
                username: SecretString::new("user"),
                password: SecretString::new("pass"),
            },
            "authorization: Basic dXNlcjpwYXNz",
        ),
        (
            Credential::Custom {
                header: "X-Custom-Auth".into(),
                value: SecretString::new("val-5"),
            },
            "x-custom-auth: val-5",
        ),
    ];
    let (server, seen) = Server::fixed(json_ok("{}")).await?;
    let client = loopback_client()?;
    for (credential, line) in &cases {
        let mut r = req(&server.url("/items?x=1"))?;
        r.credential = credential.clone();
        r.headers = vec![ExtraHeader {
            name: "X-Tenant".into(),
            value: SecretString::new("acme"),
        }];
        r.method = HttpMethod::Post;
        r.body = Some(b"{\"q\":1}".to_vec());
        r.content_type = Some("application/vnd.test+json".into());
        client.fetch(&r).await?;
        let last = seen
            .lock()
            .map(|s| s.last().cloned().unwrap_or_default())
            .unwrap_or_default();
        assert!(last.starts_with("POST /items?x=1 HTTP/1.1"), "{last}");
        assert!(last.contains(line), "{line} not in {last}");
        assert!(last.contains("x-tenant: acme"), "{last}");
        assert!(
            last.contains("content-type: application/vnd.test+json"),
            "{last}"
        );
        assert!(last.ends_with("{\"q\":1}"), "{last}");
    }
    // A GET sends no body even if one is configured.
    let mut r = req(&server.url("/"))?;
    r.body = Some(b"ignored".to_vec());
    client.fetch(&r).await?;
    let last = seen
        .lock()
        .map(|s| s.last().cloned().unwrap_or_default())
        .unwrap_or_default();
    assert!(!last.contains("ignored"));
    // Row 34-style canary: a failing fetch with a credential never prints it.
    let mut r = req("http://127.0.0.1:1/")?;
    r.credential = Credential::Bearer {
        token: SecretString::new("canary-secret-9"),
    };
    let err = client
        .fetch(&r)
        .await
        .err()
        .map(|e| format!("{e} {e:?}"))
        .unwrap_or_default();
    assert!(!err.is_empty() && !err.contains("canary-secret-9"), "{err}");
    Ok(())
}

// ------------------------------------------------------------------ TLS (rows 26–30)

struct Pki {
    ca_der: Vec<u8>,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

fn pki() -> Result<Pki, rcgen::Error> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "apidrift test CA");
    let key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok(Pki {
        ca_der: cert.der().to_vec(),
        issuer: rcgen::Issuer::new(params, key),
    })
}

fn leaf(pki: &Pki, names: &[&str], expired: bool) -> Result<(Vec<u8>, Vec<u8>), rcgen::Error> {
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())?;
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = rcgen::KeyPair::generate()?;
    let cert = params.signed_by(&key, &pki.issuer)?;
    Ok((cert.der().to_vec(), key.serialize_der()))
}

fn self_signed(names: &[&str]) -> Result<(Vec<u8>, Vec<u8>), rcgen::Error> {
    let params =
        rcgen::CertificateParams::new(names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())?;
    let key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.der().to_vec(), key.serialize_der()))
}

/// A TLS server answering `{}` over HTTP/1.1.
async fn tls_server(cert: Vec<u8>, key: Vec<u8>) -> Result<Server, Box<dyn std::error::Error>> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert)],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
        )?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    Ok(Server::start(move |s| {
        let acceptor = acceptor.clone();
        async move {
            if let Ok(mut tls) = acceptor.accept(s).await {
                let mut buf = vec![0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let _ = tls.write_all(&json_ok("{}")).await;
                let _ = tls.shutdown().await;
            }
        }
    })
    .await?)
}

fn tls_client(pki: &Pki) -> Result<(Client, Arc<StubResolver>), apidrift_monitor::FetchError> {
    let resolver = StubResolver::new(&[(
        "api.test",
        Answer::Addrs(vec![
            "127.0.0.1"
                .parse()
                .unwrap_or(std::net::Ipv4Addr::LOCALHOST.into()),
        ]),
    )]);
    let client = builder(loopback(), resolver.clone())
        .add_root_certificate(pki.ca_der.clone())
        .build()?;
    Ok((client, resolver))
}

async fn tls_fetch(
    client: &Client,
    port: u16,
) -> Result<FetchResponse, apidrift_monitor::FetchError> {
    let mut r = FetchRequest::get(Url::parse(&format!("https://api.test:{port}/")).map_err(
        |_| apidrift_monitor::FetchError {
            kind: FetchErrorKind::InvalidUrl,
            message: String::new(),
            elapsed: Duration::ZERO,
        },
    )?);
    r.timeout = DEADLINE;
    client.fetch(&r).await
}

/// A certificate from a trusted CA for the right name works (the control case).
#[tokio::test]
async fn tls_with_a_trusted_certificate() -> TestResult {
    let pki = pki()?;
    let (cert, key) = leaf(&pki, &["api.test"], false)?;
    let server = tls_server(cert, key).await?;
    let (client, _) = tls_client(&pki)?;
    let resp = tls_fetch(&client, server.addr.port()).await?;
    assert_eq!((resp.status, resp.body.as_slice()), (200, b"{}".as_slice()));
    Ok(())
}

/// Rows 26–29: self-signed, expired, wrong name, plain HTTP on the TLS port → `tls_error`, with
/// no insecure fallback (the upstream is contacted once).
#[tokio::test]
async fn tls_failures() -> TestResult {
    let pki = pki()?;
    let (client, _) = tls_client(&pki)?;
    let (cert, key) = self_signed(&["api.test"])?;
    let s1 = tls_server(cert, key).await?;
    let (cert, key) = leaf(&pki, &["api.test"], true)?;
    let s2 = tls_server(cert, key).await?;
    let (cert, key) = leaf(&pki, &["other.test"], false)?;
    let s3 = tls_server(cert, key).await?;
    // A plain HTTP server answers the ClientHello with a 400, as real ones do.
    let s4 = Server::start(|mut s| async move {
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf).await;
        let _ = s
            .write_all(&response("400 Bad Request", &[], b"bad request"))
            .await;
    })
    .await?;
    for (what, server) in [
        ("self-signed", &s1),
        ("expired", &s2),
        ("mismatch", &s3),
        ("plain", &s4),
    ] {
        let err = tls_fetch(&client, server.addr.port()).await.err();
        assert_eq!(
            err.map(|e| e.kind),
            Some(FetchErrorKind::TlsError),
            "{what}"
        );
        assert_eq!(server.hits(), 1, "{what}");
    }
    Ok(())
}

/// Row 30: stalls after the ClientHello → `timeout`.
#[tokio::test]
async fn tls_stall_is_timeout() -> TestResult {
    let server = Server::start(|mut s| async move {
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await?;
    let pki = pki()?;
    let (client, _) = tls_client(&pki)?;
    let started = Instant::now();
    let err = tls_fetch(&client, server.addr.port()).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::Timeout));
    assert!(started.elapsed() < BOUND);
    Ok(())
}

/// Row 58: https → http is refused even with redirects on.
#[tokio::test]
async fn https_to_http_redirect_is_refused() -> TestResult {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let pki = pki()?;
    let (cert, key) = leaf(&pki, &["api.test"], false)?;
    let (plain, _) = Server::fixed(json_ok("{}")).await?;
    let location = plain.url("/");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert)],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
        )?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let server = Server::start(move |s| {
        let acceptor = acceptor.clone();
        let location = location.clone();
        async move {
            if let Ok(mut tls) = acceptor.accept(s).await {
                let mut buf = vec![0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let _ = tls
                    .write_all(&response("302 Found", &[("location", &location)], b""))
                    .await;
                let _ = tls.shutdown().await;
            }
        }
    })
    .await?;
    let (client, _) = tls_client(&pki)?;
    let mut r = FetchRequest::get(Url::parse(&format!(
        "https://api.test:{}/",
        server.addr.port()
    ))?);
    r.timeout = DEADLINE;
    r.follow_redirects = true;
    let err = client.fetch(&r).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::InvalidRedirect));
    assert_eq!(plain.hits(), 0);
    Ok(())
}
