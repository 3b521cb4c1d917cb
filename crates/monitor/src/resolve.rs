//! Name resolution and dialling, injectable so tests can count lookups and record every address
//! the client dials.

use async_trait::async_trait;
use std::io;
use std::net::{IpAddr, SocketAddr};
use tokio::net::TcpStream;

/// Resolves a host name to its addresses. The client calls it exactly once per request (one
/// that reuses an idle connection included) and judges every address it returns before dialling
/// any or reusing a connection to one.
#[async_trait]
pub trait Resolver: Send + Sync + std::fmt::Debug {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>>;
}

/// The system resolver (`getaddrinfo` on tokio's blocking pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolver for SystemResolver {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        let addrs = tokio::net::lookup_host((host, 0)).await?;
        let mut out: Vec<IpAddr> = Vec::new();
        for a in addrs {
            if !out.contains(&a.ip()) {
                out.push(a.ip());
            }
        }
        Ok(out)
    }
}

/// Opens a TCP connection to an address that has already been checked.
#[async_trait]
pub trait Dialer: Send + Sync + std::fmt::Debug {
    async fn dial(&self, addr: SocketAddr) -> io::Result<TcpStream>;
}

/// Plain `TcpStream::connect` with `TCP_NODELAY`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpDialer;

#[async_trait]
impl Dialer for TcpDialer {
    async fn dial(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}
