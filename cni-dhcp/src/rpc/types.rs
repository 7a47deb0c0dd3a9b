//! The Go types the calls carry, as gob describes them, and their
//! conversions: `skel.CmdArgs` to and from [`CmdArgs`], `types100.Result`
//! to and from a 1.0.0 result's JSON.
//!
//! The shapes are those of containernetworking/cni v1.3.0 (plugins v1.9).
//! Gob matches fields by name and skips those a side does not know, so a
//! peer built with an older library (Debian's dhcp 1.1.1: no
//! `NetnsOverride`, routes without `MTU` ... `Scope`) reads these values
//! and is read.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::{json, Map};

use crate::gob::{Field, StructType, Type, Value};

/// Go: `rpc.Request`, the header of a call.
pub static REQUEST: StructType = StructType {
    name: "Request",
    fields: &[
        Field {
            name: "ServiceMethod",
            ty: Type::String,
        },
        Field {
            name: "Seq",
            ty: Type::Uint,
        },
    ],
};

/// Go: `rpc.Response`, the header of an answer.
pub static RESPONSE: StructType = StructType {
    name: "Response",
    fields: &[
        Field {
            name: "ServiceMethod",
            ty: Type::String,
        },
        Field {
            name: "Seq",
            ty: Type::Uint,
        },
        Field {
            name: "Error",
            ty: Type::String,
        },
    ],
};

/// Go: `struct{}`, `DHCP.Release`'s reply and the body of an error.
pub static EMPTY: StructType = StructType {
    name: "",
    fields: &[],
};

/// Go: `skel.CmdArgs` (cni v1.3.0).
pub static CMD_ARGS: StructType = StructType {
    name: "CmdArgs",
    fields: &[
        Field {
            name: "ContainerID",
            ty: Type::String,
        },
        Field {
            name: "Netns",
            ty: Type::String,
        },
        Field {
            name: "IfName",
            ty: Type::String,
        },
        Field {
            name: "Args",
            ty: Type::String,
        },
        Field {
            name: "Path",
            ty: Type::String,
        },
        Field {
            name: "NetnsOverride",
            ty: Type::String,
        },
        Field {
            name: "StdinData",
            ty: Type::Bytes,
        },
    ],
};

/// Go: `types100.Interface`.
static INTERFACE: StructType = StructType {
    // Unnamed on the wire: reached through the pointers of a slice.
    name: "",
    fields: &[
        Field {
            name: "Name",
            ty: Type::String,
        },
        Field {
            name: "Mac",
            ty: Type::String,
        },
        Field {
            name: "Mtu",
            ty: Type::Int,
        },
        Field {
            name: "Sandbox",
            ty: Type::String,
        },
        Field {
            name: "SocketPath",
            ty: Type::String,
        },
        Field {
            name: "PciID",
            ty: Type::String,
        },
    ],
};

/// Go: `net.IPNet`.
static IPNET: StructType = StructType {
    name: "IPNet",
    fields: &[
        Field {
            name: "IP",
            ty: Type::Bytes,
        },
        Field {
            name: "Mask",
            ty: Type::Bytes,
        },
    ],
};

/// Go: `types100.IPConfig`.
static IPCONFIG: StructType = StructType {
    // Unnamed on the wire: reached through the pointers of a slice.
    name: "",
    fields: &[
        Field {
            name: "Interface",
            ty: Type::Int,
        },
        Field {
            name: "Address",
            ty: Type::Struct(&IPNET),
        },
        Field {
            name: "Gateway",
            ty: Type::Bytes,
        },
    ],
};

/// Go: `types.Route` (cni v1.3.0).
static ROUTE: StructType = StructType {
    // Unnamed on the wire: reached through the pointers of a slice.
    name: "",
    fields: &[
        Field {
            name: "Dst",
            ty: Type::Struct(&IPNET),
        },
        Field {
            name: "GW",
            ty: Type::Bytes,
        },
        Field {
            name: "MTU",
            ty: Type::Int,
        },
        Field {
            name: "AdvMSS",
            ty: Type::Int,
        },
        Field {
            name: "Priority",
            ty: Type::Int,
        },
        Field {
            name: "Table",
            ty: Type::Int,
        },
        Field {
            name: "Scope",
            ty: Type::Int,
        },
    ],
};

static STRINGS: Type = Type::String;

/// Go: `types.DNS`.
static DNS: StructType = StructType {
    name: "DNS",
    fields: &[
        Field {
            name: "Nameservers",
            ty: Type::Slice("[]string", &STRINGS),
        },
        Field {
            name: "Domain",
            ty: Type::String,
        },
        Field {
            name: "Search",
            ty: Type::Slice("[]string", &STRINGS),
        },
        Field {
            name: "Options",
            ty: Type::Slice("[]string", &STRINGS),
        },
    ],
};

static INTERFACE_T: Type = Type::Struct(&INTERFACE);
static IPCONFIG_T: Type = Type::Struct(&IPCONFIG);
static ROUTE_T: Type = Type::Struct(&ROUTE);

/// Go: `types100.Result`, `DHCP.Allocate`'s reply.
pub static RESULT: StructType = StructType {
    name: "Result",
    fields: &[
        Field {
            name: "CNIVersion",
            ty: Type::String,
        },
        Field {
            name: "Interfaces",
            ty: Type::Slice("[]*types100.Interface", &INTERFACE_T),
        },
        Field {
            name: "IPs",
            ty: Type::Slice("[]*types100.IPConfig", &IPCONFIG_T),
        },
        Field {
            name: "Routes",
            ty: Type::Slice("[]*types.Route", &ROUTE_T),
        },
        Field {
            name: "DNS",
            ty: Type::Struct(&DNS),
        },
    ],
};

/// The arguments of every call: the plugin's CNI environment and its
/// standard input.
///
/// Go: `skel.CmdArgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmdArgs {
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`, absolute (the daemon may run in another directory).
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS`, raw.
    pub args: String,
    /// `CNI_PATH`, raw.
    pub path: String,
    /// `CNI_NETNS_OVERRIDE` (cni v1.3.0; empty from older plugins).
    pub netns_override: String,
    /// The network configuration.
    pub stdin_data: Vec<u8>,
}

impl CmdArgs {
    /// The gob value of [`CMD_ARGS`].
    pub fn to_value(&self) -> Value {
        let s = |n: &str, v: &str| (n.to_string(), Value::String(v.to_string()));
        Value::Struct(vec![
            s("ContainerID", &self.container_id),
            s("Netns", &self.netns),
            s("IfName", &self.ifname),
            s("Args", &self.args),
            s("Path", &self.path),
            s("NetnsOverride", &self.netns_override),
            ("StdinData".into(), Value::Bytes(self.stdin_data.clone())),
        ])
    }

    /// The arguments from a decoded `skel.CmdArgs` (fields not sent are
    /// empty).
    pub fn from_value(v: &Value) -> CmdArgs {
        CmdArgs {
            container_id: v.text_field("ContainerID").to_string(),
            netns: v.text_field("Netns").to_string(),
            ifname: v.text_field("IfName").to_string(),
            args: v.text_field("Args").to_string(),
            path: v.text_field("Path").to_string(),
            netns_override: v.text_field("NetnsOverride").to_string(),
            stdin_data: v
                .field("StdinData")
                .and_then(Value::as_bytes)
                .unwrap_or_default()
                .to_vec(),
        }
    }
}

/// Why a `types100.Result` from the daemon cannot be a CNI result.
#[derive(Debug, thiserror::Error)]
#[error("unreadable result from the DHCP daemon: {0}")]
pub struct ResultError(String);

/// `ip/prefix` from a Go `net.IPNet`: its IP (4 or 16 bytes) and a
/// contiguous mask.
fn ipnet_text(v: &Value) -> Result<String, ResultError> {
    let ip = ip_of(v.field("IP"))?.ok_or_else(|| ResultError("an address without IP".into()))?;
    let mask = v
        .field("Mask")
        .and_then(Value::as_bytes)
        .unwrap_or_default();
    // An IPv4 address may come with a 16-byte mask (Go's `CIDRMask(n, 128)`).
    let mask = match (ip, mask.len()) {
        (IpAddr::V4(_), 16) if mask[..12].iter().all(|&b| b == 0xff) => &mask[12..],
        _ => mask,
    };
    let bits: u32 = mask.iter().map(|b| b.count_ones()).sum();
    let width = if ip.is_ipv4() { 4 } else { 16 };
    let contiguous = mask
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1))
        .skip(bits as usize)
        .all(|bit| bit == 0);
    if mask.len() != width || !contiguous {
        return Err(ResultError(format!(
            "the mask {mask:?} of {ip} is not a prefix"
        )));
    }
    Ok(format!("{ip}/{bits}"))
}

/// An IP from Go's `net.IP` bytes; absent or empty is `None`.
fn ip_of(v: Option<&Value>) -> Result<Option<IpAddr>, ResultError> {
    let bytes = v.and_then(Value::as_bytes).unwrap_or_default();
    Ok(match bytes.len() {
        0 => None,
        4 => Some(IpAddr::V4(Ipv4Addr::new(
            bytes[0], bytes[1], bytes[2], bytes[3],
        ))),
        16 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(bytes);
            let v6 = Ipv6Addr::from(octets);
            Some(match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(v6),
            })
        }
        n => return Err(ResultError(format!("an IP of {n} bytes"))),
    })
}

/// Go's `net.IPNet` from `ip/prefix`.
fn ipnet_value(text: &str) -> Result<Value, ResultError> {
    let bad = || ResultError(format!("{text:?} is not an address with a prefix"));
    let (ip, prefix) = text.split_once('/').ok_or_else(bad)?;
    let ip: IpAddr = ip.parse().map_err(|_| bad())?;
    let prefix: u32 = prefix.parse().map_err(|_| bad())?;
    let (bytes, width) = ip_bytes(ip);
    if prefix > width {
        return Err(bad());
    }
    let mask: Vec<u8> = (0..width / 8)
        .map(|i| {
            let ones = prefix.saturating_sub(i * 8).min(8);
            (0xff00u16 >> ones) as u8
        })
        .collect();
    Ok(Value::Struct(vec![
        ("IP".into(), Value::Bytes(bytes)),
        ("Mask".into(), Value::Bytes(mask)),
    ]))
}

fn ip_bytes(ip: IpAddr) -> (Vec<u8>, u32) {
    match ip {
        IpAddr::V4(v4) => (v4.octets().to_vec(), 32),
        IpAddr::V6(v6) => (v6.octets().to_vec(), 128),
    }
}

fn ip_value(text: &str) -> Result<Value, ResultError> {
    let ip: IpAddr = text
        .parse()
        .map_err(|_| ResultError(format!("{text:?} is not an IP")))?;
    Ok(Value::Bytes(ip_bytes(ip).0))
}

fn strings(v: Option<&serde_json::Value>) -> Value {
    Value::List(
        v.and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(|s| Value::String(s.to_string())))
            .collect(),
    )
}

/// The gob value of [`RESULT`] for a 1.0.0 result's JSON, its
/// `CNIVersion` left empty as the reference daemon leaves it.
///
/// ```
/// let json = serde_json::json!({"cniVersion": "1.0.0",
///     "ips": [{"address": "10.1.2.3/24", "gateway": "10.1.2.1"}],
///     "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}]});
/// let value = cni_dhcp::rpc::result_to_value(&json).unwrap();
/// assert_eq!(cni_dhcp::rpc::result_from_value(&value).unwrap(), json);
/// ```
pub fn result_to_value(json: &serde_json::Value) -> Result<Value, ResultError> {
    let text = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let int = |v: &serde_json::Value, k: &str| v[k].as_i64();
    let list = |k: &str| json[k].as_array().cloned().unwrap_or_default();
    let mut interfaces = Vec::new();
    for i in list("interfaces") {
        let mut f = vec![];
        for (go, key) in [("Name", "name"), ("Mac", "mac")] {
            f.push((go.to_string(), Value::String(text(&i, key))));
        }
        f.push(("Mtu".into(), Value::Int(int(&i, "mtu").unwrap_or_default())));
        for (go, key) in [
            ("Sandbox", "sandbox"),
            ("SocketPath", "socketPath"),
            ("PciID", "pciID"),
        ] {
            f.push((go.to_string(), Value::String(text(&i, key))));
        }
        interfaces.push(Value::Struct(f));
    }
    let mut ips = Vec::new();
    for ip in list("ips") {
        let mut f = vec![];
        if let Some(index) = int(&ip, "interface") {
            f.push(("Interface".into(), Value::Int(index)));
        }
        f.push(("Address".into(), ipnet_value(&text(&ip, "address"))?));
        if let Some(gw) = ip["gateway"].as_str() {
            f.push(("Gateway".into(), ip_value(gw)?));
        }
        ips.push(Value::Struct(f));
    }
    let mut routes = Vec::new();
    for r in list("routes") {
        let mut f = vec![("Dst".into(), ipnet_value(&text(&r, "dst"))?)];
        if let Some(gw) = r["gw"].as_str() {
            f.push(("GW".into(), ip_value(gw)?));
        }
        for (go, key) in [
            ("MTU", "mtu"),
            ("AdvMSS", "advmss"),
            ("Priority", "priority"),
        ] {
            f.push((go.to_string(), Value::Int(int(&r, key).unwrap_or_default())));
        }
        // Pointers in Go: sent when set, even to 0.
        for (go, key) in [("Table", "table"), ("Scope", "scope")] {
            if let Some(n) = int(&r, key) {
                f.push((go.to_string(), Value::Int(n)));
            }
        }
        routes.push(Value::Struct(f));
    }
    let dns = &json["dns"];
    // `CNIVersion` stays empty, as the reference daemon leaves it: the
    // plugin prints the result in the configuration's version.
    Ok(Value::Struct(vec![
        ("Interfaces".into(), Value::List(interfaces)),
        ("IPs".into(), Value::List(ips)),
        ("Routes".into(), Value::List(routes)),
        (
            "DNS".into(),
            Value::Struct(vec![
                ("Nameservers".into(), strings(dns.get("nameservers"))),
                ("Domain".into(), Value::String(text(dns, "domain"))),
                ("Search".into(), strings(dns.get("search"))),
                ("Options".into(), strings(dns.get("options"))),
            ]),
        ),
    ]))
}

/// A 1.0.0 result's JSON from a decoded `types100.Result`; a result
/// without `CNIVersion` (the reference daemon leaves it to the plugin) is
/// 1.0.0.
pub fn result_from_value(v: &Value) -> Result<serde_json::Value, ResultError> {
    let mut out = Map::new();
    let version = match v.text_field("CNIVersion") {
        "" => "1.0.0",
        other => other,
    };
    out.insert("cniVersion".into(), json!(version));
    let list = |k: &str| v.field(k).and_then(Value::as_list).unwrap_or_default();
    let nonzero = |v: &Value, k: &str| v.field(k).and_then(Value::as_int).filter(|n| *n != 0);
    let mut interfaces = Vec::new();
    for i in list("Interfaces") {
        let mut o = Map::new();
        o.insert("name".into(), json!(i.text_field("Name")));
        for (go, key) in [
            ("Mac", "mac"),
            ("Sandbox", "sandbox"),
            ("SocketPath", "socketPath"),
            ("PciID", "pciID"),
        ] {
            if !i.text_field(go).is_empty() {
                o.insert(key.into(), json!(i.text_field(go)));
            }
        }
        if let Some(mtu) = nonzero(i, "Mtu") {
            o.insert("mtu".into(), json!(mtu));
        }
        interfaces.push(serde_json::Value::Object(o));
    }
    let mut ips = Vec::new();
    for ip in list("IPs") {
        let mut o = Map::new();
        if let Some(index) = ip.field("Interface").and_then(Value::as_int) {
            o.insert("interface".into(), json!(index));
        }
        let address = ip
            .field("Address")
            .ok_or_else(|| ResultError("an IP configuration without an address".into()))?;
        o.insert("address".into(), json!(ipnet_text(address)?));
        if let Some(gw) = ip_of(ip.field("Gateway"))? {
            o.insert("gateway".into(), json!(gw.to_string()));
        }
        ips.push(serde_json::Value::Object(o));
    }
    let mut routes = Vec::new();
    for r in list("Routes") {
        let mut o = Map::new();
        let dst = r
            .field("Dst")
            .ok_or_else(|| ResultError("a route without a destination".into()))?;
        o.insert("dst".into(), json!(ipnet_text(dst)?));
        if let Some(gw) = ip_of(r.field("GW"))? {
            o.insert("gw".into(), json!(gw.to_string()));
        }
        for (go, key) in [
            ("MTU", "mtu"),
            ("AdvMSS", "advmss"),
            ("Priority", "priority"),
        ] {
            if let Some(n) = nonzero(r, go) {
                o.insert(key.into(), json!(n));
            }
        }
        for (go, key) in [("Table", "table"), ("Scope", "scope")] {
            if let Some(n) = r.field(go).and_then(Value::as_int) {
                o.insert(key.into(), json!(n));
            }
        }
        routes.push(serde_json::Value::Object(o));
    }
    for (key, items) in [("interfaces", interfaces), ("ips", ips), ("routes", routes)] {
        if !items.is_empty() {
            out.insert(key.into(), serde_json::Value::Array(items));
        }
    }
    let mut dns = Map::new();
    if let Some(d) = v.field("DNS") {
        for (go, key) in [
            ("Nameservers", "nameservers"),
            ("Search", "search"),
            ("Options", "options"),
        ] {
            let items: Vec<&str> = d
                .field(go)
                .and_then(Value::as_list)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if !items.is_empty() {
                dns.insert(key.into(), json!(items));
            }
        }
        if !d.text_field("Domain").is_empty() {
            dns.insert("domain".into(), json!(d.text_field("Domain")));
        }
    }
    if !dns.is_empty() {
        out.insert("dns".into(), serde_json::Value::Object(dns));
    }
    Ok(serde_json::Value::Object(out))
}
