//! A lease as a server granted it (a DHCPACK), its timers and its CNI
//! result.
//!
//! Go: `DHCPLease.commit`, `IPNet`, `Gateway`, `Routes` (plugins
//! `plugins/ipam/dhcp/lease.go`).

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use cni_types::{IpConfig, IpNetwork, Result100, Route, SpecVersion};

use crate::message::{code, Message};
use crate::DhcpError;

/// The lease time when the server sends none.
///
/// Go: `defaultLeaseTime`.
const DEFAULT_LEASE_TIME: Duration = Duration::from_secs(60 * 60);

/// `RT_SCOPE_LINK`: a classless route without a router is on-link.
const SCOPE_LINK: u32 = 253;

/// A granted lease: the address, what the server said with it, and when
/// to renew (T1), rebind (T2) and give up.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The leased address.
    pub address: Ipv4Addr,
    /// The server that granted it (option 54).
    pub server: Ipv4Addr,
    /// The DHCPACK, kept for its options.
    pub ack: Message,
    /// When the lease was granted.
    pub granted: Instant,
    /// The lease time (option 51).
    pub lease_time: Duration,
    /// T1 (option 58, else half the lease time).
    pub renewal_time: Duration,
    /// T2 (option 59, else 85% of the lease time).
    pub rebinding_time: Duration,
}

impl Lease {
    /// The lease a DHCPACK grants. An ACK without a server identifier is
    /// [`DhcpError::MissingOption`].
    pub fn from_ack(ack: Message, granted: Instant) -> Result<Lease, DhcpError> {
        let server = ack
            .ipv4_option(code::SERVER_ID)
            .ok_or(DhcpError::MissingOption("server identifier (54)"))?;
        let secs = |c| ack.seconds_option(c).map(|s| Duration::from_secs(s.into()));
        let lease_time = secs(code::LEASE_TIME).unwrap_or(DEFAULT_LEASE_TIME);
        Ok(Lease {
            address: ack.yiaddr,
            server,
            granted,
            lease_time,
            rebinding_time: secs(code::REBINDING_TIME).unwrap_or(lease_time * 85 / 100),
            renewal_time: secs(code::RENEWAL_TIME).unwrap_or(lease_time / 2),
            ack,
        })
    }

    /// The lease cut to at most `cap`, T1 and T2 in the same proportion to
    /// it as before ([`crate::client::Timing::lease_time_cap`]).
    pub fn shortened_to(mut self, cap: Duration) -> Lease {
        if cap < self.lease_time && !self.lease_time.is_zero() {
            let factor = cap.as_secs_f64() / self.lease_time.as_secs_f64();
            self.renewal_time = self.renewal_time.mul_f64(factor);
            self.rebinding_time = self.rebinding_time.mul_f64(factor);
            self.lease_time = cap;
        }
        self
    }

    /// When to start renewing.
    pub fn renew_at(&self) -> Instant {
        self.granted + self.renewal_time
    }

    /// When to start rebinding.
    pub fn rebind_at(&self) -> Instant {
        self.granted + self.rebinding_time
    }

    /// When the lease ends.
    pub fn expires_at(&self) -> Instant {
        self.granted + self.lease_time
    }

    /// The address with the subnet mask's prefix. An ACK without a subnet
    /// mask is [`DhcpError::MissingOption`], as in the reference.
    pub fn network(&self) -> Result<IpNetwork, DhcpError> {
        let mask = self
            .ack
            .ipv4_option(code::SUBNET_MASK)
            .ok_or(DhcpError::MissingOption("subnet mask (1)"))?;
        let prefix = u32::from(mask).leading_ones() as u8;
        IpNetwork::new(IpAddr::V4(self.address), prefix)
            .ok_or(DhcpError::MissingOption("subnet mask (1)"))
    }

    /// The first router (option 3).
    pub fn gateway(&self) -> Option<Ipv4Addr> {
        self.ack.ipv4_option(code::ROUTER)
    }

    /// The routes: the classless static routes (121) when present,
    /// otherwise the classful static routes (33) and a default route via
    /// the router.
    pub fn routes(&self) -> Vec<Route> {
        if let Some(v) = self.ack.option(code::CLASSLESS_ROUTES) {
            let routes = classless_routes(&v);
            if !routes.is_empty() {
                return routes;
            }
        }
        let mut routes = Vec::new();
        if let Some(v) = self.ack.option(code::STATIC_ROUTES) {
            for pair in v.chunks_exact(8) {
                let dst = Ipv4Addr::new(pair[0], pair[1], pair[2], pair[3]);
                let gw = Ipv4Addr::new(pair[4], pair[5], pair[6], pair[7]);
                // The classful mask of the destination, as Go's DefaultMask.
                let prefix = match pair[0] {
                    0..=127 => 8,
                    128..=191 => 16,
                    192..=223 => 24,
                    _ => continue,
                };
                if let Some(dst) = IpNetwork::new(IpAddr::V4(dst), prefix) {
                    routes.push(Route::new(dst, Some(IpAddr::V4(gw))));
                }
            }
        }
        if let Some(gw) = self.gateway() {
            let default = IpNetwork::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
            routes.extend(default.map(|d| Route::new(d, Some(IpAddr::V4(gw)))));
        }
        routes
    }

    /// The CNI result: one address with its gateway, the routes, each
    /// with metric `priority` when it is not 0.
    ///
    /// Go: `DHCP.Allocate`'s result.
    pub fn result(&self, priority: u32) -> Result<Result100, DhcpError> {
        let mut result = Result100::new(SpecVersion::V1_0_0);
        result.ips.push(IpConfig {
            interface: None,
            address: self.network()?,
            gateway: self.gateway().map(IpAddr::V4),
        });
        result.routes = self.routes();
        if priority != 0 {
            for r in &mut result.routes {
                r.priority = Some(priority);
            }
        }
        Ok(result)
    }
}

/// Option 121 (RFC 3442): a prefix length, the destination's significant
/// octets, a router; a truncated entry ends the list.
fn classless_routes(mut v: &[u8]) -> Vec<Route> {
    let mut routes = Vec::new();
    while let Some((&width, rest)) = v.split_first() {
        if width > 32 {
            break;
        }
        let significant = usize::from(width).div_ceil(8);
        let Some(dst) = rest.get(..significant) else {
            break;
        };
        let Some(gw) = rest.get(significant..significant + 4) else {
            break;
        };
        let mut octets = [0u8; 4];
        octets[..significant].copy_from_slice(dst);
        let gw = Ipv4Addr::new(gw[0], gw[1], gw[2], gw[3]);
        if let Some(dst) = IpNetwork::new(IpAddr::V4(Ipv4Addr::from(octets)), width) {
            let mut route = Route::new(dst, Some(IpAddr::V4(gw)));
            if gw.is_unspecified() {
                route.scope = Some(SCOPE_LINK);
            }
            routes.push(route);
        }
        v = &rest[significant + 4..];
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::MessageType;

    fn ack(options: &[(u8, &[u8])]) -> Message {
        let mut m = Message::client(MessageType::Ack, 1, [0; 6]);
        m.op = 2;
        m.yiaddr = Ipv4Addr::new(10, 1, 2, 3);
        m.set_option(code::SERVER_ID, vec![10, 1, 2, 1]);
        for (c, v) in options {
            m.set_option(*c, v.to_vec());
        }
        m
    }

    #[test]
    fn the_result_has_the_address_the_router_and_a_default_route() {
        let m = ack(&[
            (code::SUBNET_MASK, &[255, 255, 255, 0]),
            (code::ROUTER, &[10, 1, 2, 1]),
        ]);
        let lease = Lease::from_ack(m, Instant::now()).unwrap();
        let json = serde_json::to_value(lease.result(0).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"cniVersion":"1.0.0",
                "ips":[{"address":"10.1.2.3/24","gateway":"10.1.2.1"}],
                "routes":[{"dst":"0.0.0.0/0","gw":"10.1.2.1"}]})
        );
    }

    #[test]
    fn classless_routes_replace_the_router_and_an_on_link_one_has_link_scope() {
        let m = ack(&[
            (code::SUBNET_MASK, &[255, 255, 0, 0]),
            (code::ROUTER, &[10, 1, 0, 1]),
            (
                code::CLASSLESS_ROUTES,
                &[24, 192, 168, 7, 10, 1, 0, 254, 16, 172, 16, 0, 0, 0, 0],
            ),
        ]);
        let routes = Lease::from_ack(m, Instant::now()).unwrap().routes();
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].dst.to_string(), "192.168.7.0/24");
        assert_eq!(routes[1].dst.to_string(), "172.16.0.0/16");
        assert_eq!(routes[1].scope, Some(SCOPE_LINK));
    }

    #[test]
    fn timers_default_to_half_and_85_percent_of_the_lease_time() {
        let m = ack(&[(code::LEASE_TIME, &120u32.to_be_bytes())]);
        let lease = Lease::from_ack(m, Instant::now()).unwrap();
        assert_eq!(lease.renewal_time, Duration::from_secs(60));
        assert_eq!(lease.rebinding_time, Duration::from_secs(102));
    }

    #[test]
    fn a_shortened_lease_keeps_its_timers_in_proportion() {
        let m = ack(&[(code::LEASE_TIME, &120u32.to_be_bytes())]);
        let lease = Lease::from_ack(m, Instant::now()).unwrap();
        let short = lease.clone().shortened_to(Duration::from_secs(12));
        assert_eq!(short.lease_time, Duration::from_secs(12));
        assert_eq!(short.renewal_time, Duration::from_secs(6));
        assert_eq!(short.rebinding_time, Duration::from_millis(10_200));
        let longer = lease.shortened_to(Duration::from_secs(600));
        assert_eq!(longer.lease_time, Duration::from_secs(120));
    }

    #[test]
    fn an_ack_without_a_subnet_mask_gives_no_result() {
        let lease = Lease::from_ack(ack(&[]), Instant::now()).unwrap();
        assert!(matches!(lease.result(0), Err(DhcpError::MissingOption(_))));
    }
}
