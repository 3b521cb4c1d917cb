//! security-tests.md 1.5 against the connector: every row, with a lookup-counting stub resolver
//! and a dialer that records every address it is asked to dial (a refused address is never
//! dialled; one lookup per request).

mod support;

use apidrift_model::net::AllowList;
use apidrift_model::validate::{Credential, ExtraHeader};
use apidrift_model::{HttpMethod, SecretString};
use apidrift_monitor::{Client, FetchErrorKind, FetchRequest};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;
use url::Url;

fn ip(s: &str) -> IpAddr {
    s.parse()
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

fn request(url: &str) -> Result<FetchRequest, Box<dyn std::error::Error>> {
    let mut r = FetchRequest::get(Url::parse(url)?);
    r.timeout = Duration::from_millis(500);
    Ok(r)
}

/// Rows 1–46 with no allow-list. A refusal must come before any lookup of a literal and before
/// any dial; an allowed row must dial exactly the literal's canonical address.
#[tokio::test]
async fn ssrf_table_against_the_connector() -> TestResult {
    let rows: &[(&str, &str)] = &[
        ("http://127.0.0.1/", "block"),
        ("http://127.255.255.254:8080/", "block"),
        ("http://localhost/", "block"),
        ("http://a.localhost/", "block"),
        ("http://0.0.0.0/", "block"),
        ("http://0/", "block"),
        ("http://10.0.0.1/", "block"),
        ("http://172.16.0.1/", "block"),
        ("http://172.31.255.255/", "block"),
        ("http://172.32.0.1/", "allow"),
        ("http://192.168.1.1/", "block"),
        ("http://169.254.169.254/latest/meta-data/", "block"),
        ("http://100.64.0.1/", "block"),
        ("http://100.100.100.200/", "block"),
        ("http://100.63.255.255/", "allow"),
        ("http://100.128.0.1/", "allow"),
        ("http://192.0.0.1/", "block"),
        ("http://192.0.2.1/", "block"),
        ("http://198.18.0.1/", "block"),
        ("http://198.19.255.255/", "block"),
        ("http://198.20.0.1/", "allow"),
        ("http://198.51.100.1/", "block"),
        ("http://203.0.113.1/", "block"),
        ("http://224.0.0.1/", "block"),
        ("http://239.255.255.250/", "block"),
        ("http://240.0.0.1/", "block"),
        ("http://255.255.255.255/", "block"),
        ("http://2130706433/", "block"),
        ("http://0x7f000001/", "block"),
        ("http://0177.0.0.1/", "block"),
        ("http://017700000001/", "block"),
        ("http://0x7f.1/", "block"),
        ("http://127.1/", "block"),
        ("http://%31%32%37.0.0.1/", "block"),
        (
            "http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}/",
            "block",
        ),
        ("http://127.0.0.1./", "block"),
        ("http://[::1]/", "block"),
        ("http://[::]/", "block"),
        ("http://[::ffff:127.0.0.1]/", "block"),
        ("http://[::ffff:7f00:1]/", "block"),
        ("http://[::ffff:169.254.169.254]/", "block"),
        ("http://[::127.0.0.1]/", "block"),
        ("http://[64:ff9b::7f00:1]/", "block"),
        ("http://[64:ff9b::808:808]/", "block"),
        ("http://[2002:7f00:1::1]/", "block"),
        ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "block"),
        ("http://[fd00:ec2::254]/", "block"),
        ("http://[fc00::1]/", "block"),
        ("http://[fe80::1]/", "block"),
        ("http://[fec0::1]/", "block"),
        ("http://[ff02::1]/", "block"),
        ("http://[2001:db8::1]/", "block"),
        ("http://[3fff::1]/", "block"),
        ("http://[100::1]/", "block"),
        ("http://[2606:4700:4700::1111]/", "allow"),
        ("http://example.com@127.0.0.1/", "block"),
        ("http://127.0.0.1#@example.com/", "block"),
        ("http://127.0.0.1?@example.com/", "block"),
        ("http://metadata.google.internal/", "block"),
    ];
    for (text, want) in rows {
        let resolver = StubResolver::new(&[]);
        let dialer = RecordingDialer::new(DialMode::Refuse);
        let client = builder(AllowList::default(), resolver.clone())
            .dialer(dialer.clone())
            .build()?;
        // The URL is parsed the WHATWG way, exactly as the create-time validator does.
        let url = Url::parse(text)?;
        let result = client.fetch(&FetchRequest::get(url.clone())).await;
        let kind = result.err().map(|e| e.kind);
        match *want {
            "block" => {
                assert_eq!(kind, Some(FetchErrorKind::SsrfBlocked), "{text}");
                assert!(dialer.dialled().is_empty(), "{text} was dialled");
                assert_eq!(resolver.count(), 0, "{text} was looked up");
            }
            _ => {
                // Allowed: the stub dialer refuses, and it was asked for the literal only.
                assert_eq!(kind, Some(FetchErrorKind::ConnectRefused), "{text}");
                let dialled = dialer.dialled();
                assert_eq!(dialled.len(), 1, "{text}");
                let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
                assert_eq!(dialled.first().map(|a| a.ip()), Some(ip(host)), "{text}");
                assert_eq!(resolver.count(), 0, "{text}: a literal needs no lookup");
            }
        }
    }
    Ok(())
}

/// Rows 26, 36, 39, 40, 45: URLs the policy does not accept at all (invalid, not blocked).
#[tokio::test]
async fn invalid_urls_are_refused_before_any_network() -> TestResult {
    let client = loopback_client()?;
    for text in [
        "http://4294967296/",
        "http://[fe80::1%25eth0]/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_",
        "dict://example.com/",
        "ftp://example.com/",
        "ldap://example.com/",
        "data:,x",
        "http://user:pass@example.com/",
        "http://example.com:0/",
        "http://example.com:65536/",
    ] {
        let err = client.check_url(text).err().map(|e| e.kind);
        assert_eq!(err, Some(FetchErrorKind::InvalidUrl), "{text}");
    }
    // Rows 41 and 43: the host the policy judges is the host the connector dials.
    assert_eq!(
        client
            .check_url("http://example.com\\@127.0.0.1/")?
            .host_str(),
        Some("example.com")
    );
    Ok(())
}

/// Row 38: a public name resolves, is checked and is dialled at the checked address.
#[tokio::test]
async fn public_name_is_dialled_at_its_checked_address() -> TestResult {
    let resolver = StubResolver::new(&[("example.com", Answer::Addrs(vec![ip("93.184.215.14")]))]);
    let dialer = RecordingDialer::new(DialMode::Refuse);
    let client = builder(AllowList::default(), resolver.clone())
        .dialer(dialer.clone())
        .build()?;
    let err = client.fetch(&request("https://example.com/")?).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::ConnectRefused));
    assert_eq!(resolver.count(), 1);
    assert_eq!(
        dialer.dialled(),
        vec![std::net::SocketAddr::new(ip("93.184.215.14"), 443)]
    );
    Ok(())
}

/// Rows 47, 48, 49, 51: names whose answers include a blocked address are refused, fail closed,
/// and nothing is dialled (not even the public answer).
#[tokio::test]
async fn resolved_blocked_addresses_are_refused_and_never_dialled() -> TestResult {
    let cases: &[(&str, Vec<IpAddr>)] = &[
        ("127.0.0.1.nip.io", vec![ip("127.0.0.1")]),
        ("v6-loopback.test", vec![ip("::1")]),
        ("mapped.test", vec![ip("::ffff:10.0.0.1")]),
        ("mixed.test", vec![ip("93.184.215.14"), ip("10.0.0.5")]),
        ("cname-to-internal.test", vec![ip("10.1.2.3")]),
        ("imds6.test", vec![ip("fd00:ec2::254")]),
        ("nat64.test", vec![ip("64:ff9b::a9fe:a9fe")]),
    ];
    for (name, addrs) in cases {
        let resolver = StubResolver::new(&[(name, Answer::Addrs(addrs.clone()))]);
        let dialer = RecordingDialer::new(DialMode::Refuse);
        let client = builder(AllowList::default(), resolver.clone())
            .dialer(dialer.clone())
            .build()?;
        let err = client
            .fetch(&request(&format!("http://{name}/"))?)
            .await
            .err();
        assert_eq!(
            err.map(|e| e.kind),
            Some(FetchErrorKind::SsrfBlocked),
            "{name}"
        );
        assert_eq!(resolver.count(), 1, "{name}");
        assert!(
            dialer.dialled().is_empty(),
            "{name}: dialled {:?}",
            dialer.dialled()
        );
    }
    Ok(())
}

/// The texts of a name's refusal and of its connect failures name the host, never an address it
/// resolved to: they reach workspace users (check errors, send-test answers, the delivery log)
/// and would map internal names to internal addresses. A literal address is named as written.
#[tokio::test]
async fn messages_for_a_name_never_carry_its_addresses() -> TestResult {
    let cases: &[(&str, Vec<IpAddr>)] = &[
        ("private.test", vec![ip("10.255.255.1")]),
        ("loopback.test", vec![ip("127.0.0.9")]),
        ("v6-loopback.test", vec![ip("::1")]),
        ("mapped.test", vec![ip("::ffff:10.0.0.1")]),
        ("mixed.test", vec![ip("93.184.215.14"), ip("10.0.0.5")]),
        ("imds.test", vec![ip("169.254.169.254")]),
        ("imds6.test", vec![ip("fd00:ec2::254")]),
        ("nat64.test", vec![ip("64:ff9b::a9fe:a9fe")]),
    ];
    let leaks = |text: &str, addrs: &[IpAddr]| {
        addrs
            .iter()
            .flat_map(|a| [a.to_string(), a.to_canonical().to_string()])
            .find(|form| text.contains(form.as_str()))
    };
    for (name, addrs) in cases {
        let resolver = StubResolver::new(&[(name, Answer::Addrs(addrs.clone()))]);
        let client = builder(AllowList::default(), resolver).build()?;
        let err = client
            .fetch(&request(&format!("http://{name}/"))?)
            .await
            .err()
            .ok_or("fetched")?;
        assert_eq!(err.kind, FetchErrorKind::SsrfBlocked, "{name}");
        let text = err.to_string();
        assert_eq!(leaks(&text, addrs), None, "{text}");
        // What was refused, and how a self-hosted install allows it.
        assert!(text.contains(name), "{text}");
        assert!(text.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS"), "{text}");
    }

    // A connect failure of a name names the name and port, not the address dialled.
    let public = vec![ip("93.184.215.14")];
    let resolver = StubResolver::new(&[("example.com", Answer::Addrs(public.clone()))]);
    for mode in [DialMode::Refuse, DialMode::BlackHole] {
        let client = builder(AllowList::default(), resolver.clone())
            .dialer(RecordingDialer::new(mode))
            .build()?;
        let err = client
            .fetch(&request("https://example.com/")?)
            .await
            .err()
            .ok_or("fetched")?;
        let text = err.to_string();
        assert_eq!(leaks(&text, &public), None, "{text}");
        assert!(text.contains("example.com:443"), "{text}");
    }

    // A literal address is what the user wrote: it may be named.
    let client = builder(AllowList::default(), StubResolver::new(&[])).build()?;
    let err = client
        .fetch(&request("http://10.255.255.1/")?)
        .await
        .err()
        .ok_or("fetched")?;
    assert_eq!(err.kind, FetchErrorKind::SsrfBlocked);
    assert!(err.message.contains("10.255.255.1"), "{}", err.message);
    Ok(())
}

/// Row 50: DNS rebinding. One lookup per request, and the dialled address is the checked one.
#[tokio::test]
async fn rebinding_gets_one_lookup_per_connection() -> TestResult {
    let (server, _) = Server::fixed(json_ok("{}")).await?;
    let resolver = StubResolver::new(&[(
        "rebind.test",
        Answer::Sequence(vec![vec![ip("127.0.0.1")], vec![ip("10.0.0.5")]]),
    )]);
    let dialer = RecordingDialer::new(DialMode::Connect);
    let client = builder(loopback(), resolver.clone())
        .dialer(dialer.clone())
        .build()?;
    let url = format!("http://rebind.test:{}/", server.addr.port());
    let first = client.fetch(&request(&url)?).await?;
    assert_eq!(first.status, 200);
    assert_eq!(resolver.count(), 1);
    assert_eq!(dialer.dialled(), vec![server.addr]);
    // The second request looks up again, sees 10.0.0.5 and refuses without dialling.
    let second = client.fetch(&request(&url)?).await.err();
    assert_eq!(second.map(|e| e.kind), Some(FetchErrorKind::SsrfBlocked));
    assert_eq!(resolver.count(), 2);
    assert_eq!(dialer.dialled(), vec![server.addr]);
    assert_eq!(server.hits(), 1);
    Ok(())
}

/// Rows 52, 53 (and bad-upstream 36): NXDOMAIN and empty answers are `dns_failed`; a hanging
/// resolver is `dns_timeout` at the DNS bound (shrunk to 200 ms here; 5 s by default).
#[tokio::test]
async fn dns_failures_and_timeouts() -> TestResult {
    let resolver = StubResolver::new(&[
        ("empty.test", Answer::Addrs(Vec::new())),
        ("hang.test", Answer::Hang),
    ]);
    let client = builder(AllowList::default(), resolver.clone()).build()?;
    for (name, kind) in [
        ("nxdomain.test", FetchErrorKind::DnsFailed),
        ("empty.test", FetchErrorKind::DnsFailed),
        ("hang.test", FetchErrorKind::DnsTimeout),
    ] {
        let started = Instant::now();
        let err = client
            .fetch(&request(&format!("http://{name}/"))?)
            .await
            .err();
        assert_eq!(err.map(|e| e.kind), Some(kind), "{name}");
        assert!(started.elapsed() < Duration::from_millis(450), "{name}");
    }
    assert_eq!(apidrift_monitor::DNS_TIMEOUT, Duration::from_secs(5));
    Ok(())
}

/// `localhost` is a loopback name: refused unless the allow-list covers loopback; `*.internal`
/// and `*.local` always. Names refused by name are never looked up.
#[tokio::test]
async fn names_refused_before_dns() -> TestResult {
    let resolver = StubResolver::new(&[]);
    let client = builder(loopback(), resolver.clone()).build()?;
    for name in ["db.internal", "printer.local", "metadata.google.internal"] {
        let err = client
            .fetch(&request(&format!("http://{name}/"))?)
            .await
            .err();
        assert_eq!(
            err.map(|e| e.kind),
            Some(FetchErrorKind::SsrfBlocked),
            "{name}"
        );
    }
    assert_eq!(resolver.count(), 0);
    Ok(())
}

fn redirect_to(location: &str) -> Vec<u8> {
    response("302 Found", &[("location", location)], b"")
}

/// Rows 54–58 and bad-upstream 23–25: every hop is judged again.
#[tokio::test]
async fn redirects_are_checked_at_every_hop() -> TestResult {
    // Only 127.0.0.1 is allowed, so 127.0.0.2 stands for "a private address".
    let allow = AllowList::parse("127.0.0.1/32").unwrap_or_default();
    let cases: &[(&str, FetchErrorKind)] = &[
        ("http://127.0.0.2/", FetchErrorKind::SsrfBlocked),
        (
            "http://[::ffff:169.254.169.254]/",
            FetchErrorKind::SsrfBlocked,
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            FetchErrorKind::SsrfBlocked,
        ),
        // localhost is allowed by name here (the list covers loopback), but it resolves to
        // ::1 too, which the list does not cover: the whole request is refused.
        ("http://localhost/", FetchErrorKind::SsrfBlocked),
        ("file:///etc/passwd", FetchErrorKind::InvalidRedirect),
        ("gopher://example.com/", FetchErrorKind::InvalidRedirect),
        ("http://[::1", FetchErrorKind::InvalidRedirect),
        ("http://user:pw@127.0.0.1/", FetchErrorKind::InvalidRedirect),
    ];
    for (location, kind) in cases {
        let (server, _) = Server::fixed(redirect_to(location)).await?;
        let dialer = RecordingDialer::new(DialMode::Connect);
        let resolver =
            StubResolver::new(&[("localhost", Answer::Addrs(vec![ip("127.0.0.1"), ip("::1")]))]);
        let client = builder(allow.clone(), resolver)
            .dialer(dialer.clone())
            .build()?;
        let mut req = request(&server.url("/"))?;
        req.follow_redirects = true;
        let err = client.fetch(&req).await.err();
        assert_eq!(err.map(|e| e.kind), Some(*kind), "{location}");
        assert_eq!(dialer.dialled(), vec![server.addr], "{location}");
    }
    // A 302 with no Location at all.
    let (server, _) = Server::fixed(response("302 Found", &[], b"")).await?;
    let client = builder(allow.clone(), StubResolver::new(&[])).build()?;
    let mut req = request(&server.url("/"))?;
    req.follow_redirects = true;
    let err = client.fetch(&req).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::InvalidRedirect));
    Ok(())
}

/// Redirects are off by default: the 3xx is the response.
#[tokio::test]
async fn redirects_are_not_followed_by_default() -> TestResult {
    let (server, _) = Server::fixed(redirect_to("http://169.254.169.254/")).await?;
    let client = loopback_client()?;
    let resp = client.fetch(&request(&server.url("/"))?).await?;
    assert_eq!(resp.status, 302);
    assert_eq!(resp.header("location"), Some("http://169.254.169.254/"));
    Ok(())
}

/// Row 57: a loop stops at 5 hops with `too_many_redirects`; a chain of 5 is followed.
#[tokio::test]
async fn redirect_loop_and_hop_limit() -> TestResult {
    let (looping, _) = Server::fixed(redirect_to("/again")).await?;
    let client = loopback_client()?;
    let mut req = request(&looping.url("/"))?;
    req.follow_redirects = true;
    let err = client.fetch(&req).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::TooManyRedirects));
    assert_eq!(looping.hits(), 6, "the first request and 5 hops");

    // /5 → /4 → … → /0 answers 200: exactly five hops are allowed.
    let chain = Server::start(|mut s| async move {
        let Ok(head) = read_request(&mut s).await else {
            return;
        };
        let n: u32 = head
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.trim_start_matches('/').parse().ok())
            .unwrap_or(0);
        let out = if n == 0 {
            json_ok("{\"done\":true}")
        } else {
            redirect_to(&format!("/{}", n - 1))
        };
        let _ = tokio::io::AsyncWriteExt::write_all(&mut s, &out).await;
    })
    .await?;
    let mut req = request(&chain.url("/5"))?;
    req.follow_redirects = true;
    let resp = client.fetch(&req).await?;
    assert_eq!((resp.status, resp.redirects), (200, 5));
    assert!(resp.url.as_str().ends_with("/0"));
    Ok(())
}

/// Row 59: a cross-origin redirect is refused while credentials are attached (the credential
/// never reaches the other origin); without credentials it is followed.
#[tokio::test]
async fn cross_origin_redirect_with_credentials() -> TestResult {
    let (other, other_seen) = Server::fixed(json_ok("{}")).await?;
    let (first, _) = Server::fixed(redirect_to(&other.url("/landing"))).await?;
    let client = loopback_client()?;
    let mut req = request(&first.url("/"))?;
    req.follow_redirects = true;
    req.credential = Credential::ApiKey {
        header: "X-Api-Key".into(),
        key: SecretString::new("canary-key-123"),
    };
    let err = client.fetch(&req).await.err();
    assert_eq!(
        err.as_ref().map(|e| e.kind),
        Some(FetchErrorKind::InvalidRedirect)
    );
    assert!(
        !err.map(|e| e.to_string())
            .unwrap_or_default()
            .contains("canary")
    );
    assert_eq!(other.hits(), 0);

    // Extra headers count as credentials too.
    req.credential = Credential::None;
    req.headers = vec![ExtraHeader {
        name: "X-Tenant".into(),
        value: SecretString::new("t1"),
    }];
    assert!(client.fetch(&req).await.is_err());
    assert_eq!(other.hits(), 0);

    req.headers.clear();
    let resp = client.fetch(&req).await?;
    assert_eq!((resp.status, resp.redirects), (200, 1));
    let seen = other_seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1);
    assert!(
        !seen
            .iter()
            .any(|h| h.to_ascii_lowercase().contains("x-api-key"))
    );
    Ok(())
}

/// 303 turns a POST into a GET without body; 307 keeps method and body.
#[tokio::test]
async fn redirect_methods() -> TestResult {
    let target = Arc::new(Server::fixed(json_ok("{}")).await?);
    let (see_other, _) = Server::fixed(response(
        "303 See Other",
        &[("location", &target.0.url("/after"))],
        b"",
    ))
    .await?;
    let client = loopback_client()?;
    let mut req = request(&see_other.url("/"))?;
    req.method = HttpMethod::Post;
    req.body = Some(b"{\"a\":1}".to_vec());
    req.follow_redirects = true;
    client.fetch(&req).await?;
    let (temp, _) = Server::fixed(response(
        "307 Temporary Redirect",
        &[("location", &target.0.url("/kept"))],
        b"",
    ))
    .await?;
    req.url = Url::parse(&temp.url("/"))?;
    client.fetch(&req).await?;
    let seen = target.1.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].starts_with("GET /after "), "{}", seen[0]);
    assert!(seen[1].starts_with("POST /kept "), "{}", seen[1]);
    assert!(seen[1].ends_with("{\"a\":1}"));
    Ok(())
}

/// Row 60: `HTTP_PROXY` and friends are ignored. The test re-runs itself in a child process
/// with the variables pointing at a dead proxy; the child must still reach the upstream.
#[test]
fn proxy_variables_are_ignored() -> TestResult {
    if std::env::var_os("APIDRIFT_PROXY_CHILD").is_some() {
        return proxy_child();
    }
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .args(["--exact", "proxy_variables_are_ignored", "--nocapture"])
        .env("APIDRIFT_PROXY_CHILD", "1")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("ALL_PROXY", "http://127.0.0.1:9")
        .output()?;
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("direct-ok"));
    Ok(())
}

fn proxy_child() -> TestResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let (server, _) = Server::fixed(json_ok("{}")).await?;
        let resp = loopback_client()?
            .fetch(&request(&server.url("/"))?)
            .await?;
        assert_eq!(resp.status, 200);
        assert_eq!(server.hits(), 1);
        println!("direct-ok");
        Ok(())
    })
}

/// The allow-list is what lets tests (and self-hosted installs) reach private ranges.
#[tokio::test]
async fn allow_list_opens_loopback() -> TestResult {
    let (server, _) = Server::fixed(json_ok("{\"ok\":true}")).await?;
    let blocked = Client::builder(AllowList::default()).build()?;
    let err = blocked.fetch(&request(&server.url("/"))?).await.err();
    assert_eq!(err.map(|e| e.kind), Some(FetchErrorKind::SsrfBlocked));
    assert_eq!(server.hits(), 0);
    let resp = loopback_client()?
        .fetch(&request(&server.url("/"))?)
        .await?;
    assert_eq!(resp.body, b"{\"ok\":true}");
    Ok(())
}
