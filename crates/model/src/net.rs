//! The outbound-address policy: which URLs apidrift may fetch. Create-time validation and the
//! fetcher's connector share it, so both judge a host the same way (no server-side request
//! forgery towards private networks).
//!
//! * [`blocked_range`] names the special-purpose range an address falls in (private, loopback,
//!   link-local, shared, documentation, multicast, …), after canonicalising IPv4-mapped IPv6
//!   addresses.
//! * [`AllowList`] holds the CIDRs an operator allowed (`APIDRIFT_OUTBOUND__ALLOW_CIDRS`); an
//!   allowed address passes even when it is in a blocked range.
//! * [`check_url`] parses a URL the WHATWG way (so decimal, octal, hex and short IPv4 forms are
//!   addresses), then applies the scheme, credential, port, length and host rules.
//!
//! Hosts that are names are judged here by name only (`localhost`, `*.localhost`, `*.local`,
//! `*.internal`); the addresses they resolve to are judged again at connection time with
//! [`check_ip`].
//!
//! ```
//! use apidrift_model::net::{AllowList, UrlError, check_url};
//!
//! let none = AllowList::default();
//! assert!(check_url("https://api.example.com/users", &none).is_ok());
//! // 0x7f000001 is 127.0.0.1, written in hex.
//! assert!(matches!(check_url("http://0x7f000001/", &none), Err(UrlError::Blocked(_))));
//! let lab = AllowList::parse("127.0.0.0/8")?;
//! assert!(check_url("http://localhost:8080/", &lab).is_ok());
//! # Ok::<(), String>(())
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use url::{Host, Url};

/// Longest URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 2048;

/// A CIDR block such as `127.0.0.0/8` or `fd00::/8`. A bare address is a single-address block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The block of `prefix` leading bits of `addr`; `None` when the prefix is longer than the
    /// address (32 bits for IPv4, 128 for IPv6). An IPv4-mapped IPv6 address is stored as IPv4.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Self> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Self {
            addr: addr.to_canonical(),
            prefix,
        })
    }

    /// Whether `ip` (canonicalised) lies in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => v4_in(ip, u32::from(net), self.prefix),
            (IpAddr::V6(net), IpAddr::V6(ip)) => v6_in(ip, u128::from(net), self.prefix),
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not an IP address or CIDR"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .map_err(|_| format!("{s:?} has an invalid prefix length"))?,
            None => max,
        };
        Cidr::new(addr, prefix).ok_or_else(|| format!("{s:?} has a prefix longer than {max}"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Ranges an operator allowed for outbound requests, e.g. a lab network or loopback for tests.
/// Empty by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    cidrs: Vec<Cidr>,
}

impl AllowList {
    /// An allow-list of these blocks.
    pub fn new(cidrs: Vec<Cidr>) -> Self {
        Self { cidrs }
    }

    /// Parses a comma-separated list (`127.0.0.0/8,10.0.0.0/8`); blanks are ignored.
    pub fn parse(list: &str) -> Result<Self, String> {
        list.split(',')
            .filter(|part| !part.trim().is_empty())
            .map(Cidr::from_str)
            .collect::<Result<Vec<_>, _>>()
            .map(Self::new)
    }

    /// Whether `ip` lies in one of the blocks.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.cidrs.iter().any(|c| c.contains(ip))
    }

    /// Whether loopback is allowed, which is what `localhost` names need.
    pub fn covers_loopback(&self) -> bool {
        self.contains(IpAddr::V4(Ipv4Addr::LOCALHOST))
            || self.contains(IpAddr::V6(Ipv6Addr::LOCALHOST))
    }

    /// The blocks, in the order given.
    pub fn cidrs(&self) -> &[Cidr] {
        &self.cidrs
    }
}

fn v4_in(ip: Ipv4Addr, net: u32, prefix: u8) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    };
    u32::from(ip) & mask == net & mask
}

fn v6_in(ip: Ipv6Addr, net: u128, prefix: u8) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    };
    u128::from(ip) & mask == net & mask
}

const fn v4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

// IANA IPv4 special-purpose ranges we refuse (security-tests.md 1.4).
const BLOCKED_V4: &[(u32, u8, &str)] = &[
    (v4(0, 0, 0, 0), 8, "this network (0.0.0.0/8)"),
    (v4(10, 0, 0, 0), 8, "private (10.0.0.0/8)"),
    (
        v4(100, 64, 0, 0),
        10,
        "shared address space (100.64.0.0/10)",
    ),
    (v4(127, 0, 0, 0), 8, "loopback (127.0.0.0/8)"),
    (v4(169, 254, 0, 0), 16, "link-local (169.254.0.0/16)"),
    (v4(172, 16, 0, 0), 12, "private (172.16.0.0/12)"),
    (
        v4(192, 0, 0, 0),
        24,
        "IETF protocol assignments (192.0.0.0/24)",
    ),
    (v4(192, 0, 2, 0), 24, "documentation (192.0.2.0/24)"),
    (
        v4(192, 88, 99, 0),
        24,
        "6to4 relay anycast (192.88.99.0/24)",
    ),
    (v4(192, 168, 0, 0), 16, "private (192.168.0.0/16)"),
    (v4(198, 18, 0, 0), 15, "benchmarking (198.18.0.0/15)"),
    (v4(198, 51, 100, 0), 24, "documentation (198.51.100.0/24)"),
    (v4(203, 0, 113, 0), 24, "documentation (203.0.113.0/24)"),
    (v4(224, 0, 0, 0), 4, "multicast (224.0.0.0/4)"),
    (v4(240, 0, 0, 0), 4, "reserved (240.0.0.0/4)"),
];

// IANA IPv6 special-purpose ranges we refuse (security-tests.md 1.4). `::ffff:0:0/96` is handled
// by canonicalising to IPv4 first.
const BLOCKED_V6: &[(u128, u8, &str)] = &[
    (0, 128, "unspecified (::/128)"),
    (1, 128, "loopback (::1/128)"),
    (0, 96, "IPv4-compatible (::/96)"),
    (
        0x0064_ff9b_0000_0000_0000_0000_0000_0000,
        96,
        "NAT64 (64:ff9b::/96)",
    ),
    (
        0x0064_ff9b_0001_0000_0000_0000_0000_0000,
        48,
        "local NAT64 (64:ff9b:1::/48)",
    ),
    (
        0x0100_0000_0000_0000_0000_0000_0000_0000,
        64,
        "discard-only (100::/64)",
    ),
    (
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        32,
        "documentation (2001:db8::/32)",
    ),
    (
        0x2001_0000_0000_0000_0000_0000_0000_0000,
        23,
        "IETF protocol assignments and Teredo (2001::/23)",
    ),
    (
        0x2002_0000_0000_0000_0000_0000_0000_0000,
        16,
        "6to4 (2002::/16)",
    ),
    (
        0x3fff_0000_0000_0000_0000_0000_0000_0000,
        20,
        "documentation (3fff::/20)",
    ),
    (
        0x5f00_0000_0000_0000_0000_0000_0000_0000,
        16,
        "segment routing (5f00::/16)",
    ),
    (
        0xfc00_0000_0000_0000_0000_0000_0000_0000,
        7,
        "unique local (fc00::/7)",
    ),
    (
        0xfe80_0000_0000_0000_0000_0000_0000_0000,
        10,
        "link-local (fe80::/10)",
    ),
    (
        0xfec0_0000_0000_0000_0000_0000_0000_0000,
        10,
        "site-local (fec0::/10)",
    ),
    (
        0xff00_0000_0000_0000_0000_0000_0000_0000,
        8,
        "multicast (ff00::/8)",
    ),
];

/// The special-purpose range `ip` falls in, or `None` for an ordinary public address.
/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are judged as the IPv4 address they carry.
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match ip.to_canonical() {
        IpAddr::V4(ip) => {
            if ip == Ipv4Addr::BROADCAST {
                return Some("broadcast (255.255.255.255)");
            }
            BLOCKED_V4
                .iter()
                .find(|(net, prefix, _)| v4_in(ip, *net, *prefix))
                .map(|r| r.2)
        }
        IpAddr::V6(ip) => BLOCKED_V6
            .iter()
            .find(|(net, prefix, _)| v6_in(ip, *net, *prefix))
            .map(|r| r.2),
    }
}

/// Why an outbound target was refused. Its `Display` is a reason fit for the user who gave the
/// URL; the detail of [`UrlError::Blocked`] is for logs.
///
/// Non-exhaustive: a later version may add reasons. When you `match`, give a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlError {
    /// Not a URL the WHATWG parser accepts (e.g. `http://4294967296/`, a zone id, port 65536).
    Invalid(String),
    /// A scheme other than http or https.
    Scheme,
    /// Userinfo in the URL: credentials come from the endpoint's sealed `auth` only.
    Credentials,
    /// Longer than [`MAX_URL_LEN`].
    TooLong,
    /// Port 0.
    Port,
    /// The host is, or names, a forbidden address. The detail names the range or the name rule;
    /// it is for logs and error kinds, not for the create-time reason text.
    Blocked(String),
}

/// The tail of the [`UrlError::Blocked`] detail of a `*.local` or `*.internal` name, which no
/// allow-list admits (its reason says so instead of naming the allow-list).
const INTERNAL_NAME: &str = "is an internal name";

/// The reason for a refused address or loopback name: what was refused and how a self-hosted
/// install allows it.
const BLOCKED_REASON: &str = "private, loopback and link-local hosts are rejected; to allow \
     one on a self-hosted install, add its address range to APIDRIFT_OUTBOUND__ALLOW_CIDRS \
     (e.g. APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32) or to allow_cidrs in the [outbound] \
     section of the configuration file";

/// The reason for a refused `*.local` or `*.internal` name, which no allow-list admits.
const BLOCKED_NAME_REASON: &str = "private, loopback and link-local hosts are rejected, and \
     .local and .internal names always are; to reach such a host on a self-hosted install, use \
     its IP address and add it to APIDRIFT_OUTBOUND__ALLOW_CIDRS (e.g. \
     APIDRIFT_OUTBOUND__ALLOW_CIDRS=10.0.0.5/32) or to allow_cidrs in the [outbound] section of \
     the configuration file";

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::Invalid(why) => write!(f, "not a valid URL ({why})"),
            UrlError::Scheme => f.write_str("must be an absolute http or https URL"),
            UrlError::Credentials => f.write_str("must not contain credentials (user:password@)"),
            UrlError::TooLong => write!(f, "longer than {MAX_URL_LEN} characters"),
            UrlError::Port => f.write_str("port 0 is not allowed"),
            UrlError::Blocked(detail) if detail.ends_with(INTERNAL_NAME) => {
                f.write_str(BLOCKED_NAME_REASON)
            }
            UrlError::Blocked(_) => f.write_str(BLOCKED_REASON),
        }
    }
}

impl std::error::Error for UrlError {}

/// Judges one resolved or literal address: `Err` names the blocked range unless the allow-list
/// covers the address.
pub fn check_ip(ip: IpAddr, allow: &AllowList) -> Result<(), UrlError> {
    match blocked_range(ip) {
        Some(range) if !allow.contains(ip) => Err(UrlError::Blocked(format!(
            "{} is {range}",
            ip.to_canonical()
        ))),
        _ => Ok(()),
    }
}

/// Judges a host name by name alone (before any DNS): `localhost` and `*.localhost` are loopback
/// (allowed only when the allow-list covers loopback); `*.local` and `*.internal` are refused
/// always. A trailing dot is ignored.
pub fn check_name(name: &str, allow: &AllowList) -> Result<(), UrlError> {
    let lower = name.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    let is = |suffix: &str| name == suffix || name.ends_with(&format!(".{suffix}"));
    if is("localhost") {
        if allow.covers_loopback() {
            return Ok(());
        }
        return Err(UrlError::Blocked(format!("{name} is a loopback name")));
    }
    if is("local") || is("internal") {
        return Err(UrlError::Blocked(format!("{name} {INTERNAL_NAME}")));
    }
    Ok(())
}

/// Judges a parsed URL's host: a literal address by [`check_ip`], a name by [`check_name`].
pub fn check_host(url: &Url, allow: &AllowList) -> Result<(), UrlError> {
    match url.host() {
        Some(Host::Ipv4(ip)) => check_ip(IpAddr::V4(ip), allow),
        Some(Host::Ipv6(ip)) => check_ip(IpAddr::V6(ip), allow),
        Some(Host::Domain(name)) => check_name(name, allow),
        None => Err(UrlError::Scheme),
    }
}

/// Parses and judges an outbound URL. Returns the parsed URL, which is the one the
/// fetcher must use (validator and connector share one `Url`). The fragment is dropped: it is never
/// sent.
pub fn check_url(text: &str, allow: &AllowList) -> Result<Url, UrlError> {
    if text.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong);
    }
    let mut url = Url::parse(text).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => UrlError::Scheme,
        other => UrlError::Invalid(other.to_string()),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UrlError::Scheme);
    }
    // The host is judged first, so `http://example.com@127.0.0.1/` is reported as blocked.
    check_host(&url, allow)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Credentials);
    }
    if url.port() == Some(0) {
        return Err(UrlError::Port);
    }
    url.set_fragment(None);
    // The limit is on the text the user sent (what the published schema states): the parsed form
    // may be a little longer (a `/` added after a bare host, percent-encoding) and is kept as is.
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(url: &str) -> &'static str {
        match check_url(url, &AllowList::default()) {
            Ok(_) => "allow",
            Err(UrlError::Blocked(_)) => "block",
            Err(_) => "invalid",
        }
    }

    /// security-tests.md 1.5, rows that can be judged without DNS.
    #[test]
    fn ssrf_table_without_dns() {
        let rows: &[(&str, &str)] = &[
            ("http://127.0.0.1/", "block"),
            ("http://127.255.255.254:8080/", "block"),
            ("http://localhost/", "block"),
            ("http://a.localhost/", "block"),
            ("http://LOCALHOST./", "block"),
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
            ("http://4294967296/", "invalid"),
            ("http://[::1]/", "block"),
            ("http://[::]/", "block"),
            ("http://[::ffff:127.0.0.1]/", "block"),
            ("http://[::ffff:7f00:1]/", "block"),
            ("http://[::ffff:169.254.169.254]/", "block"),
            ("http://[::127.0.0.1]/", "block"),
            ("http://[64:ff9b::7f00:1]/", "block"),
            ("http://[64:ff9b::808:808]/", "block"),
            ("http://[64:ff9b:1::1]/", "block"),
            ("http://[2002:7f00:1::1]/", "block"),
            ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "block"),
            ("http://[fd00:ec2::254]/", "block"),
            ("http://[fc00::1]/", "block"),
            ("http://[fe80::1]/", "block"),
            ("http://[fec0::1]/", "block"),
            ("http://[ff02::1]/", "block"),
            ("http://[fe80::1%25eth0]/", "invalid"),
            ("http://[2001:db8::1]/", "block"),
            ("http://[3fff::1]/", "block"),
            ("http://[100::1]/", "block"),
            ("http://[5f00::1]/", "block"),
            ("http://[2606:4700:4700::1111]/", "allow"),
            ("https://example.com/", "allow"),
            ("http://[::ffff:8.8.8.8]/", "allow"),
            ("file:///etc/passwd", "invalid"),
            ("gopher://127.0.0.1:6379/_", "invalid"),
            ("dict://example.com/", "invalid"),
            ("ftp://example.com/", "invalid"),
            ("ldap://example.com/", "invalid"),
            ("data:,x", "invalid"),
            ("http://user:pass@example.com/", "invalid"),
            ("http://example.com@127.0.0.1/", "block"),
            ("http://127.0.0.1#@example.com/", "block"),
            ("http://127.0.0.1?@example.com/", "block"),
            ("http://example.com\\@127.0.0.1/", "allow"),
            ("http://example.com:0/", "invalid"),
            ("http://example.com:65536/", "invalid"),
            ("http://metadata.google.internal/", "block"),
            ("http://printer.local/", "block"),
            ("http://db.internal./", "block"),
        ];
        for (url, want) in rows {
            assert_eq!(verdict(url), *want, "{url}");
        }
    }

    #[test]
    fn backslash_is_a_path_separator() {
        let url = check_url("http://example.com\\@127.0.0.1/", &AllowList::default());
        assert_eq!(
            url.ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .as_deref(),
            Some("example.com")
        );
    }

    #[test]
    fn allow_list_overrides_ranges_and_names() {
        let allow = AllowList::parse("127.0.0.0/8, 10.0.0.0/8").unwrap_or_default();
        assert_eq!(allow.cidrs().len(), 2);
        assert!(check_url("http://127.0.0.1:8080/", &allow).is_ok());
        assert!(check_url("http://[::ffff:127.0.0.1]/", &allow).is_ok());
        assert!(check_url("http://localhost:3000/", &allow).is_ok());
        assert!(check_url("http://10.1.2.3/", &allow).is_ok());
        assert!(check_url("http://192.168.0.1/", &allow).is_err());
        assert!(check_url("http://db.internal/", &allow).is_err());
        assert!(AllowList::parse("nonsense").is_err());
        assert!(AllowList::parse("10.0.0.0/33").is_err());
    }

    #[test]
    fn refusals_say_how_to_allow_the_address() {
        let none = AllowList::default();
        for url in [
            "http://127.0.0.1:8080/",
            "http://10.1.2.3/",
            "http://localhost/",
        ] {
            let reason = check_url(url, &none).err().map(|e| e.to_string());
            let reason = reason.unwrap_or_default();
            assert!(
                reason.starts_with("private, loopback and link-local hosts are rejected; ")
                    && reason.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32")
                    && reason.contains("allow_cidrs in the [outbound] section"),
                "{url}: {reason}"
            );
        }
        // No allow-list admits these names: the reason says to use the address instead.
        let reason = check_url("http://db.internal/", &none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            reason.contains(".local and .internal names always are")
                && reason.contains("use its IP address")
                && reason.contains("APIDRIFT_OUTBOUND__ALLOW_CIDRS"),
            "{reason}"
        );
        // Never an internal decision id.
        for text in [BLOCKED_REASON, BLOCKED_NAME_REASON] {
            assert!(!text.contains("(D"), "{text}");
        }
    }

    #[test]
    fn resolved_addresses() {
        let none = AllowList::default();
        assert!(
            check_ip(
                "10.0.0.5"
                    .parse()
                    .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                &none
            )
            .is_err()
        );
        assert!(
            check_ip(
                IpAddr::V6("::ffff:10.0.0.1".parse().unwrap_or(Ipv6Addr::UNSPECIFIED)),
                &none
            )
            .is_err()
        );
        assert!(check_ip(IpAddr::V4(Ipv4Addr::new(93, 184, 215, 14)), &none).is_ok());
    }

    #[test]
    fn fragment_dropped_and_length_limit() {
        let url = check_url("https://example.com/a#frag", &AllowList::default()).ok();
        assert_eq!(
            url.map(String::from).as_deref(),
            Some("https://example.com/a")
        );
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(
            check_url(&long, &AllowList::default()),
            Err(UrlError::TooLong)
        );
        // Exactly the limit, with a bare host: parsing adds a `/`, and the URL is still accepted.
        let labels = vec!["a".repeat(63); 40].join(".");
        let host = &labels[..MAX_URL_LEN - "https://".len() - ".example".len()];
        let host = format!("{}.example", host.trim_end_matches('.'));
        let exact = format!("https://{host}");
        let exact = format!("{exact}{}", "b".repeat(MAX_URL_LEN - exact.len()));
        assert_eq!(exact.len(), MAX_URL_LEN);
        let parsed = check_url(&exact, &AllowList::default());
        assert_eq!(parsed.map(|u| u.as_str().len()), Ok(MAX_URL_LEN + 1));
    }
}
