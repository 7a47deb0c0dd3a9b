//! `cni_netfilter::firewalld` against a real firewalld on a private bus
//! (`tests::firewalld::PrivateFirewalld`): sources added to a zone, found,
//! removed; the errors a plugin answers with when the zone or firewalld is
//! missing.

use cni_netfilter::firewalld::{Firewalld, FirewalldError};
use cni_types::{Code, Error};
use tests::firewalld::PrivateFirewalld;

/// Connects to the private bus, where firewalld must be running.
fn connect(fw: &PrivateFirewalld) -> Firewalld {
    Firewalld::connect(fw.address())
        .expect("the private bus answers")
        .expect("firewalld owns its name")
}

/// One step of a scenario on one connection, and what it must give.
enum Step {
    Add(&'static str, &'static str),
    Remove(&'static str, &'static str),
    Query(&'static str, &'static str, bool),
    /// The ruleset in firewalld's namespace mentions (or not) this text.
    Ruleset(&'static str, bool),
    /// The host's ruleset does not mention this text: firewalld stays in
    /// its namespace.
    NotOnHost(&'static str),
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_source_added_to_a_zone_is_found_there_until_removed() {
    use Step::*;
    let fw = PrivateFirewalld::start();
    let conn = connect(&fw);
    let steps = [
        Query("trusted", "10.231.0.5/32", false),
        Ruleset("10.231.0.5", false),
        Add("trusted", "10.231.0.5/32"),
        Query("trusted", "10.231.0.5/32", true),
        Ruleset("10.231.0.5", true),
        NotOnHost("10.231.0.5"),
        // Adding again is success (ZONE_ALREADY_SET), as in the reference.
        Add("trusted", "10.231.0.5/32"),
        Add("trusted", "fd00:231::5/128"),
        Query("trusted", "fd00:231::5/128", true),
        Query("public", "10.231.0.5/32", false),
        Remove("trusted", "10.231.0.5/32"),
        Query("trusted", "10.231.0.5/32", false),
        Ruleset("10.231.0.5", false),
        // Removing what is not there is success (UNKNOWN_SOURCE).
        Remove("trusted", "10.231.0.5/32"),
        Remove("trusted", "fd00:231::5/128"),
        Query("trusted", "fd00:231::5/128", false),
    ];
    for (i, step) in steps.iter().enumerate() {
        let at = format!("step {i}");
        match *step {
            Add(zone, source) => conn.add_source(zone, source).expect(&at),
            Remove(zone, source) => conn.remove_source(zone, source).expect(&at),
            Query(zone, source, want) => {
                assert_eq!(conn.query_source(zone, source).expect(&at), want, "{at}")
            }
            NotOnHost(text) => {
                let host = std::process::Command::new("nft")
                    .args(["list", "ruleset"])
                    .output()
                    .expect("nft");
                assert!(host.status.success(), "{at}: {host:?}");
                assert!(
                    !String::from_utf8_lossy(&host.stdout).contains(text),
                    "{at}"
                );
            }
            Ruleset(text, want) => {
                assert_eq!(fw.ruleset().contains(text), want, "{at}:\n{}", fw.ruleset())
            }
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_zone_firewalld_does_not_know_is_a_configuration_error_naming_it() {
    let fw = PrivateFirewalld::start();
    let conn = connect(&fw);
    let zone = format!("nosuch{}", std::process::id());
    for err in [
        conn.add_source(&zone, "10.231.0.6/32").unwrap_err(),
        conn.query_source(&zone, "10.231.0.6/32").unwrap_err(),
    ] {
        assert_eq!(err.firewalld_code(), Some("INVALID_ZONE"), "{err}");
        let cni = Error::from(err);
        assert_eq!(cni.code, Code::INVALID_NETWORK_CONFIG, "{cni:?}");
        assert!(cni.msg.contains(&zone), "{cni:?}");
    }
    // A source bound to another zone is refused, as in the reference.
    conn.add_source("public", "10.231.0.7/32").unwrap();
    let err = conn.add_source("trusted", "10.231.0.7/32").unwrap_err();
    assert_eq!(err.firewalld_code(), Some("ZONE_CONFLICT"), "{err}");
    assert_eq!(Error::from(err).code, Code::INTERNAL);
    conn.remove_source("public", "10.231.0.7/32").unwrap();
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bus_where_firewalld_does_not_run_gives_no_connection() {
    let bus = PrivateFirewalld::bus_only();
    let conn = Firewalld::connect(bus.address()).expect("the private bus answers");
    assert!(conn.is_none());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn firewalld_stopping_between_calls_asks_to_try_again_later() {
    let mut fw = PrivateFirewalld::start();
    let conn = connect(&fw);
    fw.stop_firewalld();
    let err = conn.add_source("trusted", "10.231.0.8/32").unwrap_err();
    assert!(matches!(err, FirewalldError::NotRunning { .. }), "{err:?}");
    let cni = Error::from(err);
    assert_eq!(cni.code, Code::TRY_AGAIN_LATER);
    assert!(cni.msg.contains("firewalld is not running"), "{cni:?}");
}

#[test]
fn an_unreachable_bus_is_an_error_naming_its_address() {
    let dir = tempfile::tempdir().unwrap();
    let address = format!("unix:path={}/no-bus-here", dir.path().display());
    let err = Firewalld::connect(&address).unwrap_err();
    assert!(matches!(err, FirewalldError::Unreachable { .. }), "{err:?}");
    let cni = Error::from(err);
    assert_eq!(cni.code, Code::TRY_AGAIN_LATER);
    assert!(cni.msg.contains(&address), "{cni:?}");
}
