//! An 802.1Q VLAN id, checked.

use std::fmt;

/// An 802.1Q VLAN id: 1 to 4094 (0 means "no VLAN" and 4095 is reserved,
/// so the kernel takes neither as a link's id).
///
/// ```
/// use cni_net::VlanId;
///
/// assert_eq!(VlanId::new(100).map(VlanId::get), Ok(100));
/// assert!(VlanId::new(0).is_err() && VlanId::new(4095).is_err());
/// ```
///
/// Go: `netlink.Vlan.VlanId`; the reference vlan plugin's `loadConf`
/// takes 0 to 4094 and leaves 0 to the kernel to refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VlanId(u16);

/// A VLAN id outside 1..=4094.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}: a VLAN id is between 1 and 4094")]
pub struct InvalidVlanId(pub i64);

impl VlanId {
    /// The id, when it is one a link can carry.
    pub fn new(id: i64) -> Result<VlanId, InvalidVlanId> {
        match u16::try_from(id) {
            Ok(v @ 1..=4094) => Ok(VlanId(v)),
            _ => Err(InvalidVlanId(id)),
        }
    }

    /// The number.
    pub fn get(self) -> u16 {
        self.0
    }

    pub(crate) fn from_kernel(id: u16) -> VlanId {
        VlanId(id)
    }
}

impl fmt::Display for VlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_a_link_can_carry_are_taken() {
        for bad in [-1, 0, 4095, 65536 + 5] {
            assert_eq!(VlanId::new(bad), Err(InvalidVlanId(bad)));
        }
        assert_eq!(VlanId::new(1).unwrap().get(), 1);
        assert_eq!(VlanId::new(4094).unwrap().to_string(), "4094");
    }
}
