use cni_net::testing::TempNetns;
use cni_net::{Dad, Netlink, TableRoute, MAIN_TABLE};
use cni_skel::{Outcome, TestRequest};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

/// A namespace with `eth0` (a veth end, up) holding 10.219.0.5/24 and a
/// default route through 10.219.0.1, as an interface plugin leaves it.
fn attached() -> TempNetns {
    let ns = TempNetns::new("sbr").unwrap();
    let link = ns.add_veth("eth0", "peer0", None).unwrap();
    ns.run(|nl| {
        nl.add_address(link.index, "10.219.0.5/24".parse().unwrap(), Dad::Skip)?;
        nl.set_up(link.index)?;
        let peer = nl.link("peer0")?;
        nl.set_up(peer.index)?;
        let default = cni_types::Route::new(
            "0.0.0.0/0".parse().unwrap(),
            Some("10.219.0.1".parse().unwrap()),
        );
        nl.add_route(link.index, &default)
    })
    .unwrap();
    ns
}

fn conf(ns: &TempNetns, fields: Value) -> String {
    let mut conf = json!({"cniVersion": "1.0.0", "name": "sbr", "type": "sbr",
        "prevResult": {"cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "sandbox": ns.path().display().to_string()}],
            "ips": [{"interface": 0, "address": "10.219.0.5/24", "gateway": "10.219.0.1"}]}});
    conf.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    conf.to_string()
}

fn run(command: &str, ns: &TempNetns, conf: &str) -> Outcome {
    ns.request(command, "eth0")
        .stdin(conf)
        .run(&Sbr, &PluginInfo::all())
}

/// `(destination, gateway)` of eth0's routes in `table`.
fn routes(nl: &mut Netlink, table: u32) -> Vec<(String, Option<String>)> {
    let link = nl.link("eth0").unwrap();
    let mut out: Vec<(String, Option<String>)> = nl
        .table_routes(link.index, table)
        .unwrap()
        .iter()
        .filter(|r| r.dst.is_ipv4())
        .map(|r: &TableRoute| (r.dst.to_string(), r.gw.map(|g| g.to_string())))
        .collect();
    out.sort();
    out
}

fn rules(nl: &mut Netlink) -> Vec<(String, u32)> {
    nl.rules()
        .unwrap()
        .iter()
        .filter_map(|r| r.src.map(|s| (s.to_string(), r.table)))
        .collect()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn each_address_gets_a_table_of_its_own_chosen_by_source() {
    let ns = attached();
    let conf = conf(&ns, json!({}));
    let out = run("ADD", &ns, &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.json()["ips"][0]["address"], "10.219.0.5/24");
    let mut nl = ns.socket().unwrap();
    assert_eq!(rules(&mut nl), vec![("10.219.0.5/32".to_owned(), 100)]);
    assert_eq!(
        routes(&mut nl, 100),
        vec![
            ("0.0.0.0/0".to_owned(), Some("10.219.0.1".to_owned())),
            ("10.219.0.0/24".to_owned(), None)
        ]
    );
    assert_eq!(routes(&mut nl, MAIN_TABLE), vec![]);
    assert_eq!(run("CHECK", &ns, &conf).exit_code, 0);

    assert_eq!(run("DEL", &ns, &conf).exit_code, 0);
    assert_eq!(rules(&mut nl), vec![]);
    let check = run("CHECK", &ns, &conf).error().unwrap();
    assert!(
        check.msg.contains("no rule from 10.219.0.5/32"),
        "{check:?}"
    );
    assert_eq!(run("DEL", &ns, &conf).exit_code, 0);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_configured_table_gets_only_the_rules() {
    let ns = attached();
    let conf = conf(&ns, json!({"table": 500}));
    assert_eq!(run("ADD", &ns, &conf).exit_code, 0);
    let mut nl = ns.socket().unwrap();
    assert_eq!(rules(&mut nl), vec![("10.219.0.5/32".to_owned(), 500)]);
    assert_eq!(routes(&mut nl, 500), vec![]);
    assert_eq!(routes(&mut nl, MAIN_TABLE).len(), 2);
    assert_eq!(run("DEL", &ns, &conf).exit_code, 0);
    assert_eq!(rules(&mut nl), vec![]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn source_hints_keep_the_subnet_route_in_main_and_a_static_gateway_is_used() {
    let ns = attached();
    // Without a default route of its own: one in the main table would be
    // copied over the static gateway's, as the reference copies it.
    ns.run(|nl| {
        let link = nl.link("eth0")?;
        let default = cni_types::Route::new(
            "0.0.0.0/0".parse().unwrap(),
            Some("10.219.0.1".parse().unwrap()),
        );
        nl.delete_route(link.index, &default)
    })
    .unwrap();
    let conf = conf(
        &ns,
        json!({"addSourceHints": true, "gateways": ["10.219.0.254", "fd00::1"]}),
    );
    assert_eq!(run("ADD", &ns, &conf).exit_code, 0);
    let mut nl = ns.socket().unwrap();
    assert_eq!(
        routes(&mut nl, MAIN_TABLE),
        vec![("10.219.0.0/24".to_owned(), None)]
    );
    let link = nl.link("eth0").unwrap();
    let main = nl.table_routes(link.index, MAIN_TABLE).unwrap();
    assert_eq!(main[0].src, Some("10.219.0.5".parse().unwrap()));
    assert!(
        routes(&mut nl, 100).contains(&("0.0.0.0/0".to_owned(), Some("10.219.0.254".to_owned())))
    );
    assert_eq!(run("DEL", &ns, &conf).exit_code, 0);
}

#[test]
fn the_kernels_default_main_and_local_tables_are_refused_naming_table() {
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.219.0.5/24"}]});
    for (table, name) in [(253, "default"), (254, "main"), (255, "local")] {
        let fields = json!({"table": table, "prevResult": prev});
        let mut conf = json!({"cniVersion": "1.0.0", "name": "sbr", "type": "sbr"});
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let err = TestRequest::add()
            .stdin(conf.to_string())
            .run(&Sbr, &PluginInfo::all())
            .error()
            .unwrap_or_else(|| panic!("table {table} accepted"));
        assert_eq!(
            (err.code.0, err.msg.as_str()),
            (7, "invalid table"),
            "{err:?}"
        );
        assert!(err.details.contains(name), "{err:?}");
    }
}

#[test]
fn bad_configuration_is_code_7_naming_the_field() {
    let prev = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.219.0.5/24"}]});
    let cases = [
        (json!({"table": -1, "prevResult": prev}), "invalid table"),
        (json!({"table": 0, "prevResult": prev}), "invalid table"),
        (
            json!({"gateways": ["1.1.1.1", "::1", "2.2.2.2"], "prevResult": prev}),
            "invalid gateways",
        ),
        (
            json!({"gateways": ["1.1.1.x"], "prevResult": prev}),
            "invalid gateways",
        ),
        (
            json!({"gateways": ["1.1.1.1", "2.2.2.2"], "prevResult": prev}),
            "invalid gateways",
        ),
        (json!({}), "This plugin must be called as chained plugin"),
        (
            json!({"prevResult": {"cniVersion": "1.0.0"}}),
            "invalid prevResult",
        ),
    ];
    for (fields, msg) in cases {
        let mut conf = json!({"cniVersion": "1.0.0", "name": "sbr", "type": "sbr"});
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        crate::test_support::assert_add_refused(&Sbr, conf.to_string(), &fields, msg);
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn with_a_table_del_finds_rules_by_prev_result_and_a_repeated_add_succeeds() {
    let ns = TempNetns::new("sbr").unwrap();
    // An interface without the address prevResult gives it (a runtime's
    // test double, or an address already removed).
    ns.add_veth("eth0", "peer0", None).unwrap();
    let conf = conf(&ns, json!({"table": 600}));
    assert_eq!(run("ADD", &ns, &conf).exit_code, 0);
    let again = run("ADD", &ns, &conf);
    assert_eq!(
        again.exit_code,
        0,
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    let mut nl = ns.socket().unwrap();
    assert_eq!(rules(&mut nl), vec![("10.219.0.5/32".to_owned(), 600)]);
    assert_eq!(run("DEL", &ns, &conf).exit_code, 0);
    assert_eq!(rules(&mut nl), vec![]);
}
