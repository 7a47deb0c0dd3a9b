//! `net.*` sysctls per namespace. As root, in namespaces the tests create
//! and remove.

use cni_net::testing::TempNetns;
use cni_net::{sysctl_for_ifname, Netns};
use cni_types::{Code, IpConfig};

fn temp(tag: &str) -> TempNetns {
    TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_sysctl_written_in_one_namespace_is_not_seen_in_another() {
    let (a, b) = (temp("sysa"), temp("sysb"));
    let name = "net.ipv4.conf.all.arp_ignore";
    let before = b.sysctl(name).unwrap();
    let other = if before == "2" { "1" } else { "2" };
    a.set_sysctl(name, other).unwrap();
    assert_eq!(a.sysctl(name).unwrap(), other);
    assert_eq!(b.sysctl(name).unwrap(), before, "b is untouched");
    let lo = "net.ipv4.conf.lo.arp_ignore";
    a.set_sysctl(lo, "1").unwrap();
    assert_eq!(a.sysctl(lo).unwrap(), "1");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn forwarding_is_enabled_for_the_families_of_the_addresses() {
    let tmp = temp("fwd");
    // A new namespace may inherit IPv4 forwarding from the host's
    // (net.core.devconf_inherit_init_net): start from off.
    tmp.set_sysctl("net.ipv4.ip_forward", "0").unwrap();
    tmp.set_sysctl("net.ipv6.conf.all.forwarding", "0").unwrap();
    let v4 = IpConfig::new("10.79.0.2/24".parse().unwrap(), None);
    tmp.enable_forwarding(&[v4]).unwrap();
    assert_eq!(tmp.sysctl("net.ipv4.ip_forward").unwrap(), "1");
    assert_eq!(tmp.sysctl("net.ipv6.conf.all.forwarding").unwrap(), "0");
    let v6 = IpConfig::new("fd00:7b::2/64".parse().unwrap(), None);
    tmp.enable_forwarding(&[v6]).unwrap();
    assert_eq!(tmp.sysctl("net.ipv6.conf.all.forwarding").unwrap(), "1");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn invalid_or_unknown_names_are_errors_naming_them() {
    let host = Netns::current().unwrap();
    let err = host
        .set_sysctl("net.ipv4.conf.../../../kernel.hostname", "x")
        .unwrap_err();
    assert_eq!(
        cni_types::Error::from(err).code,
        Code::INVALID_NETWORK_CONFIG
    );
    let err = host.sysctl("kernel.hostname").unwrap_err();
    assert!(err.to_string().contains("\"kernel.hostname\""), "{err}");
    let err = temp("sysmiss")
        .sysctl("net.ipv4.conf.eth9.forwarding")
        .unwrap_err();
    assert_eq!(err.errno(), Some(2), "ENOENT: {err}");
    assert_eq!(
        err.to_string(),
        "failed to read sysctl net.ipv4.conf.eth9.forwarding"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_value_with_a_newline_is_not_written_and_absent_sysctls_are_told_apart() {
    let tmp = temp("sysval");
    let name = "net.ipv4.conf.lo.arp_notify";
    let before = tmp.sysctl(name).unwrap();
    let err = tmp.set_sysctl(name, "1\n0").unwrap_err();
    assert_eq!(
        cni_types::Error::from(err).code,
        Code::INVALID_NETWORK_CONFIG
    );
    assert_eq!(tmp.sysctl(name).unwrap(), before);
    assert!(tmp.has_sysctl(name).unwrap());
    assert!(!tmp.has_sysctl("net.ipv4.conf.eth9.arp_notify").unwrap());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_interface_with_a_dot_in_its_name_is_reached_through_ifname() {
    let tmp = temp("sysdot");
    tmp.add_veth("e.1", "peer0", None).unwrap();
    let name = sysctl_for_ifname("net.ipv4.conf.IFNAME.arp_notify", "e.1").unwrap();
    tmp.set_sysctl(&name, "1").unwrap();
    assert_eq!(tmp.sysctl(&name).unwrap(), "1");
    assert!(!tmp.has_sysctl("net.ipv4.conf.e.1.arp_notify").unwrap());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn settings_written_together_each_answer_and_a_failure_does_not_stop_the_rest() {
    let tmp = temp("sysmany");
    let (notify, ignore) = ("net.ipv4.conf.lo.arp_notify", "net.ipv4.conf.lo.arp_ignore");
    tmp.set_sysctl(notify, "0").unwrap();
    tmp.set_sysctl(ignore, "0").unwrap();
    let results = tmp
        .set_sysctls(&[
            (notify, "1"),
            ("net.ipv4.conf.eth9.arp_notify", "1"),
            ("net.ipv4.conf.../../../kernel.hostname", "x"),
            (ignore, "2"),
        ])
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(results[0].is_ok() && results[3].is_ok(), "{results:?}");
    let absent = results[1].as_ref().unwrap_err();
    assert_eq!(absent.errno(), Some(2), "ENOENT: {absent}");
    assert!(absent.to_string().contains("eth9"), "{absent}");
    let refused = results[2].as_ref().unwrap_err();
    assert!(refused.to_string().contains("kernel.hostname"), "{refused}");
    assert_eq!(tmp.sysctl(notify).unwrap(), "1");
    assert_eq!(tmp.sysctl(ignore).unwrap(), "2");
}
