//! DNS settings, in results and configurations.

use serde::{Deserialize, Serialize};

/// DNS settings: "`nameservers` (list of strings): list of a priority-ordered
/// list of DNS nameservers that this network is aware of. Each entry in the
/// list is a string containing either an IPv4 or an IPv6 address. `domain`
/// (string): the local domain used for short hostname lookups. `search`
/// (list of strings): list of priority ordered search domains for short
/// hostname lookups. `options` (list of strings): list of options that can be
/// passed to the resolver." (spec, section 5)
///
/// Nameservers stay strings, as in the reference: a resolver entry may carry
/// an IPv6 zone (`fe80::1%eth0`) that an address type cannot hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dns {
    /// Priority-ordered nameserver addresses.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub nameservers: Vec<String>,
    /// The local domain for short hostname lookups.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub domain: String,
    /// Priority-ordered search domains.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub search: Vec<String>,
    /// Resolver options.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub options: Vec<String>,
}

impl Dns {
    /// Whether nothing is set; an empty `dns` is omitted from output.
    pub fn is_empty(&self) -> bool {
        self.nameservers.is_empty()
            && self.domain.is_empty()
            && self.search.is_empty()
            && self.options.is_empty()
    }
}
