//! Traffic control, like `tc`: qdiscs (`qdisc.rs`: add, delete, list;
//! `tbf.rs`: the token bucket filter and the kernel's clock it is
//! expressed in) and filters with their actions (`filter.rs`: a u32
//! filter matching every packet with a mirred redirect), over rtnetlink.
//!
//! netlink-packet-route encodes u32 selectors and mirred actions but not
//! tbf's options; `tbf.rs` encodes and decodes those itself.
//!
//! Go: vishvananda/netlink `qdisc_linux.go`, `filter_linux.go`.

mod filter;
mod qdisc;
mod tbf;

pub use filter::{Filter, Redirect};
pub use qdisc::{Qdisc, QdiscKind};
pub use tbf::{Psched, Tbf, TbfParams};

use std::fmt;

use netlink_packet_route::tc::TcMessage;
use netlink_packet_route::RouteNetlinkMessage;

use crate::{NetError, Netlink, Op};

/// A qdisc's or class's handle, `major:minor`, as `tc` writes it (`1:`,
/// `ffff:`, `1:1`), with the two parents that are not handles.
///
/// ```
/// use cni_net::tc::Handle;
///
/// assert_eq!(Handle::new(1, 0).to_string(), "1:");
/// assert_eq!(Handle::new(1, 1).to_string(), "1:1");
/// assert_eq!(Handle::INGRESS.to_string(), "ffff:fff1");
/// assert_eq!(Handle::ROOT.to_string(), "root");
/// ```
///
/// Go: `netlink.MakeHandle`, `netlink.HandleStr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Handle(pub u32);

impl Handle {
    /// The parent of a link's egress (root) qdisc (`TC_H_ROOT`).
    pub const ROOT: Handle = Handle(0xffff_ffff);
    /// The parent of a link's ingress qdisc (`TC_H_INGRESS`).
    pub const INGRESS: Handle = Handle(0xffff_fff1);

    /// `major:minor`.
    pub const fn new(major: u16, minor: u16) -> Handle {
        Handle(((major as u32) << 16) | minor as u32)
    }

    /// The major number (the qdisc's).
    pub const fn major(self) -> u16 {
        (self.0 >> 16) as u16
    }

    /// The minor number (a class within the qdisc).
    pub const fn minor(self) -> u16 {
        self.0 as u16
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Handle::ROOT => f.write_str("root"),
            h if h.minor() == 0 => write!(f, "{:x}:", h.major()),
            h => write!(f, "{:x}:{:x}", h.major(), h.minor()),
        }
    }
}

/// `ETH_P_ALL`: a filter's protocol matching every packet (`tc filter
/// add .. protocol all`).
pub const ETH_P_ALL: u16 = 0x0003;

impl Netlink {
    /// The tc objects a dump (`RTM_GETQDISC`, `RTM_GETTFILTER`) answers
    /// with; `what` names them in the error.
    fn dump_tc(
        &mut self,
        query: RouteNetlinkMessage,
        what: String,
    ) -> Result<Vec<TcMessage>, NetError> {
        let replies = self.dump(query).map_err(NetError::kernel(Op::List, what))?;
        Ok(replies
            .into_iter()
            .filter_map(|reply| match reply {
                RouteNetlinkMessage::NewQueueDiscipline(msg)
                | RouteNetlinkMessage::NewTrafficFilter(msg) => Some(msg),
                _ => None,
            })
            .collect())
    }
}
