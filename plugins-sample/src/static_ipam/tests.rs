use cni_skel::{Outcome, TestRequest};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

/// ADD of `conf` with `CNI_ARGS` `args`.
fn add(conf: Value, args: &str) -> Outcome {
    TestRequest::add()
        .env("CNI_ARGS", args)
        .stdin(conf.to_string())
        .run(&Static, &PluginInfo::all())
}

fn conf(version: &str, ipam: Value) -> Value {
    let mut ipam = ipam;
    ipam["type"] = json!("static");
    json!({"cniVersion": version, "name": "net", "type": "bridge", "ipam": ipam})
}

#[test]
fn add_answers_the_configured_addresses_routes_and_dns() {
    let out = add(
        conf(
            "1.0.0",
            json!({
                "addresses": [{"address": "10.10.0.1/24", "gateway": "10.10.0.254"},
                              {"address": "3ffe:ffff:0:1ff::1/64"}],
                "routes": [{"dst": "0.0.0.0/0"}, {"dst": "192.168.0.0/16", "gw": "10.10.0.254"}],
                "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com"}
            }),
        ),
        "",
    );
    assert_eq!(
        out.json(),
        json!({
            "cniVersion": "1.0.0",
            "ips": [{"address": "10.10.0.1/24", "gateway": "10.10.0.254"},
                    {"address": "3ffe:ffff:0:1ff::1/64"}],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "192.168.0.0/16", "gw": "10.10.0.254"}],
            "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com"}
        })
    );
}

#[test]
fn older_versions_get_the_result_in_their_own_layout() {
    let ipam = json!({"addresses": [{"address": "10.10.0.1/24", "gateway": "10.10.0.254"}]});
    let out = add(conf("0.3.1", ipam.clone()), "");
    assert_eq!(out.json()["ips"][0]["version"], "4", "{}", out.json());
    let out = add(conf("0.2.0", ipam), "");
    assert_eq!(out.json()["ip4"]["ip"], "10.10.0.1/24", "{}", out.json());
}

#[test]
fn cni_args_add_addresses_and_give_gateways_to_the_subnets_holding_them() {
    let out = add(
        conf("1.0.0", json!({"addresses": [{"address": "10.10.0.1/24"}]})),
        "IgnoreUnknown=1;K8S_POD_NAME=p;IP=10.20.0.5/16, 10.30.0.5/24;GATEWAY=10.20.0.1",
    );
    assert_eq!(
        out.json()["ips"],
        json!([{"address": "10.10.0.1/24"},
               {"address": "10.20.0.5/16", "gateway": "10.20.0.1"},
               {"address": "10.30.0.5/24"}])
    );
}

#[test]
fn runtime_config_ips_replace_args_ips_which_replace_the_configured_ones() {
    let mut c = conf("1.0.0", json!({"addresses": [{"address": "10.10.0.1/24"}]}));
    c["args"] = json!({"cni": {"ips": ["10.40.0.5/24"]}});
    assert_eq!(
        add(c.clone(), "").json()["ips"],
        json!([{"address": "10.40.0.5/24"}])
    );
    c["runtimeConfig"] = json!({"ips": ["10.50.0.5/24", "fd00::5/64"]});
    assert_eq!(
        add(c, "").json()["ips"],
        json!([{"address": "10.50.0.5/24"}, {"address": "fd00::5/64"}])
    );
}

#[test]
fn bad_input_is_an_error_naming_the_field_and_value() {
    let cases = [
        (
            json!({"cniVersion": "1.0.0", "name": "net"}),
            "",
            Code::INVALID_NETWORK_CONFIG,
            "invalid ipam",
        ),
        (
            conf("1.0.0", json!({"addresses": [{"address": "10.10.0.1"}]})),
            "",
            Code::INVALID_NETWORK_CONFIG,
            "invalid ipam.addresses[0].address",
        ),
        (
            conf(
                "1.0.0",
                json!({"addresses": [{"address": "10.10.0.1/24", "gateway": "x"}]}),
            ),
            "",
            Code::INVALID_NETWORK_CONFIG,
            "invalid ipam.addresses[0].gateway",
        ),
        (
            conf("1.0.0", json!({})),
            "IP=10.1.0.1",
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "invalid CNI_ARGS",
        ),
        (
            conf("1.0.0", json!({})),
            "IP=10.1.0.1/24;GATEWAY=10.1.0.x",
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "invalid CNI_ARGS",
        ),
        (
            conf("1.0.0", json!({})),
            "POD=p",
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "invalid CNI_ARGS",
        ),
        (
            {
                let mut c = conf("1.0.0", json!({}));
                c["runtimeConfig"] = json!({"ips": ["10.1.0.1/24", "10.1.0.2"]});
                c
            },
            "",
            Code::INVALID_NETWORK_CONFIG,
            "invalid runtimeConfig.ips[1]",
        ),
        (
            conf(
                "0.2.0",
                json!({"addresses": [{"address": "10.1.0.1/24"}, {"address": "10.2.0.1/24"}]}),
            ),
            "",
            Code::INVALID_NETWORK_CONFIG,
            "invalid ipam.addresses",
        ),
    ];
    for (conf, args, code, msg) in cases {
        let err = add(conf.clone(), args)
            .error()
            .unwrap_or_else(|| panic!("{conf} {args}"));
        assert_eq!(
            (err.code, err.msg.as_str()),
            (code, msg),
            "{conf} {args}: {err:?}"
        );
    }
    let err = add(conf("1.0.0", json!({})), "IP=10.1.0.1")
        .error()
        .unwrap();
    assert!(err.details.contains("\"10.1.0.1\""), "{err:?}");
}

/// CHECK of `conf` with `prev` as its `prevResult`.
fn check(mut conf: Value, prev: Option<Value>) -> Outcome {
    if let Some(prev) = prev {
        conf["prevResult"] = prev;
    }
    TestRequest::check()
        .stdin(conf.to_string())
        .run(&Static, &PluginInfo::all())
}

#[test]
fn check_finds_each_address_and_its_gateway_in_the_previous_result() {
    let c = conf(
        "1.0.0",
        json!({"addresses": [{"address": "10.10.0.1/24", "gateway": "10.10.0.254"}]}),
    );
    let prev = |ips: Value| Some(json!({"cniVersion": "1.0.0", "ips": ips}));
    let ok = check(
        c.clone(),
        prev(json!([{"address": "10.10.0.1/24", "gateway": "10.10.0.254"}])),
    );
    assert_eq!(ok.exit_code, 0, "{}", String::from_utf8_lossy(&ok.stdout));

    let other_gw = check(
        c.clone(),
        prev(json!([{"address": "10.10.0.1/24", "gateway": "10.10.0.1"}])),
    );
    assert!(
        other_gw.error().unwrap().msg.contains("10.10.0.1"),
        "{other_gw:?}"
    );
    let missing = check(c.clone(), prev(json!([{"address": "10.10.0.9/24"}])));
    assert!(
        missing.error().unwrap().msg.contains("missing"),
        "{missing:?}"
    );
    let none = check(c, None).error().unwrap();
    assert_eq!(none.code, Code::INVALID_NETWORK_CONFIG);
}

#[test]
fn del_succeeds_with_nothing_to_release() {
    let out = TestRequest::del()
        .stdin(conf("1.0.0", json!({"addresses": [{"address": "10.10.0.1/24"}]})).to_string())
        .run(&Static, &PluginInfo::all());
    assert_eq!(out.exit_code, 0);
}
