//! A source address as the server's limits count it: one client is an IPv4 address or an
//! IPv6 /64 (providers give a customer a whole /64).

use std::net::IpAddr;

/// A source address as the limits count it: an IPv4 address (IPv4-mapped IPv6 too), or the
/// /64 prefix of an IPv6 address (one client is given a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddrKey {
    V4([u8; 4]),
    V6([u8; 8]),
}

impl AddrKey {
    pub fn of(ip: IpAddr) -> AddrKey {
        match ip {
            IpAddr::V4(v4) => AddrKey::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => AddrKey::V4(v4.octets()),
                None => {
                    let o = v6.octets();
                    AddrKey::V6(o[..8].try_into().expect("8 bytes"))
                }
            },
        }
    }
}

impl std::fmt::Display for AddrKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddrKey::V4(o) => write!(f, "{}", std::net::Ipv4Addr::from(*o)),
            AddrKey::V6(o) => {
                let mut full = [0u8; 16];
                full[..8].copy_from_slice(o);
                write!(f, "{}/64", std::net::Ipv6Addr::from(full))
            }
        }
    }
}
