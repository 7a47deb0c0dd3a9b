//! `prevResult` for chained plugins: required, found, taken.

use std::borrow::Cow;

use crate::{CniResult, Code, ConvertError, Error, NetConf, Result100};

impl<T> NetConf<T> {
    /// `prevResult`, for a plugin that must be chained: code 7, "prevResult
    /// required", naming the plugin (the configuration's `type`), when the
    /// configuration has none. The spec: a plugin in a chain "must" find
    /// the previous result in `prevResult`; one that only modifies a result
    /// has nothing to work on without it.
    ///
    /// ```
    /// use cni_types::{Code, NetConf};
    ///
    /// let conf: NetConf = NetConf::from_json(br#"{"cniVersion":"1.0.0","name":"n","type":"tuning"}"#).unwrap();
    /// let err = conf.prev_result_required().unwrap_err();
    /// assert_eq!((err.code, err.msg.as_str()), (Code::INVALID_NETWORK_CONFIG, "prevResult required"));
    /// assert!(err.details.contains("tuning"));
    /// ```
    pub fn prev_result_required(&self) -> Result<&CniResult, Error> {
        self.prev_result
            .as_ref()
            .ok_or_else(|| prev_result_missing(&self.plugin_type))
    }

    /// `prevResult`, for a drop-in that answers its absence in its
    /// reference plugin's words: code 7 whose message is exactly
    /// `missing`, with no details, so that the error's text in Go
    /// (`msg; details`) is the reference's (bridge's "Required prevResult
    /// missing", the firewall's "missing prevResult from earlier plugin").
    /// The reference answers those words with code 999, as every plain Go
    /// error; code 7 says what is wrong: the configuration.
    ///
    /// ```
    /// use cni_types::{Code, NetConf};
    ///
    /// let conf: NetConf = NetConf::from_json(br#"{"cniVersion":"1.0.0","name":"n","type":"vrf"}"#).unwrap();
    /// let err = conf.prev_result_or("missing prevResult from earlier plugin").unwrap_err();
    /// assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
    /// assert_eq!(err.to_string(), "missing prevResult from earlier plugin");
    /// ```
    pub fn prev_result_or(&self, missing: &str) -> Result<&CniResult, Error> {
        (self.prev_result.as_ref()).ok_or_else(|| Error::new(Code::INVALID_NETWORK_CONFIG, missing))
    }

    /// [`NetConf::prev_result_or`] in the current shape (1.x), borrowed
    /// when it has that shape already, else converted.
    pub fn prev_result_current_or(&self, missing: &str) -> Result<Cow<'_, Result100>, Error> {
        self.prev_result_or(missing)?
            .as_current()
            .map_err(convert_failed)
    }

    /// `prevResult` in the current shape (1.x), borrowed when it has that
    /// shape already, else converted; code 7 as in
    /// [`NetConf::prev_result_required`] when there is none. For code that
    /// only lends the configuration, as `cni_skel::Request::prev_result`
    /// does; `.into_owned()` to modify it.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use cni_types::NetConf;
    ///
    /// let conf: NetConf = NetConf::from_json(br#"{"cniVersion":"1.0.0","name":"n","type":"mine",
    ///     "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}]}}"#).unwrap();
    /// assert!(matches!(conf.prev_result_current().unwrap(), Cow::Borrowed(_)));
    /// ```
    pub fn prev_result_current(&self) -> Result<Cow<'_, Result100>, Error> {
        self.prev_result_required()?
            .as_current()
            .map_err(convert_failed)
    }

    /// `prevResult` taken out of the configuration, in the current shape
    /// (1.1.0), moved rather than copied; code 7 as in
    /// [`NetConf::prev_result_required`] when there is none. For a plugin
    /// that owns its configuration; inside a method, where the request
    /// lends it, see `cni_skel::Request::prev_result`.
    ///
    /// ```
    /// use cni_types::NetConf;
    ///
    /// let mut conf: NetConf = NetConf::from_json(br#"{"cniVersion":"0.4.0","name":"n","type":"mine",
    ///     "prevResult":{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/c1"}],
    ///     "ips":[{"version":"4","interface":0,"address":"10.0.0.2/24"}]}}"#).unwrap();
    /// let mut prev = conf.take_prev_result().unwrap();
    /// prev.interface_mut("eth0").unwrap().mac = "0a:58:0a:00:00:02".into();
    /// assert!(conf.prev_result.is_none());
    /// ```
    pub fn take_prev_result(&mut self) -> Result<Result100, Error> {
        let prev = self
            .prev_result
            .take()
            .ok_or_else(|| prev_result_missing(&self.plugin_type))?;
        prev.into_current().map_err(convert_failed)
    }
}

/// Code 999: a `prevResult` that could not be put in the current shape.
fn convert_failed(err: ConvertError) -> Error {
    Error::new(Code::INTERNAL, "failed to convert prevResult").with_details(err.to_string())
}

/// Code 7, "prevResult required", naming the plugin.
pub(crate) fn prev_result_missing(plugin_type: &str) -> Error {
    let plugin = if plugin_type.is_empty() {
        "this plugin"
    } else {
        plugin_type
    };
    Error::new(Code::INVALID_NETWORK_CONFIG, "prevResult required").with_details(format!(
        "{plugin} must be chained after a plugin that returns a result"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_prev_result_is_code_7_naming_the_plugin_both_ways() {
        let mut conf: NetConf =
            NetConf::from_json(br#"{"cniVersion":"1.0.0","name":"n","type":"dns-mac"}"#).unwrap();
        let borrowed = conf.prev_result_required().unwrap_err();
        let taken = conf.take_prev_result().unwrap_err();
        for err in [borrowed, taken] {
            assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
            assert_eq!(err.msg, "prevResult required");
            assert_eq!(
                err.details,
                "dns-mac must be chained after a plugin that returns a result"
            );
        }
    }

    #[test]
    fn a_lent_prev_result_is_borrowed_when_current_and_converted_when_older() {
        let current: NetConf = NetConf::from_json(
            br#"{"cniVersion":"1.0.0","name":"n","type":"t",
            "prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]}}"#,
        )
        .unwrap();
        assert!(matches!(
            current.prev_result_current().unwrap(),
            Cow::Borrowed(_)
        ));
        let older: NetConf = NetConf::from_json(
            br#"{"cniVersion":"0.3.1","name":"n","type":"t",
            "prevResult":{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.0.0.2/24"}]}}"#,
        )
        .unwrap();
        let prev = older.prev_result_current().unwrap();
        assert!(matches!(prev, Cow::Owned(_)));
        assert_eq!(prev.ips.len(), 1);
        assert!(older.prev_result.is_some());
    }

    #[test]
    fn a_taken_prev_result_is_in_the_current_shape_and_leaves_none_behind() {
        let mut conf: NetConf = NetConf::from_json(
            br#"{"cniVersion":"0.3.1","name":"n","type":"t",
            "prevResult":{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.0.0.2/24"}]}}"#,
        )
        .unwrap();
        let prev = conf.take_prev_result().unwrap();
        assert_eq!(prev.cni_version, crate::SpecVersion::V1_1_0);
        assert_eq!(prev.ips.len(), 1);
        assert_eq!(conf.prev_result, None);
    }
}
