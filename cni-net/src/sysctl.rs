//! `net.*` sysctls of a namespace, read and written through `/proc/sys`.
//!
//! Names are written as sysctl(8) writes them: dots separate the parts,
//! and a dot inside a part (an interface named `eth0.100`) is written `/`
//! (`net.ipv4.conf.eth0/100.forwarding`). The kernel names an interface's
//! directory after the interface itself (`/proc/sys/net/ipv4/conf/eth0.100`),
//! and an interface name never holds `/` (Linux `dev_valid_name`), so the
//! two forms map one to one.

use std::io;
use std::path::PathBuf;

use cni_types::IpConfig;

use crate::{validate_ifname, NetError, Netns, Op};

/// The word a configuration writes in a sysctl name for the interface the
/// plugin works on (`net.ipv4.conf.IFNAME.arp_notify`), as the reference
/// `tuning` spells it.
const IFNAME: &str = "IFNAME";

/// The file under `/proc/sys` of the sysctl `name` (`net.ipv4.ip_forward`).
///
/// Only `net.*` names are taken (the rest is not per namespace). Each
/// dot-separated part is letters, digits, `_` and `-`, or `/`, which
/// stands for a dot inside an interface name as in sysctl(8)
/// (`net.ipv4.conf.eth0/100.forwarding`), or any interface name
/// [`validate_ifname`] takes (`a+0`, `a@x`, `aé`); a part that would read
/// as `.` or `..` is refused, so no name leaves `/proc/sys/net`.
pub fn sysctl_path(name: &str) -> Result<PathBuf, NetError> {
    let invalid = |reason| NetError::InvalidSysctl {
        name: name.to_owned(),
        reason,
    };
    let Some(rest) = name.strip_prefix("net.") else {
        return Err(invalid("only net.* names are per network namespace"));
    };
    let mut path = PathBuf::from("/proc/sys/net");
    for part in rest.split('.') {
        if part.is_empty() {
            return Err(invalid("empty part"));
        }
        let file = part.replace('/', ".");
        if file == "." || file == ".." {
            return Err(invalid("a part reads as '.' or '..'"));
        }
        // Any interface name is a part too (`net.ipv4.conf.a+0.arp_notify`).
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/');
        if !part.chars().all(plain) && validate_ifname(&file).is_err() {
            return Err(invalid(
                "parts may hold only letters, digits, '_', '-' and '/', or be an interface name",
            ));
        }
        path.push(file);
    }
    Ok(path)
}

/// The sysctl name `key` with its first `IFNAME` standing for the
/// interface `ifname`, checked as [`sysctl_path`] checks names: a dot in
/// `ifname` becomes `/`, so `net.ipv4.conf.IFNAME.arp_notify` for
/// `eth0.100` is `net.ipv4.conf.eth0/100.arp_notify`, whose file is
/// `/proc/sys/net/ipv4/conf/eth0.100/arp_notify`. A `key` without
/// `IFNAME` is only checked.
///
/// An invalid `ifname` is [`NetError::InvalidName`] (see
/// [`validate_ifname`]); an invalid `key` is [`NetError::InvalidSysctl`]
/// naming `key` as given. Both are code 7.
///
/// ```
/// use cni_net::sysctl_for_ifname;
///
/// let name = sysctl_for_ifname("net.ipv4.conf.IFNAME.arp_notify", "eth0.100").unwrap();
/// assert_eq!(name, "net.ipv4.conf.eth0/100.arp_notify");
/// assert!(sysctl_for_ifname("kernel.IFNAME", "eth0").is_err());
/// ```
///
/// Go: `getSysctlFilename` in plugins `plugins/meta/tuning`, which puts
/// the interface name into the path after turning the key's dots into
/// slashes, with the same result.
pub fn sysctl_for_ifname(key: &str, ifname: &str) -> Result<String, NetError> {
    validate_ifname(ifname)?;
    let name = key.replacen(IFNAME, &ifname.replace('.', "/"), 1);
    match sysctl_path(&name) {
        Ok(_) => Ok(name),
        Err(NetError::InvalidSysctl { reason, .. }) => Err(NetError::InvalidSysctl {
            name: key.to_owned(),
            reason,
        }),
        Err(other) => Err(other),
    }
}

/// Checks a value to write to the sysctl `name`: a newline or NUL is
/// refused ([`NetError::InvalidSysctlValue`], code 7). The kernel stops
/// reading at either, so `"1\n0"` would set 1 and a CHECK of `"1\n0"`
/// could never pass.
pub fn validate_sysctl_value(name: &str, value: &str) -> Result<(), NetError> {
    if value.contains(['\n', '\0']) {
        return Err(NetError::InvalidSysctlValue {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(())
}

impl Netns {
    /// The value of the sysctl `name` in this namespace, without its
    /// trailing newline.
    ///
    /// Go: `sysctl.Sysctl(name)` (plugins `pkg/utils/sysctl`), run inside
    /// the namespace.
    pub fn sysctl(&self, name: &str) -> Result<String, NetError> {
        let path = sysctl_path(name)?;
        let text = self.on_thread(|| {
            std::fs::read_to_string(&path).map_err(NetError::kernel(Op::ReadSysctl, name))
        })?;
        Ok(text.trim_end_matches('\n').to_owned())
    }

    /// Whether this namespace has the sysctl `name` (its file exists,
    /// readable or not), so a plugin can refuse a name before it writes
    /// anything.
    pub fn has_sysctl(&self, name: &str) -> Result<bool, NetError> {
        let path = sysctl_path(name)?;
        self.on_thread(|| match std::fs::metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(NetError::kernel(Op::ReadSysctl, name)(e)),
        })
    }

    /// Sets the sysctl `name` in this namespace; a value
    /// [`validate_sysctl_value`] refuses is not written.
    ///
    /// Go: `sysctl.Sysctl(name, value)`, run inside the namespace.
    pub fn set_sysctl(&self, name: &str, value: &str) -> Result<(), NetError> {
        let path = sysctl_path(name)?;
        validate_sysctl_value(name, value)?;
        self.on_thread(|| {
            std::fs::write(&path, value).map_err(NetError::kernel(
                Op::WriteSysctl,
                format!("{name} = {value:?}"),
            ))
        })
    }

    /// Sets each sysctl of `settings` in this namespace, entering it once
    /// for all of them (one thread, where [`Netns::set_sysctl`] per name
    /// costs one each): one result per setting, in the order given, or
    /// the error of entering the namespace. A failed setting does not
    /// stop the rest, for settings that are each best effort (IPv6 may be
    /// off in a namespace, IPv4's settings still apply); a caller that
    /// must stop at the first failure calls [`Netns::set_sysctl`] per
    /// name.
    ///
    /// ```no_run
    /// # fn f(netns: &cni_net::Netns) -> Result<(), cni_net::NetError> {
    /// let results = netns.set_sysctls(&[
    ///     ("net.ipv6.conf.eth0.accept_dad", "0"),
    ///     ("net.ipv4.conf.eth0.arp_notify", "1"),
    /// ])?;
    /// for failure in results.into_iter().filter_map(Result::err) {
    ///     eprintln!("{failure}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn set_sysctls<N, V>(
        &self,
        settings: &[(N, V)],
    ) -> Result<Vec<Result<(), NetError>>, NetError>
    where
        N: AsRef<str> + Sync,
        V: AsRef<str> + Sync,
    {
        let checked: Vec<Result<PathBuf, NetError>> = settings
            .iter()
            .map(|(name, value)| {
                let path = sysctl_path(name.as_ref())?;
                validate_sysctl_value(name.as_ref(), value.as_ref())?;
                Ok(path)
            })
            .collect();
        self.on_thread(|| {
            Ok(checked
                .into_iter()
                .zip(settings)
                .map(|(path, (name, value))| {
                    let (name, value) = (name.as_ref(), value.as_ref());
                    std::fs::write(path?, value).map_err(NetError::kernel(
                        Op::WriteSysctl,
                        format!("{name} = {value:?}"),
                    ))
                })
                .collect())
        })
    }

    /// Enables IP forwarding in this namespace for each family `ips`
    /// holds (`net.ipv4.ip_forward`, `net.ipv6.conf.all.forwarding`),
    /// writing only when it is not already on.
    ///
    /// Go: `ip.EnableForward` (plugins `pkg/ip`).
    pub fn enable_forwarding(&self, ips: &[IpConfig]) -> Result<(), NetError> {
        let families = [
            ("net.ipv4.ip_forward", true),
            ("net.ipv6.conf.all.forwarding", false),
        ];
        for (name, v4) in families {
            if ips.iter().any(|ip| ip.address.is_ipv4() == v4) && self.sysctl(name)? != "1" {
                self.set_sysctl(name, "1")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_names_map_to_proc_sys_and_slashes_stand_for_dots() {
        assert_eq!(
            sysctl_path("net.ipv4.conf.eth0/100.forwarding").unwrap(),
            PathBuf::from("/proc/sys/net/ipv4/conf/eth0.100/forwarding")
        );
    }

    #[test]
    fn any_interface_name_the_kernel_takes_is_a_part() {
        assert_eq!(
            sysctl_path("net.ipv4.conf.a+0.arp_notify").unwrap(),
            PathBuf::from("/proc/sys/net/ipv4/conf/a+0/arp_notify")
        );
        assert_eq!(
            sysctl_path("net.ipv6.conf.a\u{e9}/1.accept_dad").unwrap(),
            PathBuf::from("/proc/sys/net/ipv6/conf/a\u{e9}.1/accept_dad")
        );
    }

    #[test]
    fn names_that_could_escape_or_are_not_per_namespace_are_code_7() {
        for bad in [
            "kernel.hostname",
            "net",
            "net..ipv4",
            "net.ipv4.conf.//.forwarding",
            "net.ipv4.conf./.forwarding",
            "net.ipv4 .ip_forward",
            "net.ipv4.ip_forward\n",
        ] {
            let err = sysctl_path(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
            let cni = cni_types::Error::from(err);
            assert_eq!(cni.code, cni_types::Code::INVALID_NETWORK_CONFIG, "{bad:?}");
        }
    }

    #[test]
    fn ifname_in_a_key_takes_any_name_the_kernel_takes() {
        for (ifname, name, file) in [
            ("eth0", "net.ipv4.conf.eth0.arp_notify", "eth0"),
            ("eth0.100", "net.ipv4.conf.eth0/100.arp_notify", "eth0.100"),
            ("a+0", "net.ipv4.conf.a+0.arp_notify", "a+0"),
            ("a@x", "net.ipv4.conf.a@x.arp_notify", "a@x"),
            ("a\u{e9}", "net.ipv4.conf.a\u{e9}.arp_notify", "a\u{e9}"),
            ("..a", "net.ipv4.conf.//a.arp_notify", "..a"),
        ] {
            let got = sysctl_for_ifname("net.ipv4.conf.IFNAME.arp_notify", ifname).unwrap();
            assert_eq!(got, name, "{ifname:?}");
            assert_eq!(
                sysctl_path(&got).unwrap(),
                PathBuf::from(format!("/proc/sys/net/ipv4/conf/{file}/arp_notify"))
            );
        }
        assert_eq!(
            sysctl_for_ifname("net.ipv4.ip_forward", "eth0").unwrap(),
            "net.ipv4.ip_forward"
        );
    }

    #[test]
    fn ifname_in_a_key_refuses_what_is_no_interface_name_and_names_the_key() {
        for ifname in ["", ".", "..", "a/b", "a:b", "a b", "sixteen-bytes-ab"] {
            let err = sysctl_for_ifname("net.ipv4.conf.IFNAME.x", ifname).unwrap_err();
            assert!(
                matches!(err, NetError::InvalidName { .. }),
                "{ifname:?}: {err}"
            );
        }
        let err = sysctl_for_ifname("kernel.IFNAME.x", "eth0").unwrap_err();
        assert!(err.to_string().contains("\"kernel.IFNAME.x\""), "{err}");
        let cni = cni_types::Error::from(err);
        assert_eq!(cni.code, cni_types::Code::INVALID_NETWORK_CONFIG);
    }

    #[test]
    fn values_with_a_newline_or_nul_are_code_7_naming_the_sysctl() {
        validate_sysctl_value("net.ipv4.ip_local_port_range", "1024 65000").unwrap();
        for bad in ["1\n", "1\n0", "1\0"] {
            let err = validate_sysctl_value("net.ipv4.ip_forward", bad).unwrap_err();
            assert!(err.to_string().contains("net.ipv4.ip_forward"), "{err}");
            let cni = cni_types::Error::from(err);
            assert_eq!(cni.code, cni_types::Code::INVALID_NETWORK_CONFIG, "{bad:?}");
        }
    }
}
