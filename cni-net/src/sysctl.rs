//! `net.*` sysctls of a namespace, read and written through `/proc/sys`.

use std::path::PathBuf;

use cni_types::IpConfig;

use crate::{NetError, Netns, Op};

/// The file under `/proc/sys` of the sysctl `name` (`net.ipv4.ip_forward`).
///
/// Only `net.*` names are taken (the rest is not per namespace). Each
/// dot-separated part is letters, digits, `_` and `-`, or `/`, which
/// stands for a dot inside an interface name as in sysctl(8)
/// (`net.ipv4.conf.eth0/100.forwarding`), or any interface name
/// [`validate_ifname`](crate::validate_ifname) takes; a part that would
/// read as `.` or `..` is refused, so no name leaves `/proc/sys/net`.
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
        if !part.chars().all(plain) && crate::validate_ifname(&file).is_err() {
            return Err(invalid(
                "parts may hold only letters, digits, '_', '-' and '/', or be an interface name",
            ));
        }
        path.push(file);
    }
    Ok(path)
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

    /// Sets the sysctl `name` in this namespace.
    ///
    /// Go: `sysctl.Sysctl(name, value)`, run inside the namespace.
    pub fn set_sysctl(&self, name: &str, value: &str) -> Result<(), NetError> {
        let path = sysctl_path(name)?;
        self.on_thread(|| {
            std::fs::write(&path, value).map_err(NetError::kernel(
                Op::WriteSysctl,
                format!("{name} = {value:?}"),
            ))
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
}
