//! Is `CNI_NETNS` the plugin's own network namespace?

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use cni_types::{Code, Error};
use nix::sys::stat::stat;

/// Code 8 when `netns` is the namespace the plugin runs in, compared by
/// device and inode (the same namespace can have many paths). A path that
/// does not exist or cannot be read is not the SDK's business: DEL must
/// succeed when the namespace is already gone.
pub(crate) fn reject_own_netns(netns: &[u8]) -> Result<(), Error> {
    if netns.is_empty() {
        return Ok(());
    }
    let Ok(target) = stat(Path::new(OsStr::from_bytes(netns))) else {
        return Ok(());
    };
    let own = stat("/proc/thread-self/ns/net")
        .or_else(|_| stat("/proc/self/ns/net"))
        .map_err(|e| {
            Error::new(Code::INVALID_NETNS, "get plugin's netns failed").with_details(e.to_string())
        })?;
    if (own.st_dev, own.st_ino) == (target.st_dev, target.st_ino) {
        return Err(Error::new(
            Code::INVALID_NETNS,
            "plugin's netns and netns from CNI_NETNS should not be the same",
        )
        .with_details(format!("CNI_NETNS={}", String::from_utf8_lossy(netns))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_namespace_is_rejected_under_any_path() {
        let e = reject_own_netns(b"/proc/self/ns/net").unwrap_err();
        assert_eq!(e.code, Code::INVALID_NETNS);
        assert!(reject_own_netns(b"/proc/1/../self/ns/net").is_err());
    }

    #[test]
    fn missing_or_other_paths_are_not_our_business() {
        assert!(reject_own_netns(b"").is_ok());
        assert!(reject_own_netns(b"/var/run/netns/does-not-exist").is_ok());
        assert!(reject_own_netns(b"/etc/hostname").is_ok());
    }
}
