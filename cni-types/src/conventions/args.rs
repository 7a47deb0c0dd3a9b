//! `args`: optional runtime metadata, whose conventions live under
//! `args.cni` (CONVENTIONS.md), read typed.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::typed;
use crate::{Error, Extra};

/// `args`: optional runtime metadata; conventions live under `cni`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Args(pub Extra);

/// A `labels` entry under `args.cni`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// Label key.
    pub key: String,
    /// Label value.
    pub value: String,
}

impl Args {
    fn cni(&self) -> Result<Option<Extra>, Error> {
        typed("args", &self.0, "cni")
    }

    pub(super) fn cni_key<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Error> {
        match self.cni()? {
            None => Ok(None),
            Some(cni) => typed("args.cni", &cni, key),
        }
    }

    /// The value of `args.cni.<key>` as given, keys found with Go's rules
    /// (as Go's decoder finds them), for a caller that reads it by hand.
    pub fn cni_value(&self, key: &str) -> Option<&Value> {
        let cni = crate::go_fields::get(&self.0, "cni")?.as_object()?;
        crate::go_fields::get(cni, key)
    }

    /// `args.cni.ips`: "Request static IPs", `"<ip>[/<prefix>]"` each.
    pub fn cni_ips(&self) -> Result<Option<Vec<String>>, Error> {
        self.cni_key("ips")
    }

    /// `args.cni.labels`: `key=value` labels.
    pub fn cni_labels(&self) -> Result<Option<Vec<Label>>, Error> {
        self.cni_key("labels")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_cni_ips_and_labels() {
        let args: Args = serde_json::from_value(serde_json::json!({
            "cni": {"ips": ["10.2.2.42/24", "2001:db8::5"], "labels": [{"key": "app", "value": "web"}]}
        }))
        .unwrap();
        assert_eq!(
            args.cni_ips().unwrap().unwrap(),
            ["10.2.2.42/24", "2001:db8::5"]
        );
        assert_eq!(args.cni_labels().unwrap().unwrap()[0].key, "app");
        assert!(Args::default().cni_ips().unwrap().is_none());
    }
}
