//! The `ipam` section, read typed by the IPAM plugin it names.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Extra, NetConf};
use crate::raw_de::RawObject;
use crate::Error;

/// The `ipam` section: "`type` (string): Refers to the filename of the IPAM
/// plugin executable", and the IPAM plugin's own keys.
///
/// Go: `types.IPAM`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ipam {
    /// The IPAM plugin's binary name.
    #[serde(rename = "type", default)]
    pub ipam_type: String,
    /// Every other key, for the IPAM plugin.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Ipam {
    /// The `ipam` section read as the IPAM plugin's own type `T`: `type`
    /// and every other key, numbers as written (as [`NetConf`] reads a
    /// plugin's fields). Usually reached through [`NetConf::ipam_as`].
    ///
    /// [`NetConf`] reads `ipam` as a standard field, so a plugin's own
    /// config struct never sees it; this is the one way to read it typed.
    /// A key that does not fit is code 7 (invalid network configuration)
    /// naming its path: `invalid ipam.ranges[0].subnet`, with serde's
    /// reason as details.
    ///
    /// Go: an IPAM plugin unmarshals the whole configuration into
    /// `struct { IPAM *MyConfig `json:"ipam"` }` (host-local's
    /// `allocator.LoadIPAMConfig`).
    ///
    /// ```
    /// use cni_types::{Code, NetConf};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Static {
    ///     address: cni_types::IpNetwork,
    /// }
    ///
    /// let conf: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n",
    ///     "ipam": {"type": "static", "address": "10.1.0.5/16"}}"#).unwrap();
    /// let ipam: Static = conf.ipam.as_ref().unwrap().parse().unwrap();
    /// assert_eq!(ipam.address.to_string(), "10.1.0.5/16");
    ///
    /// let bad: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n",
    ///     "ipam": {"type": "static", "address": "10.1.0.300/16"}}"#).unwrap();
    /// let err = bad.ipam.as_ref().unwrap().parse::<Static>().err().unwrap();
    /// assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
    /// assert_eq!(err.msg, "invalid ipam.address");
    /// ```
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        // Read from its text, as NetConf reads a plugin's fields: numbers
        // beyond 64 bits reach `T` as written.
        let text = serde_json::to_string(self).map_err(|e| Error::invalid_config("ipam", e))?;
        let raw = RawObject::parse(&text).map_err(|e| Error::invalid_config("ipam", e))?;
        serde_path_to_error::deserialize(raw).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." || path.is_empty() {
                "ipam".to_owned()
            } else {
                format!("ipam.{path}")
            };
            Error::invalid_config(&path, e.inner())
        })
    }
}

impl<T> NetConf<T> {
    /// The IPAM plugin a delegating plugin runs: `ipam.type`, or code 7
    /// naming the field when the section or the name is missing.
    pub fn ipam_type(&self) -> Result<&str, Error> {
        self.ipam
            .as_ref()
            .map(|i| i.ipam_type.as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Error::invalid_config("ipam.type", "the ipam section must name an IPAM plugin")
            })
    }

    /// `ipam.type` when the configuration delegates addresses at all (an
    /// `ipam` section naming a plugin); `None` for a plugin whose IPAM is
    /// optional and not configured.
    ///
    /// ```
    /// use cni_types::NetConf;
    ///
    /// let conf: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n",
    ///     "ipam": {"type": "host-local"}}"#).unwrap();
    /// assert_eq!(conf.ipam_plugin(), Some("host-local"));
    /// let empty: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n", "ipam": {}}"#).unwrap();
    /// assert_eq!(empty.ipam_plugin(), None);
    /// ```
    pub fn ipam_plugin(&self) -> Option<&str> {
        self.ipam
            .as_ref()
            .map(|i| i.ipam_type.as_str())
            .filter(|t| !t.is_empty())
    }

    /// The `ipam` section as the IPAM plugin's own type `T`
    /// ([`Ipam::parse`]); code 7 naming `ipam` when there is none.
    ///
    /// ```
    /// use cni_types::NetConf;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Pool {
    ///     #[serde(rename = "type")]
    ///     plugin: String,
    ///     size: u32,
    /// }
    ///
    /// let conf: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n",
    ///     "ipam": {"type": "pool", "size": 8}}"#).unwrap();
    /// let pool: Pool = conf.ipam_as().unwrap();
    /// assert_eq!((pool.plugin.as_str(), pool.size), ("pool", 8));
    ///
    /// let none: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n"}"#).unwrap();
    /// assert_eq!(none.ipam_as::<Pool>().err().unwrap().msg, "invalid ipam");
    /// ```
    pub fn ipam_as<I: DeserializeOwned>(&self) -> Result<I, Error> {
        self.ipam
            .as_ref()
            .ok_or_else(|| Error::invalid_config("ipam", "the configuration has no ipam section"))?
            .parse()
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use crate::{Code, Extra, NetConf};

    #[test]
    fn an_ipam_section_is_read_typed_with_numbers_as_written_and_errors_naming_the_path() {
        #[derive(Debug, Deserialize)]
        struct Range {
            subnet: crate::IpNetwork,
        }
        #[derive(Debug, Deserialize)]
        struct Section {
            ranges: Vec<Vec<Range>>,
            #[serde(flatten)]
            rest: crate::UnknownFields,
        }
        let conf = |ranges: &str| {
            let text = format!(
                r#"{{"cniVersion": "1.1.0", "name": "n", "type": "bridge",
                   "ipam": {{"type": "x", "ranges": {ranges}, "big": 18446744073709551617}}}}"#
            );
            NetConf::<Extra>::from_json(text.as_bytes()).unwrap()
        };
        let ok: Section = conf(r#"[[{"subnet": "10.1.0.0/16"}]]"#).ipam_as().unwrap();
        assert_eq!(ok.ranges[0][0].subnet.to_string(), "10.1.0.0/16");
        let rest = serde_json::to_string(&ok.rest).unwrap();
        assert!(rest.contains("18446744073709551617"), "{rest}");
        assert!(rest.contains(r#""type":"x""#), "{rest}");

        let err = conf(r#"[[{"subnet": "10.1.0.0/16"}, {"subnet": "nope"}]]"#)
            .ipam_as::<Section>()
            .unwrap_err();
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
        assert_eq!(err.msg, "invalid ipam.ranges[0][1].subnet");
    }
}
