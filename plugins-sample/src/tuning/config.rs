//! The configuration, its per-attachment overrides, and the validation
//! that turns them into what ADD and CHECK set: every error here comes
//! before anything changes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{Code, Error, Mac};
use serde::Deserialize;

use super::{Req, DEFAULT_DATA_DIR};

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// Where the original values are saved (default
    /// [`DEFAULT_DATA_DIR`]).
    #[serde(rename = "dataDir", default)]
    pub data_dir: Option<PathBuf>,
    /// `net.*` sysctls to set in the namespace; `IFNAME` in a key stands
    /// for `CNI_IFNAME`.
    #[serde(default)]
    pub sysctl: BTreeMap<String, String>,
    /// The MAC address for the interface.
    #[serde(default)]
    pub mac: Option<String>,
    /// Promiscuous mode on (false leaves it alone).
    #[serde(default)]
    pub promisc: bool,
    /// The interface's MTU (0 leaves it alone).
    #[serde(default)]
    pub mtu: u32,
    /// All-multicast mode on or off.
    #[serde(default)]
    pub allmulti: Option<bool>,
    /// The reference's transmit queue length, which this plugin does not
    /// set: a value is code 2, never ignored.
    #[serde(rename = "txQLen", default)]
    pub tx_qlen: Option<serde_json::Value>,
}

/// `args.cni`: per-attachment overrides of the same keys (`mac` is read
/// by [`requested_mac`]).
#[derive(Debug, Default, Deserialize)]
struct Overrides {
    #[serde(default)]
    sysctl: Option<BTreeMap<String, String>>,
    #[serde(default)]
    promisc: Option<bool>,
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(default)]
    allmulti: Option<bool>,
    #[serde(rename = "txQLen", default)]
    tx_qlen: Option<serde_json::Value>,
}

/// One sysctl to set.
#[derive(Debug, Clone)]
pub(super) struct Sysctl {
    /// The key as configured (`net.ipv4.conf.IFNAME.arp_notify`), which
    /// errors name.
    pub key: String,
    /// The key for `CNI_IFNAME` (see [`cni_net::sysctl_for_ifname`]).
    pub name: String,
    /// The value to write.
    pub value: String,
}

/// What to set, validated.
#[derive(Debug, Clone)]
pub(super) struct Wanted {
    pub sysctl: Vec<Sysctl>,
    pub mac: Option<Mac>,
    pub promisc: bool,
    pub mtu: Option<u32>,
    pub allmulti: Option<bool>,
    pub data_dir: PathBuf,
}

impl Wanted {
    /// Reads and validates the request: code 7 for any bad key or value
    /// (a sysctl outside `net.*` or with a newline in its value, a MAC no
    /// interface can take, an MTU out of range), code 2 for `txQLen`,
    /// before anything changes.
    pub fn read(req: &Req) -> Result<Wanted, Error> {
        let conf = &req.config;
        let overrides: Overrides = match conf.args.as_ref().and_then(|a| a.0.get("cni")) {
            None => Overrides::default(),
            Some(cni) => {
                Overrides::deserialize(cni).map_err(|e| Error::invalid_config("args.cni", e))?
            }
        };
        if let Some(asked) = conf.plugin.tx_qlen.as_ref().or(overrides.tx_qlen.as_ref()) {
            return Err(
                Error::new(Code::UNSUPPORTED_FIELD, "tuning: txQLen is not implemented")
                    .with_details(format!("txQLen: {asked}")),
            );
        }
        let mut sysctl = conf.plugin.sysctl.clone();
        sysctl.extend(overrides.sysctl.unwrap_or_default());
        let sysctl = sysctl
            .into_iter()
            .map(|(key, value)| {
                let name = cni_net::sysctl_for_ifname(&key, &req.ifname)?;
                cni_net::validate_sysctl_value(&key, &value)?;
                Ok(Sysctl { key, name, value })
            })
            .collect::<Result<_, cni_net::NetError>>()?;
        let mac = requested_mac(
            conf,
            &req.args,
            conf.plugin.mac.as_deref(),
            MacPrecedence::Tuning,
        )?;
        if let Some(zero) = mac.as_ref().filter(|m| m.mac == Mac([0; 6])) {
            // The kernel refuses it (EADDRNOTAVAIL), as it refuses a group
            // address, which requested_mac has refused already.
            return Err(Error::invalid_config(
                &format!("MAC address in {}", zero.source),
                format_args!("{}: no interface can take it", zero.mac),
            ));
        }
        let mtu = Some(overrides.mtu.unwrap_or(conf.plugin.mtu)).filter(|m| *m != 0);
        if let Some(mtu) = mtu {
            cni_net::validate_mtu(mtu).map_err(|e| Error::invalid_config("mtu", e))?;
        }
        Ok(Wanted {
            sysctl,
            mac: mac.map(|m| m.mac),
            promisc: overrides.promisc.unwrap_or(conf.plugin.promisc),
            mtu,
            allmulti: overrides.allmulti.or(conf.plugin.allmulti),
            data_dir: data_dir(&conf.plugin),
        })
    }

    /// Whether the link changes, and so a backup is kept.
    pub fn changes_the_link(&self) -> bool {
        self.mac.is_some() || self.mtu.is_some() || self.promisc || self.allmulti.is_some()
    }
}

/// `dataDir`, else the reference's default.
pub(super) fn data_dir(fields: &Fields) -> PathBuf {
    let dir = fields.data_dir.clone();
    dir.filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| DEFAULT_DATA_DIR.into())
}
