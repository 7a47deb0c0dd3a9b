//! The container's veth pair, shared by `bridge` and `ptp`.

use cni_net::{ContainerVeth, Link, Netlink};
use cni_types::{Code, Error};

/// Creates the container's pair from the host (`host`) and returns the
/// host end (both ends down); a link already named `CNI_IFNAME` in the
/// container (`inside`) is refused first with the reference's message.
///
/// Go: `ip.SetupVeth`, whose "container veth name provided (..) already
/// exists" this keeps.
pub(crate) fn add_container_pair(
    host: &mut Netlink,
    inside: &mut Netlink,
    veth: &ContainerVeth,
) -> Result<Link, Error> {
    if inside.find_link(veth.ifname)?.is_some() {
        let what = format!(
            "container veth name provided ({}) already exists",
            veth.ifname
        );
        return Err(Error::new(Code::INTERNAL, what));
    }
    Ok(host.add_container_veth(veth)?)
}
