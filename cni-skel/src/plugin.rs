//! What a plugin author implements.

use cni_types::{CniResult, Code, Error, NetConf, Result100, WireFormat};
use serde::de::DeserializeOwned;

use crate::Request;

/// Any error a plugin method returns. A [`cni_types::Error`] keeps its code;
/// anything else (an `io::Error`, an `anyhow::Error`, ...) is reported as
/// code 999 with its message and cause chain, so `?` just works.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A CNI plugin: one method per command.
///
/// `add`, `del` and [`CHECK`](Plugin::CHECK) are required: every plugin
/// states what CHECK verifies, as Go's `skel.CNIFuncs` requires a `Check`
/// function (a Go plugin that verifies nothing returns `nil` explicitly).
/// `gc` and `status` succeed with no output by default, as the reference
/// does for a plugin that gives no callback; a future command will arrive
/// the same way, as a new method with a default body.
///
/// Methods receive the parsed [`Request`]. Only `add` answers with
/// something to print, a [`Reply`] (a result, printed in the
/// configuration's `cniVersion` and converted if built in another
/// version); the spec gives the other commands nothing to print on
/// success, so they return `()`.
///
/// Go: `skel.CNIFuncs`.
pub trait Plugin {
    /// The configuration the plugin reads from stdin, usually
    /// [`NetConf<YourFields>`](cni_types::NetConf); see [`FromConfig`].
    type Config: FromConfig;

    /// How results and errors are printed: the SDK's
    /// [`WireFormat::Spec`](cni_types::WireFormat::Spec) unless the plugin
    /// must match the reference Go library byte for byte (a drop-in for a
    /// reference plugin checked by its test suite):
    ///
    /// ```
    /// # use cni_skel::{BoxError, Plugin, Reply, Request};
    /// # use cni_types::NetConf;
    /// struct DropIn;
    /// impl Plugin for DropIn {
    ///     type Config = NetConf;
    ///     const WIRE_FORMAT: cni_types::WireFormat = cni_types::WireFormat::Reference;
    ///     // ...
    /// #   fn add(&self, _: &Request<NetConf>) -> Result<Reply, BoxError> { unimplemented!() }
    /// #   fn del(&self, _: &Request<NetConf>) -> Result<(), BoxError> { Ok(()) }
    /// #   const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
    /// }
    /// ```
    ///
    /// The table of what differs is on [`WireFormat`](cni_types::WireFormat).
    const WIRE_FORMAT: WireFormat = WireFormat::Spec;

    /// ADD: "Add container to network, or apply modifications."
    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError>;

    /// DEL: "Remove container from network, or un-apply modifications."
    /// Should succeed when the resources are already gone.
    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError>;

    /// What [`check`](Plugin::check) verifies. No default: a plugin that
    /// forgets CHECK does not compile, instead of passing every CHECK
    /// without looking. With [`CheckSupport::Unsupported`] the SDK answers
    /// CHECK with an error and `check` is never called.
    const CHECK: CheckSupport;

    /// CHECK: "Check container's networking is as expected." Only called
    /// for configurations of version 0.4.0 and later, and only when
    /// [`CHECK`](Plugin::CHECK) is not [`CheckSupport::Unsupported`].
    ///
    /// The spec asks it to consult `prevResult` for the expected interfaces
    /// and addresses, to fail when a resource the plugin created is missing
    /// or in an invalid state, and to "call CHECK on any delegated (e.g.
    /// IPAM) plugins and pass any errors on to its caller"
    /// (`cni_invoke::delegate_check`).
    ///
    /// The default body fails with code 999: it runs only for a plugin that
    /// declares it checks something and wrote no `check`, a bug that must
    /// not look like a healthy container.
    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let _ = req;
        Err(Error::new(
            Code::INTERNAL,
            format!(
                "the plugin declares CHECK support {:?} but implements no check",
                Self::CHECK
            ),
        )
        .into())
    }

    /// GC: remove resources of attachments not in
    /// [`Request::valid_attachments`]; when the runtime sent no list
    /// ([`cni_types::ValidAttachments::Unspecified`]), remove nothing. Only
    /// called for configurations of version 1.1.0 and later.
    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let _ = req;
        Ok(())
    }

    /// STATUS: whether the plugin is ready to service ADD; answer code 50 or
    /// 51 when not. Only called for configurations of version 1.1.0 and later.
    fn status(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let _ = req;
        Ok(())
    }
}

/// What a plugin verifies on CHECK: the statement [`Plugin::CHECK`]
/// requires of every plugin.
///
/// ```
/// use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, TestRequest};
/// use cni_types::{Code, NetConf};
///
/// /// Keeps no state CHECK could compare with the previous result.
/// struct Stateless;
///
/// impl Plugin for Stateless {
///     type Config = NetConf;
///     const CHECK: CheckSupport = CheckSupport::Unsupported;
///     fn add(&self, _: &Request<NetConf>) -> Result<Reply, BoxError> {
///         Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into())
///     }
///     fn del(&self, _: &Request<NetConf>) -> Result<(), BoxError> {
///         Ok(())
///     }
/// }
///
/// let conf = r#"{"cniVersion": "1.0.0", "name": "n", "type": "stateless"}"#;
/// let out = TestRequest::check().stdin(conf).run(&Stateless, &cni_version::PluginInfo::all());
/// let err = out.error().unwrap();
/// assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES);
/// assert!(err.details.contains("disableCheck"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckSupport {
    /// [`Plugin::check`] verifies what the plugin's ADD made (interfaces,
    /// addresses, routes, rules, shaping, reservations, as the spec lists
    /// them) and calls CHECK on its IPAM plugin, if it has one. A plugin
    /// whose ADD changes nothing verifies that nothing, and says so in a
    /// comment in its `check`.
    Full,
    /// [`Plugin::check`] calls CHECK on the IPAM plugin and verifies
    /// nothing of its own; the plugin's docs say why.
    OnlyIpam,
    /// The plugin cannot tell a healthy attachment from a broken one. The
    /// SDK answers CHECK with code 4 naming `CNI_COMMAND` (the spec's code
    /// for a command the plugin cannot serve, as for an unknown one) and
    /// asks for `disableCheck`, the spec's switch that stops a runtime
    /// calling CHECK for a network; [`Plugin::check`] is not called.
    Unsupported,
}

impl CheckSupport {
    /// The error the SDK answers CHECK with for
    /// [`CheckSupport::Unsupported`].
    pub fn unsupported_error() -> Error {
        Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "CNI_COMMAND=CHECK is not supported by this plugin",
        )
        .with_details(
            "set \"disableCheck\": true in the network configuration list so the runtime \
             does not call CHECK",
        )
    }
}

/// What ADD answers on success.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A result, printed in the configuration's version.
    Result(Box<CniResult>),
    /// Exactly these bytes on stdout and this exit status. An escape hatch
    /// for test doubles that must reproduce another plugin's output
    /// byte for byte; real plugins have no use for it.
    Raw {
        /// Printed verbatim.
        stdout: Vec<u8>,
        /// The process exit status.
        exit_code: i32,
    },
}

impl From<CniResult> for Reply {
    fn from(r: CniResult) -> Reply {
        Reply::Result(Box::new(r))
    }
}

impl From<Result100> for Reply {
    fn from(r: Result100) -> Reply {
        Reply::Result(Box::new(r.into()))
    }
}

/// How the configuration on stdin becomes the plugin's config value.
///
/// Implemented for [`NetConf<T>`] (serde, with `prevResult` parsed and
/// converted to the configuration's version; a malformed configuration is
/// code 6 naming the field) and for `()` (the plugin reads
/// [`Request::stdin`] itself).
pub trait FromConfig: Sized {
    /// Parses stdin.
    fn from_config(stdin: &[u8]) -> Result<Self, Error>;
}

impl<T: DeserializeOwned> FromConfig for NetConf<T> {
    fn from_config(stdin: &[u8]) -> Result<Self, Error> {
        NetConf::from_json(stdin).map_err(Error::from)
    }
}

impl FromConfig for () {
    fn from_config(_: &[u8]) -> Result<Self, Error> {
        Ok(())
    }
}
