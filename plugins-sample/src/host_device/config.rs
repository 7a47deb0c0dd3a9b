//! host-device's configuration: which device, validated before anything
//! changes.

use std::path::{Component, Path, PathBuf};

use cni_types::{Error, Mac};
use serde::Deserialize;

use super::Req;

/// Where PCI devices are, by bus address.
const SYS_BUS_PCI: &str = "/sys/bus/pci/devices";
/// Where auxiliary bus devices (SR-IOV sub-functions) are, by name.
const SYS_BUS_AUXILIARY: &str = "/sys/bus/auxiliary/devices";
/// Drivers that hand a PCI device to user space (DPDK): such a device
/// has no kernel link to move.
const USERSPACE_DRIVERS: [&str; 3] = ["vfio-pci", "uio_pci_generic", "igb_uio"];

/// The plugin's own configuration keys, as the reference names them. The
/// first one set, in this order, names the device.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The device's name in the host namespace (`eth1`).
    #[serde(default)]
    pub device: String,
    /// The device's MAC address.
    #[serde(default)]
    pub hwaddr: String,
    /// The device's path under `/sys/devices/`; its `net` directory names
    /// the link.
    #[serde(default)]
    pub kernelpath: String,
    /// The device's PCI address (`0000:3b:00.1`).
    #[serde(rename = "pciBusID", default)]
    pub pci_bus_id: String,
}

/// How the device is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Selector {
    /// `device`.
    Name(String),
    /// `hwaddr`.
    Mac(Mac),
    /// `kernelpath`: the one entry of its `net` directory.
    KernelPath(PathBuf),
    /// `pciBusID` or a PCI `runtimeConfig.deviceID`: the first entry of
    /// its `net` directory (or of a virtio function's).
    Pci(String),
    /// An auxiliary `runtimeConfig.deviceID`.
    Auxiliary(String),
}

/// The validated configuration.
#[derive(Debug)]
pub(super) struct Plan {
    /// The device.
    pub selector: Selector,
    /// A PCI device bound to a user-space driver: nothing to move, only
    /// IPAM to run.
    pub dpdk: bool,
    /// `ipam.type`, when there is one.
    pub ipam: Option<String>,
}

/// Validates the configuration: code 7 naming the field and value,
/// before anything changes.
///
/// Go: `loadConf`, `handleDeviceID`.
pub(super) fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    let device_id = match req.config.runtime_config.as_ref() {
        Some(rc) => rc.get::<String>("deviceID")?,
        None => None,
    };
    let selector = match device_id.filter(|id| !id.is_empty()) {
        Some(id) => by_device_id(&id)?,
        None => by_fields(f)?,
    };
    let dpdk = match &selector {
        Selector::Pci(address) => has_userspace_driver(address)?,
        _ => false,
    };
    Ok(Plan {
        selector,
        dpdk,
        ipam: req.config.ipam_plugin().map(str::to_owned),
    })
}

fn by_fields(f: &Fields) -> Result<Selector, Error> {
    if !f.device.is_empty() {
        cni_net::validate_ifname(&f.device).map_err(|e| Error::invalid_config("device", e))?;
        return Ok(Selector::Name(f.device.clone()));
    }
    if !f.hwaddr.is_empty() {
        let mac: Mac = f
            .hwaddr
            .parse()
            .map_err(|e| Error::invalid_config("hwaddr", e))?;
        // All zeros is no device's address: it is what links without one
        // (`lo`, tunnels) report, and one of those would be moved.
        if mac.octets() == [0; 6] {
            return Err(Error::invalid_config(
                "hwaddr",
                format!("{:?} is not a device's address (all zeros)", f.hwaddr),
            ));
        }
        return Ok(Selector::Mac(mac));
    }
    if !f.kernelpath.is_empty() {
        let path = Path::new(&f.kernelpath);
        let plain = path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain || !path.starts_with("/sys/devices/") || path == Path::new("/sys/devices") {
            return Err(Error::invalid_config(
                "kernelpath",
                format!(
                    "kernel device path {:?} must be absolute and begin with /sys/devices/",
                    f.kernelpath
                ),
            ));
        }
        return Ok(Selector::KernelPath(path.to_path_buf()));
    }
    if !f.pci_bus_id.is_empty() {
        bus_name("pciBusID", &f.pci_bus_id)?;
        return Ok(Selector::Pci(f.pci_bus_id.clone()));
    }
    Err(Error::invalid_config(
        "device",
        r#"specify either "device", "hwaddr", "kernelpath" or "pciBusID""#,
    ))
}

/// `runtimeConfig.deviceID` (a device plugin's choice) overrides the
/// fields: a PCI address or an auxiliary device name.
fn by_device_id(id: &str) -> Result<Selector, Error> {
    bus_name("runtimeConfig.deviceID", id)?;
    if Path::new(SYS_BUS_PCI).join(id).exists() {
        return Ok(Selector::Pci(id.to_owned()));
    }
    if Path::new(SYS_BUS_AUXILIARY).join(id).exists() {
        return Ok(Selector::Auxiliary(id.to_owned()));
    }
    Err(Error::invalid_config(
        "runtimeConfig.deviceID",
        format!("runtime config DeviceID {id:?} not found or unsupported"),
    ))
}

/// A bus address is one path component: it is joined to a `/sys` path.
fn bus_name(field: &str, name: &str) -> Result<(), Error> {
    if name.contains('/') || name == "." || name == ".." || name.contains('\0') {
        return Err(Error::invalid_config(
            field,
            format!("{name:?} is not a bus address"),
        ));
    }
    Ok(())
}

/// Whether the PCI device is bound to a user-space (DPDK) driver.
///
/// Go: `hasDpdkDriver`.
fn has_userspace_driver(address: &str) -> Result<bool, Error> {
    let link = Path::new(SYS_BUS_PCI).join(address).join("driver");
    let driver = std::fs::canonicalize(&link).map_err(|e| {
        Error::invalid_config(
            "pciBusID",
            format!("error with host device: {}: {e}", link.display()),
        )
    })?;
    let name = driver
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    Ok(USERSPACE_DRIVERS.contains(&name))
}

/// The `net` directory that names a device's link, for the selectors
/// that go through `/sys`.
pub(super) fn net_dir(selector: &Selector) -> Option<PathBuf> {
    match selector {
        Selector::KernelPath(path) => Some(path.join("net")),
        Selector::Pci(address) => {
            let dir = Path::new(SYS_BUS_PCI).join(address);
            let net = dir.join("net");
            if net.symlink_metadata().is_ok() {
                return Some(net);
            }
            // A virtio device's link is under its virtio function.
            let mut virtio: Vec<PathBuf> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("virtio"))
                .map(|e| e.path().join("net"))
                .filter(|p| p.exists())
                .collect();
            virtio.sort();
            Some(virtio.into_iter().next().unwrap_or(net))
        }
        Selector::Auxiliary(name) => Some(Path::new(SYS_BUS_AUXILIARY).join(name).join("net")),
        Selector::Name(_) | Selector::Mac(_) => None,
    }
}

/// The link `dir` (a device's `net` directory) names: its first entry by
/// name, or with `only_one`, its one entry; code 7 naming `field` and the
/// directory otherwise.
///
/// Go: the directory scan of `getLink`, which takes whichever entry
/// comes first, also for a `kernelpath` naming many devices
/// (`/sys/devices/virtual`).
pub(super) fn link_in(dir: &Path, field: &str, only_one: bool) -> Result<String, Error> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| {
            Error::invalid_config(
                field,
                format!("failed to read directory {}: {e}", dir.display()),
            )
        })?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if only_one && names.len() > 1 {
        return Err(Error::invalid_config(
            field,
            format!(
                "{} names {} network devices, not one: {}",
                dir.display(),
                names.len(),
                names.join(", ")
            ),
        ));
    }
    names.into_iter().next().ok_or_else(|| {
        Error::invalid_config(
            field,
            format!("failed to find network device in path {}", dir.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use cni_types::Code;

    use super::*;

    #[test]
    fn a_kernelpath_naming_several_links_is_refused_with_their_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("eth0")).unwrap();
        assert_eq!(link_in(dir.path(), "kernelpath", true).unwrap(), "eth0");
        std::fs::create_dir(dir.path().join("eth1")).unwrap();
        let err = link_in(dir.path(), "kernelpath", true).unwrap_err();
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
        let path = dir.path().display().to_string();
        assert_eq!(err.msg, "invalid kernelpath", "{err:?}");
        let details = &err.details;
        assert!(
            details.contains(&format!("{path} names 2 network devices")),
            "{err:?}"
        );
        // A PCI function with two ports keeps the reference's choice.
        assert_eq!(link_in(dir.path(), "pciBusID", false).unwrap(), "eth0");
    }
}
