//! The DNS of a result, from `resolvConf`.

use std::path::Path;

use cni_types::{Dns, Error};

/// The DNS settings of a resolv.conf, read as host-local reads them:
/// `nameserver`, `domain`, `search` and `options` lines; comments (`#`,
/// `;`) and other lines skipped. A missing file is code 5 naming it.
///
/// Go: `parseResolvConf` in host-local's `dns.go`.
pub fn read_resolv_conf(path: &Path) -> Result<Dns, Error> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io("read ipam.resolvConf", path, e))?;
    Ok(parse_resolv_conf(&text))
}

/// The DNS settings of resolv.conf text.
///
/// ```
/// let dns = cni_ipam::dns::parse_resolv_conf("# c\nnameserver 10.0.0.53\nsearch a b\n");
/// assert_eq!(dns.nameservers, ["10.0.0.53"]);
/// assert_eq!(dns.search, ["a", "b"]);
/// ```
pub fn parse_resolv_conf(text: &str) -> Dns {
    let mut dns = Dns::default();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(key), rest) = (fields.next(), fields.collect::<Vec<_>>()) else {
            continue;
        };
        let Some(first) = rest.first() else {
            continue;
        };
        match key {
            "nameserver" => dns.nameservers.push((*first).to_owned()),
            "domain" => dns.domain = (*first).to_owned(),
            "search" => dns.search.extend(rest.iter().map(|s| (*s).to_owned())),
            "options" => dns.options.extend(rest.iter().map(|s| (*s).to_owned())),
            _ => {}
        }
    }
    dns
}
