//! An attachment: what ADD, CHECK and DEL act on, and what GC keeps.

use serde::{Deserialize, Serialize};

/// An attachment, "a container id and an interface name" (SPEC-1.0.0,
/// section 2): `CNI_CONTAINERID` and `CNI_IFNAME` of ADD, CHECK and DEL,
/// and an entry of GC's `cni.dev/valid-attachments`, whose spelling its
/// serde names keep (`{"containerID": .., "ifname": ..}`).
///
/// Go: `types.GCAttachment`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Attachment {
    /// The container id of the attachment.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// The interface name of the attachment.
    pub ifname: String,
}
