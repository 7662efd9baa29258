//! The address policy of `web_fetch`: only public internet addresses may be fetched, so the model
//! cannot be steered (by a page it read, say) into reaching the machine itself, the local
//! network or a cloud metadata service (server-side request forgery).
//!
//! The guard resolves each host itself and refuses it when *any* of its addresses is not public;
//! the caller then connects to exactly the vetted addresses, so a DNS answer that changes between
//! the check and the connection (DNS rebinding) cannot slip a private address in. Every redirect
//! hop is vetted again.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Url;
use url::Host;

/// A kind of address that is not on the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    UniqueLocal,
    SharedCgnat,
    Broadcast,
    Multicast,
    Documentation,
    Benchmarking,
    Reserved,
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressClass::Unspecified => "an unspecified address (0.0.0.0/8, ::)",
            AddressClass::Loopback => "a loopback address (127.0.0.0/8, ::1): this machine",
            AddressClass::Private => "a private network address (10/8, 172.16/12, 192.168/16)",
            AddressClass::LinkLocal => {
                "a link-local address (169.254/16, fe80::/10; includes cloud metadata services)"
            }
            AddressClass::UniqueLocal => "a unique local IPv6 address (fc00::/7)",
            AddressClass::SharedCgnat => "a carrier-grade NAT address (100.64/10)",
            AddressClass::Broadcast => "the broadcast address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Documentation => "a documentation address",
            AddressClass::Benchmarking => "a benchmarking address (198.18/15)",
            AddressClass::Reserved => "a reserved address",
        })
    }
}

/// Why `ip` may not be fetched, or `None` for a public address. IPv6 forms that embed an IPv4
/// address (mapped `::ffff:a.b.c.d`, NAT64, 6to4) are judged by that address.
pub fn classify(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, ..) => AddressClass::Unspecified,
        (127, ..) => AddressClass::Loopback,
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => AddressClass::Private,
        (169, 254, _) => AddressClass::LinkLocal,
        (100, 64..=127, _) => AddressClass::SharedCgnat,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Documentation,
        (198, 18..=19, _) => AddressClass::Benchmarking,
        (192, 0, 0) | (192, 88, 99) => AddressClass::Reserved,
        _ if ip.is_broadcast() => AddressClass::Broadcast,
        (224..=239, ..) => AddressClass::Multicast,
        (240..=255, ..) => AddressClass::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    let s = ip.segments();
    let embedded_v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if ip.is_unspecified() {
        return Some(AddressClass::Unspecified);
    }
    if ip.is_loopback() {
        return Some(AddressClass::Loopback);
    }
    match s {
        // IPv4-mapped ::ffff:a.b.c.d and NAT64 64:ff9b::a.b.c.d reach that IPv4 address.
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => {
            return classify_v4(embedded_v4(hi, lo));
        }
        // Deprecated IPv4-compatible ::a.b.c.d.
        [0, 0, 0, 0, 0, 0, _, _] => return Some(AddressClass::Reserved),
        // 6to4 2002:a.b.c.d::/48 tunnels to that IPv4 address.
        [0x2002, hi, lo, ..] => {
            if let Some(class) = classify_v4(embedded_v4(hi, lo)) {
                return Some(class);
            }
        }
        _ => {}
    }
    Some(match s[0] {
        0xfe80..=0xfebf => AddressClass::LinkLocal,
        0xfec0..=0xfeff => AddressClass::Private,
        0xfc00..=0xfdff => AddressClass::UniqueLocal,
        0xff00..=0xffff => AddressClass::Multicast,
        0x2001 if s[1] == 0x0db8 => AddressClass::Documentation,
        0x3fff if s[1] < 0x1000 => AddressClass::Documentation,
        // IETF protocol assignments 2001::/23 (Teredo, ORCHID, …).
        0x2001 if s[1] < 0x0200 => AddressClass::Reserved,
        // Everything outside global unicast 2000::/3 (and NAT64, handled above).
        0x2000..=0x3fff => return None,
        _ => AddressClass::Reserved,
    })
}

/// Host names that always mean this machine or a metadata service.
fn blocked_name(name: &str) -> bool {
    name == "localhost"
        || name.ends_with(".localhost")
        || matches!(
            name,
            "localhost.localdomain" | "metadata" | "metadata.google.internal" | "instance-data"
        )
}

/// Turns a host name into addresses; injectable so tests need no DNS.
#[async_trait]
pub trait Resolve: Send + Sync {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system resolver (`getaddrinfo` on tokio's blocking pool).
pub struct SystemResolver;

#[async_trait]
impl Resolve for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

#[async_trait]
impl<F> Resolve for F
where
    F: Fn(&str, u16) -> Vec<SocketAddr> + Send + Sync,
{
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(self(host, port))
    }
}

/// Where a URL may be fetched from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Vetted {
    /// The host name to pin to `addrs`; `None` for an IP address in the URL.
    pub host: Option<String>,
    pub addrs: Vec<SocketAddr>,
}

/// Why a URL was refused; the messages are written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refused {
    #[error("only http:// and https:// URLs can be fetched, not `{0}:`")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error(
        "refused to fetch `{0}`: it names this machine or a metadata service; web_fetch only \
         fetches public internet addresses (the configuration can allow private addresses)"
    )]
    Name(String),
    #[error(
        "refused to fetch `{host}`: {ip} is {class}; web_fetch only fetches public \
         internet addresses (the configuration can allow private addresses)"
    )]
    Address {
        host: String,
        ip: IpAddr,
        class: AddressClass,
    },
    #[error("could not resolve `{host}`: {reason}")]
    Unresolvable { host: String, reason: String },
}

/// The policy: public addresses only, unless `allow_private`.
#[derive(Clone)]
pub(super) struct Guard {
    allow_private: bool,
    resolver: Arc<dyn Resolve>,
    /// Host names exempt from the address check (tests only: a "public" name that resolves to
    /// the loopback test server).
    exempt: Vec<String>,
}

impl Guard {
    pub(super) fn new(allow_private: bool, resolver: Arc<dyn Resolve>) -> Self {
        Guard {
            allow_private,
            resolver,
            exempt: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(super) fn exempt(mut self, host: &str) -> Self {
        self.exempt.push(host.to_owned());
        self
    }

    /// Check `url` and resolve its host to the addresses to connect to.
    pub(super) async fn vet(&self, url: &Url) -> Result<Vetted, Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused::Scheme(url.scheme().to_owned()));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let (host, addrs) = match url.host().ok_or(Refused::NoHost)? {
            Host::Ipv4(ip) => (None, vec![SocketAddr::new(ip.into(), port)]),
            Host::Ipv6(ip) => (None, vec![SocketAddr::new(ip.into(), port)]),
            Host::Domain(name) => {
                let normal = name.trim_end_matches('.').to_ascii_lowercase();
                if self.exempt.contains(&normal) {
                    let addrs = self.lookup(name, port).await?;
                    return Ok(Vetted {
                        host: Some(name.to_owned()),
                        addrs,
                    });
                }
                if !self.allow_private && blocked_name(&normal) {
                    return Err(Refused::Name(name.to_owned()));
                }
                (Some(name.to_owned()), self.lookup(name, port).await?)
            }
        };
        if !self.allow_private {
            for addr in &addrs {
                if let Some(class) = classify(addr.ip()) {
                    return Err(Refused::Address {
                        host: url.host_str().unwrap_or_default().to_owned(),
                        ip: addr.ip(),
                        class,
                    });
                }
            }
        }
        Ok(Vetted { host, addrs })
    }

    async fn lookup(&self, name: &str, port: u16) -> Result<Vec<SocketAddr>, Refused> {
        let unresolvable = |reason: String| Refused::Unresolvable {
            host: name.to_owned(),
            reason,
        };
        let addrs = self
            .resolver
            .resolve(name, port)
            .await
            .map_err(|e| unresolvable(e.to_string()))?;
        if addrs.is_empty() {
            return Err(unresolvable("no addresses".into()));
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests;
