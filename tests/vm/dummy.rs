//! Our `dummy` in the VM (this host's kernel has no dummy driver;
//! `scripts/vm/run-tests.sh vm_dummy`). Debian does not ship the
//! reference `dummy`, so what is expected is the reference source's
//! behaviour (containernetworking/plugins v1.9 `plugins/main/dummy`): a
//! dummy link named `CNI_IFNAME` created in the container's namespace,
//! IPAM's addresses and routes on it, up; the result lists that one
//! interface (name, MAC, sandbox), the addresses on interface 0, and
//! keeps IPAM's routes and DNS; CHECK passes; DEL removes the link and
//! the reservation, and succeeds again.

use serde_json::json;
use tests::side_by_side::add_check_del;

#[test]
fn dummy_carries_ipams_address_as_the_reference_source_does() {
    let path = std::env::join_paths(tests::ours_with_reference_host_local())
        .unwrap()
        .into_string()
        .unwrap();
    for &version in tests::versions() {
        let data = tempfile::tempdir().unwrap();
        let conf = json!({"cniVersion": version, "name": "vm-dummy", "type": "dummy",
                          "ipam": {"type": "host-local", "dataDir": data.path(),
                                   "ranges": [[{"subnet": "10.217.5.0/24"}]],
                                   "routes": [{"dst": "10.217.0.0/16"}]}});
        let tag = format!("dm{}", version.replace('.', ""));
        let steps = add_check_del(
            &tests::plugin_bin_dir().join("dummy"),
            &path,
            &conf,
            &tag,
            "dummy0",
        );
        let v4 = if version == "1.0.0" {
            json!(null)
        } else {
            json!("4")
        };
        let mut ip = json!({"address": "10.217.5.2/24", "gateway": "10.217.5.1", "interface": 0});
        if !v4.is_null() {
            ip["version"] = v4;
        }
        assert_eq!(
            steps.add,
            json!({"cniVersion": version,
                   "interfaces": [{"name": "dummy0", "mac": "<mac>", "sandbox": "<netns>"}],
                   "ips": [ip],
                   "routes": [{"dst": "10.217.0.0/16"}]}),
            "at {version}"
        );
        assert_eq!(steps.link["kind"], "dummy");
        assert_eq!(steps.link["up"], true);
        assert_eq!(steps.link["addrs"], json!(["10.217.5.2/24"]));
        if version != "0.3.1" {
            assert_eq!(steps.check, true, "CHECK at {version}");
        }
        assert_eq!(steps.after_del, json!([true, true]));
        let held = std::fs::read_dir(data.path().join("vm-dummy"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("10."))
            .count();
        assert_eq!(held, 0, "reservation released at {version}");
    }
}
