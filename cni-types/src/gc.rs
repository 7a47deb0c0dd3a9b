//! What a GC request says is still in use.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Attachment;

/// The attachments a GC request names as valid, in the three states a
/// runtime can send: the key absent, an empty list (`[]` or `null`), a list.
///
/// SPEC-1.1.0: "`cni.dev/valid-attachments` (array of objects): List of
/// attachments that are still valid", and the plugin "should remove any
/// resources related to attachments not in this list". A runtime that
/// sends no key at all has not said that nothing is valid: reading that as
/// "release everything" would free the addresses of every running
/// container on the node. `null` is different: libcni's `GCNetworkList`
/// puts the runtime's list into each plugin's configuration as it is, and
/// Go marshals an empty (nil) slice as `null`. CRI-O runs GC at start with
/// the attachments of its live pods, so a network without a live pod gets
/// `null`, meaning that none is valid. So the reading
/// [`ValidAttachments::keeps`] implements is:
///
/// | on the wire    | value            | a GC releases        |
/// |----------------|------------------|----------------------|
/// | key absent     | [`Unspecified`]  | nothing (say so)     |
/// | `null` or `[]` | `List(vec![])`   | everything           |
/// | `[{..}, ..]`   | `List(..)`       | all but those listed |
///
/// The reference plugins read all three as an empty list; keeping
/// everything when the key is absent is a deliberate departure.
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
///
/// // What libcni sends for a network without a live pod: none is valid.
/// let none: NetConf = NetConf::from_json(br#"{"cniVersion": "1.1.0", "name": "n",
///     "cni.dev/valid-attachments": null}"#).unwrap();
/// assert_eq!(none.valid_attachments, ValidAttachments::List(vec![]));
/// assert!(!none.valid_attachments.keeps("c1", "eth0"));
/// ```
///
/// [`Unspecified`]: ValidAttachments::Unspecified
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ValidAttachments {
    /// The runtime sent no list (the key is absent): it did not say what
    /// is in use, so every attachment must be taken as valid.
    #[default]
    Unspecified,
    /// The runtime's list: exactly these attachments are valid. Empty
    /// (`[]` or `null`) means none is.
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
    /// `None` (the key absent) is [`ValidAttachments::Unspecified`].
    fn from(list: Option<Vec<Attachment>>) -> ValidAttachments {
        list.map_or(ValidAttachments::Unspecified, ValidAttachments::List)
    }
}

impl<'de> Deserialize<'de> for ValidAttachments {
    /// A list is a list, and `null` the empty one (what Go marshals an
    /// empty slice as). An absent key never reaches this: a field of this
    /// type takes `#[serde(default)]`, which is
    /// [`ValidAttachments::Unspecified`].
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<ValidAttachments, D::Error> {
        Option::<Vec<Attachment>>::deserialize(de)
            .map(|list| ValidAttachments::List(list.unwrap_or_default()))
    }
}

impl Serialize for ValidAttachments {
    /// The list. [`ValidAttachments::Unspecified`] has no JSON value (it is
    /// the key's absence; `null` would read back as the empty list), so a
    /// field of this type takes `#[serde(skip_serializing_if =
    /// "ValidAttachments::is_unspecified")]`, as [`crate::NetConf`]'s does;
    /// serialized on its own it is refused.
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self.list() {
            Some(list) => list.serialize(ser),
            None => Err(serde::ser::Error::custom(
                "an unspecified cni.dev/valid-attachments has no JSON value: leave the key out",
            )),
        }
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
    fn null_is_the_empty_list_and_keeps_nothing() {
        let v = read(json!(null));
        assert_eq!(v, ValidAttachments::List(Vec::new()));
        assert!(!v.keeps("any", "eth0") && !v.keeps_container("any"));
    }

    #[test]
    fn an_absent_key_is_unspecified_keeps_everything_and_is_left_out() {
        #[derive(serde::Deserialize, serde::Serialize)]
        struct Gc {
            #[serde(
                rename = "cni.dev/valid-attachments",
                default,
                skip_serializing_if = "ValidAttachments::is_unspecified"
            )]
            valid: ValidAttachments,
        }
        let gc: Gc = serde_json::from_value(json!({})).unwrap();
        assert_eq!(gc.valid, ValidAttachments::Unspecified);
        assert!(gc.valid.keeps("any", "eth0") && gc.valid.keeps_container("any"));
        assert_eq!(serde_json::to_value(&gc).unwrap(), json!({}));
        assert!(serde_json::to_value(ValidAttachments::Unspecified).is_err());
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
