//! portmap's configuration, read and checked whole before anything
//! changes: every field of the reference's `PortMapConf`, each error
//! naming the field.

use std::net::IpAddr;

use cni_netfilter::{BackendKind, Match, Protocol};
use cni_types::{Error, IpFamily, IpNetwork, NetConf, Result100};
use serde::Deserialize;

use super::conditions;

/// The reference's default mark bit: "Kubernetes uses 14 and 15, Calico
/// uses 20-31".
pub const DEFAULT_MARK_BIT: u32 = 13;

/// The most port mappings one attachment may ask for. Each becomes one
/// nft rule or up to three iptables rules; past a few thousand a node's
/// NAT table is slow for every packet, and a list of 10,000 is a mistake
/// rather than a pod. A departure: the reference takes any number.
pub const MAX_MAPPINGS: usize = 4096;

/// portmap's own keys.
///
/// Go: `PortMapConf` (plugins `plugins/meta/portmap/main.go`).
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// `"iptables"` or `"nftables"`; absent: iptables unless only nftables
    /// is usable.
    #[serde(default)]
    pub backend: Option<String>,
    /// Masquerade hairpin and localhost traffic to the container (default
    /// true).
    #[serde(default)]
    pub snat: Option<bool>,
    /// Extra conditions on the entry rules of IPv4 traffic: iptables
    /// arguments or nft rule text, by backend.
    #[serde(default, rename = "conditionsV4")]
    pub conditions_v4: Option<Vec<String>>,
    /// The same for IPv6.
    #[serde(default, rename = "conditionsV6")]
    pub conditions_v6: Option<Vec<String>>,
    /// Masquerade traffic to the container from every source, not only
    /// hairpin and localhost (iptables: `-s 0.0.0.0/0`).
    #[serde(default, rename = "masqAll")]
    pub masq_all: bool,
    /// The bit of the packet mark that asks for masquerading (iptables;
    /// default 13).
    #[serde(default, rename = "markMasqBit")]
    pub mark_masq_bit: Option<serde_json::Value>,
    /// A chain of the caller's that marks packets for masquerading
    /// instead of `CNI-HOSTPORT-SETMARK` (iptables only).
    #[serde(default, rename = "externalSetMarkChain")]
    pub external_set_mark_chain: Option<String>,
}

/// A `runtimeConfig.portMappings` entry as given; checked into a
/// [`Mapping`].
#[derive(Debug, Deserialize)]
struct RawMapping {
    #[serde(rename = "hostPort", default)]
    host_port: i64,
    #[serde(rename = "containerPort", default)]
    container_port: i64,
    #[serde(default)]
    protocol: String,
    #[serde(rename = "hostIP", default)]
    host_ip: Option<String>,
}

/// One port mapping, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The port on the host.
    pub host_port: u16,
    /// The port in the container.
    pub container_port: u16,
    /// TCP, UDP or SCTP.
    pub protocol: Protocol,
    /// The host address it is bound to; `None` for every address (also
    /// when given as `""`, `0.0.0.0` or `::`, of the same family).
    pub host_ip: Option<IpAddr>,
    /// The family of a given `hostIP`, unspecified ones included: a
    /// mapping applies only to a container address of that family.
    pub host_family: Option<IpFamily>,
}

impl Mapping {
    /// Whether it applies to a container address of this family.
    pub fn applies_to(&self, ip: IpFamily) -> bool {
        self.host_family.is_none_or(|family| family == ip)
    }
}

/// Everything an invocation does, validated.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The network's name (in iptables chain names and comments).
    pub network: String,
    /// The chosen backend.
    pub backend: BackendKind,
    /// `snat`.
    pub snat: bool,
    /// `masqAll`.
    pub masq_all: bool,
    /// `1 << markMasqBit`.
    pub mark: u32,
    /// `externalSetMarkChain`.
    pub external_set_mark_chain: Option<String>,
    /// `conditionsV4`, understood.
    pub conditions_v4: Vec<Match>,
    /// `conditionsV6`, understood.
    pub conditions_v6: Vec<Match>,
    /// `runtimeConfig.portMappings`.
    pub mappings: Vec<Mapping>,
    /// The container's IPv4 address from the previous result, with its
    /// prefix.
    pub ipv4: Option<IpNetwork>,
    /// The container's IPv6 address.
    pub ipv6: Option<IpNetwork>,
}

impl Setup {
    /// Reads and checks the configuration; `choose` picks the backend when
    /// none is configured (the reference's probe, or a fixed one in tests).
    ///
    /// Go: `parseConfig` and `ensureBackend`.
    pub fn read(
        conf: &NetConf<Fields>,
        ifname: &str,
        choose: impl FnOnce(Option<BackendKind>) -> BackendKind,
    ) -> Result<Setup, Error> {
        let fields = &conf.plugin;
        if fields.mark_masq_bit.is_some() && fields.external_set_mark_chain.is_some() {
            return Err(Error::invalid_config(
                "markMasqBit",
                "cannot be given with externalSetMarkChain",
            ));
        }
        let bit = match &fields.mark_masq_bit {
            None | Some(serde_json::Value::Null) => DEFAULT_MARK_BIT,
            Some(value) => value
                .as_u64()
                .filter(|bit| *bit <= 31)
                .map(|bit| bit as u32)
                .ok_or_else(|| {
                    Error::invalid_config("markMasqBit", format!("{value}: must be 0 to 31"))
                })?,
        };
        let requested = fields
            .backend
            .as_deref()
            .map(str::parse::<BackendKind>)
            .transpose()?;
        let backend = choose(requested);
        check_backend_options(fields, backend)?;
        if let Some(chain) = &fields.external_set_mark_chain {
            check_chain_name(chain)?;
        }
        let conditions = |field: &str, given: &Option<Vec<String>>, ip| match given {
            Some(list) => conditions::parse(field, list, backend, ip),
            None => Ok(Vec::new()),
        };
        let mut setup = Setup {
            network: conf.name.clone(),
            backend,
            snat: fields.snat.unwrap_or(true),
            masq_all: fields.masq_all,
            mark: 1 << bit,
            external_set_mark_chain: fields.external_set_mark_chain.clone(),
            conditions_v4: conditions("conditionsV4", &fields.conditions_v4, IpFamily::V4)?,
            conditions_v6: conditions("conditionsV6", &fields.conditions_v6, IpFamily::V6)?,
            mappings: mappings(conf)?,
            ipv4: None,
            ipv6: None,
        };
        if let Some(prev) = &conf.prev_result {
            let result = prev
                .to_current()
                .map_err(|e| Error::invalid_config("prevResult", e))?;
            (setup.ipv4, setup.ipv6) = container_addresses(&result, ifname);
        }
        Ok(setup)
    }

    /// The container addresses there are, IPv4 first.
    pub fn addresses(&self) -> impl Iterator<Item = IpNetwork> + '_ {
        self.ipv4.iter().chain(self.ipv6.iter()).copied()
    }

    /// The entry conditions of a family.
    pub fn conditions(&self, ip: IpFamily) -> &[Match] {
        match ip {
            IpFamily::V4 => &self.conditions_v4,
            IpFamily::V6 => &self.conditions_v6,
        }
    }
}

/// The reference's rule: options of one backend with the other is an
/// error naming them ("nftables backend was requested but configuration
/// contains iptables-specific options [externalSetMarkChain]").
fn check_backend_options(fields: &Fields, backend: BackendKind) -> Result<(), Error> {
    let mut wrong = Vec::new();
    if backend == BackendKind::Nftables && fields.external_set_mark_chain.is_some() {
        wrong.push("externalSetMarkChain");
    }
    for (field, given) in [
        ("conditionsV4", &fields.conditions_v4),
        ("conditionsV6", &fields.conditions_v6),
    ] {
        if let Some(kind) = given.as_deref().and_then(conditions::backend_of) {
            if kind != backend {
                wrong.push(field);
            }
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    let other = match backend {
        BackendKind::Iptables => BackendKind::Nftables,
        BackendKind::Nftables => BackendKind::Iptables,
    };
    Err(Error::invalid_config(
        &wrong.join(", "),
        format!("{other}-specific options, but the {backend} backend was chosen"),
    ))
}

/// An iptables chain name: 1 to 28 bytes of letters, digits, `-` and `_`
/// (what iptables takes and `iptables-save` prints back as it is).
fn check_chain_name(chain: &str) -> Result<(), Error> {
    let ok = !chain.is_empty()
        && chain.len() <= cni_netfilter::CHAIN_NAME_LEN
        && !chain.starts_with('-')
        && chain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_config(
            "externalSetMarkChain",
            format!("{chain:?}: not an iptables chain name (1 to 28 letters, digits, '-', '_')"),
        ))
    }
}

/// `runtimeConfig.portMappings`, checked; none when absent.
fn mappings(conf: &NetConf<Fields>) -> Result<Vec<Mapping>, Error> {
    let Some(runtime) = &conf.runtime_config else {
        return Ok(Vec::new());
    };
    let Some(raw) = runtime.get::<Vec<RawMapping>>("portMappings")? else {
        return Ok(Vec::new());
    };
    if raw.len() > MAX_MAPPINGS {
        return Err(Error::invalid_config(
            "runtimeConfig.portMappings",
            format!("{} entries: at most {MAX_MAPPINGS} are taken", raw.len()),
        ));
    }
    raw.iter().enumerate().map(|(i, m)| mapping(i, m)).collect()
}

fn mapping(i: usize, raw: &RawMapping) -> Result<Mapping, Error> {
    let field = |name: &str| format!("runtimeConfig.portMappings[{i}].{name}");
    let port = |name: &str, value: i64| {
        u16::try_from(value).ok().filter(|p| *p > 0).ok_or_else(|| {
            Error::invalid_config(&field(name), format!("{value}: must be 1 to 65535"))
        })
    };
    let protocol = match raw.protocol.to_ascii_lowercase().as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        "sctp" => Protocol::Sctp,
        _ => {
            return Err(Error::invalid_config(
                &field("protocol"),
                format!("{:?}: must be tcp, udp or sctp", raw.protocol),
            ))
        }
    };
    let (host_ip, host_family) = match raw.host_ip.as_deref().unwrap_or_default() {
        "" => (None, None),
        text => {
            let ip: IpAddr = text.parse().map_err(|_| {
                Error::invalid_config(&field("hostIP"), format!("{text:?}: not an IP address"))
            })?;
            // An IPv4-mapped address is IPv4, as in the reference.
            let ip = ip.to_canonical();
            ((!ip.is_unspecified()).then_some(ip), Some(IpFamily::of(ip)))
        }
    };
    Ok(Mapping {
        host_port: port("hostPort", raw.host_port)?,
        container_port: port("containerPort", raw.container_port)?,
        protocol,
        host_ip,
        host_family,
    })
}

/// The container's first IPv4 and first IPv6 address in `result`,
/// skipping addresses of interfaces that are known and not `ifname` in a
/// sandbox.
///
/// Go: the end of `parseConfig`.
pub fn container_addresses(
    result: &Result100,
    ifname: &str,
) -> (Option<IpNetwork>, Option<IpNetwork>) {
    let (mut v4, mut v6) = (None, None);
    for ip in &result.ips {
        let slot = if ip.address.is_ipv4() {
            &mut v4
        } else {
            &mut v6
        };
        if slot.is_some() {
            continue;
        }
        let elsewhere = ip
            .interface
            .and_then(|i| result.interfaces.get(i))
            .is_some_and(|iface| iface.name != ifname || iface.sandbox.is_empty());
        if !elsewhere {
            *slot = Some(ip.address);
        }
    }
    (v4, v6)
}

/// The reference's words for an ADD without a previous result
/// (`NetConf::prev_result_or`); its CHECK says [`CHECK_NOT_CHAINED`].
pub const NOT_CHAINED: &str = "must be called as chained plugin";

/// The reference's words for a CHECK without a previous result.
pub const CHECK_NOT_CHAINED: &str = "Required prevResult missing";

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: serde_json::Value) -> Result<Setup, Error> {
        let conf: NetConf<Fields> = NetConf::from_json(json.to_string().as_bytes()).unwrap();
        Setup::read(&conf, "eth0", |requested| {
            requested.unwrap_or(BackendKind::Iptables)
        })
    }

    #[test]
    fn defaults_are_the_reference_ones_and_protocols_take_any_case() {
        let setup = read(serde_json::json!({
            "cniVersion": "1.0.0", "name": "n", "type": "portmap",
            "runtimeConfig": {"portMappings": [
                {"hostPort": 80, "containerPort": 8080, "protocol": "TCP", "hostIP": ""},
                {"hostPort": 53, "containerPort": 53, "protocol": "udp", "hostIP": "::"},
                {"hostPort": 54, "containerPort": 53, "protocol": "sctp", "hostIP": "::ffff:10.0.0.1"}
            ]}
        }))
        .unwrap();
        assert_eq!(setup.backend, BackendKind::Iptables);
        assert!(setup.snat && !setup.masq_all);
        assert_eq!(setup.mark, 1 << DEFAULT_MARK_BIT);
        assert_eq!(setup.mappings[0].protocol, Protocol::Tcp);
        assert_eq!(setup.mappings[0].host_family, None);
        // "::" binds every IPv6 address: IPv6 only, no destination match.
        assert_eq!(
            (setup.mappings[1].host_ip, setup.mappings[1].host_family),
            (None, Some(IpFamily::V6))
        );
        // An IPv4-mapped address is IPv4, as Go's To4 reads it.
        assert_eq!(setup.mappings[2].host_ip, Some("10.0.0.1".parse().unwrap()));
        assert!(setup.mappings[2].applies_to(IpFamily::V4));
        assert!(!setup.mappings[2].applies_to(IpFamily::V6));
        assert_eq!((setup.ipv4, setup.ipv6), (None, None));
    }
}
