//! What a GC request says is still in use.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Attachment;

/// The attachments a GC request names as valid, in the three states a
/// runtime can send: the key absent (or `null`), an empty list, a list.
///
/// SPEC-1.1.0: "`cni.dev/valid-attachments` (array of objects): List of
/// attachments that are still valid", and the plugin "should remove any
/// resources related to attachments not in this list". A runtime that
/// sends no list at all has not said that nothing is valid: the reference
/// `cnitool gc` sends no key, and reading that as "release everything"
/// frees the addresses of every running container on the node. So the
/// safe reading, and the one [`ValidAttachments::keeps`] implements, is:
///
/// | on the wire           | value                  | a GC releases        |
/// |-----------------------|------------------------|----------------------|
/// | key absent, or `null` | [`Unspecified`]        | nothing (say so)     |
/// | `[]`                  | `List(vec![])`         | everything           |
/// | `[{..}, ..]`          | `List(..)`             | all but those listed |
///
/// The reference library reads all three as an empty list; departing from
/// it here is deliberate.
///
/// Go: `types.GCAttachment` slices in `libcni.GCArgs`.
///
/// ```
/// use cni_types::{NetConf, ValidAttachments};
///
/// let absent: NetConf = NetConf::from_json(br#"{"cniVersion": "1.1.0", "name": "n"}"#).unwrap();
/// assert_eq!(absent.valid_attachments, ValidAttachments::Unspecified);
/// assert!(absent.valid_attachments.keeps("c1", "eth0"));
///
/// let listed: NetConf = NetConf::from_json(br#"{"cniVersion": "1.1.0", "name": "n",
///     "cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "eth0"}]}"#).unwrap();
/// assert!(listed.valid_attachments.keeps("c1", "eth0"));
/// assert!(!listed.valid_attachments.keeps("c2", "eth0"));
/// ```
///
/// [`Unspecified`]: ValidAttachments::Unspecified
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ValidAttachments {
    /// The runtime sent no list (the key is absent or `null`): it did not
    /// say what is in use, so every attachment must be taken as valid.
    #[default]
    Unspecified,
    /// The runtime's list: exactly these attachments are valid. Empty means
    /// none is.
    List(Vec<Attachment>),
}

impl ValidAttachments {
    /// Whether a GC must keep what the attachment `(container_id, ifname)`
    /// holds: always when [`ValidAttachments::Unspecified`], else when the
    /// list names it.
    pub fn keeps(&self, container_id: &str, ifname: &str) -> bool {
        match self {
            ValidAttachments::Unspecified => true,
            ValidAttachments::List(list) => list
                .iter()
                .any(|a| a.container_id == container_id && a.ifname == ifname),
        }
    }

    /// Whether a GC must keep what the container holds on any interface
    /// (for records that do not name one): always when
    /// [`ValidAttachments::Unspecified`], else when an attachment of the
    /// list has this container id.
    pub fn keeps_container(&self, container_id: &str) -> bool {
        match self {
            ValidAttachments::Unspecified => true,
            ValidAttachments::List(list) => list.iter().any(|a| a.container_id == container_id),
        }
    }

    /// Whether the runtime sent no list.
    pub fn is_unspecified(&self) -> bool {
        matches!(self, ValidAttachments::Unspecified)
    }

    /// The list, `None` when the runtime sent none.
    pub fn list(&self) -> Option<&[Attachment]> {
        match self {
            ValidAttachments::Unspecified => None,
            ValidAttachments::List(list) => Some(list),
        }
    }
}

impl From<Option<Vec<Attachment>>> for ValidAttachments {
    /// `None` (absent or `null`) is [`ValidAttachments::Unspecified`].
    fn from(list: Option<Vec<Attachment>>) -> ValidAttachments {
        list.map_or(ValidAttachments::Unspecified, ValidAttachments::List)
    }
}

impl<'de> Deserialize<'de> for ValidAttachments {
    /// `null` is [`ValidAttachments::Unspecified`]; a list is a list.
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<ValidAttachments, D::Error> {
        Option::<Vec<Attachment>>::deserialize(de).map(ValidAttachments::from)
    }
}

impl Serialize for ValidAttachments {
    /// The list, or `null` when unspecified (a [`crate::NetConf`] leaves the
    /// key out instead).
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        self.list().serialize(ser)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(v: serde_json::Value) -> ValidAttachments {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn null_is_unspecified_and_keeps_everything() {
        let v = read(json!(null));
        assert_eq!(v, ValidAttachments::Unspecified);
        assert!(v.keeps("any", "eth0") && v.keeps_container("any"));
    }

    #[test]
    fn an_empty_list_keeps_nothing() {
        let v = read(json!([]));
        assert_eq!(v, ValidAttachments::List(Vec::new()));
        assert!(!v.keeps("any", "eth0") && !v.keeps_container("any"));
    }

    #[test]
    fn a_list_keeps_exactly_its_attachments_and_their_containers() {
        let v = read(json!([{"containerID": "c1", "ifname": "eth0"}]));
        assert!(v.keeps("c1", "eth0"));
        assert!(!v.keeps("c1", "eth1") && !v.keeps("c2", "eth0"));
        assert!(v.keeps_container("c1") && !v.keeps_container("c2"));
        assert_eq!(serde_json::to_value(&v).unwrap()[0]["containerID"], "c1");
    }
}
