//! IPAM alongside the link: the one place where an interface plugin's ADD
//! and DEL run their IPAM plugin at the same time as their own kernel
//! work, and undo the other side when one fails.
//!
//! An interface plugin's link needs nothing from IPAM until its addresses
//! go on, and the IPAM plugin is a process of about a millisecond; the
//! kernel's link creation (or deletion) takes as long again. Running both
//! at once is what keeps a burst of pods near the kernel's own cost, and
//! doing it here keeps it out of every plugin's ADD.

use cni_skel::{BoxError, Request, Teardown, Undo};
use cni_types::{CniResult, Error};

use crate::{delegate_add, delegate_del};

/// The delegated ADD of `ipam` (the IPAM plugin's type), its release
/// pushed on `undo`: the sequential form of [`add_alongside`], for a
/// plugin whose link needs IPAM's result before it exists.
///
/// Go: `ipam.ExecAdd` followed by a deferred `ipam.ExecDel` on failure,
/// as the reference `bridge` writes it.
pub fn add_ipam<'a, C: Sync + 'a>(
    ipam: &'a str,
    req: &'a Request<'_, C>,
    undo: &mut Undo<'a>,
) -> Result<CniResult, Error> {
    let result = delegate_add(ipam, req)?;
    push_release(ipam, req, undo);
    Ok(result)
}

fn push_release<'a, C: Sync + 'a>(ipam: &'a str, req: &'a Request<'_, C>, undo: &mut Undo<'a>) {
    undo.push(format!("releasing the addresses of {ipam}"), move || {
        Ok(delegate_del(ipam, req)?)
    });
}

/// When both sides of [`add_alongside`] fail, whose error a runtime
/// sees: the side the reference plugin runs first, so a repeated ADD
/// fails with the reference's error (`bridge` makes the pair first and
/// says the name is taken; `ptp` runs IPAM first and says the attachment
/// holds an address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstError {
    /// The link's error.
    Link,
    /// IPAM's error.
    Ipam,
}

/// ADD of an interface plugin's link and of its IPAM at once: `make`
/// (which creates what needs nothing from IPAM and pushes how to undo it
/// on the stack it is given) runs on a second thread while the delegated
/// ADD of `ipam` runs on this one. Both undo stacks end on `undo`, the
/// IPAM release on top, so a later failure of the ADD undoes both.
///
/// When one side fails its error is returned (when both fail, the one
/// `first` names) and the side that succeeded is undone by the caller's
/// [`Undo`]. A failed delegated ADD pushes no release: what the IPAM
/// plugin holds then is an earlier ADD's (see [`crate::add_with_cleanup`]
/// on why that keeps live attachments safe).
///
/// ```no_run
/// use cni_invoke::FirstError;
/// use cni_skel::{BoxError, Reply, Request, Undo};
/// use cni_types::NetConf;
///
/// fn add(req: &Request<NetConf>) -> Result<Reply, BoxError> {
///     Undo::scope(|undo| {
///         let (link, ipam_result) =
///             cni_invoke::add_alongside("host-local", req, undo, FirstError::Ipam, |undo| {
///                 let link = "eth0-made-here"; // create the link (netlink)
///                 undo.push("deleting the link", move || Ok(())); // ... and how to delete it
///                 Ok(link)
///             })?;
///         let result = ipam_result.to_current()?; // its addresses on `link` ...
///         Ok(result.into())
///     })
/// }
/// ```
///
/// Go: none; the reference runs `ipam.ExecAdd` before or after making
/// the link and defers `ipam.ExecDel` and the link's deletion by hand in
/// each plugin.
pub fn add_alongside<'a, C, T, F>(
    ipam: &'a str,
    req: &'a Request<'_, C>,
    undo: &mut Undo<'a>,
    first: FirstError,
    make: F,
) -> Result<(T, CniResult), BoxError>
where
    C: Sync + 'a,
    T: Send,
    F: FnOnce(&mut Undo<'a>) -> Result<T, BoxError> + Send,
{
    add_alongside_then(ipam, req, undo, first, make, |result, _| Ok(result))
}

/// [`add_alongside`] with more work on IPAM's side: `then` is given the
/// IPAM plugin's result (and the stack, to push its own undo) as soon as
/// it is there, while `make` may still run; `bridge` masquerades the
/// addresses there. A failure of `then` counts as IPAM's.
pub fn add_alongside_then<'a, C, T, U, F, G>(
    ipam: &'a str,
    req: &'a Request<'_, C>,
    undo: &mut Undo<'a>,
    first: FirstError,
    make: F,
    then: G,
) -> Result<(T, U), BoxError>
where
    C: Sync + 'a,
    T: Send,
    F: FnOnce(&mut Undo<'a>) -> Result<T, BoxError> + Send,
    G: FnOnce(CniResult, &mut Undo<'a>) -> Result<U, BoxError>,
{
    let mut ipam_undo = Undo::new();
    let (made, made_undo, reserved) = std::thread::scope(|scope| {
        let making = scope.spawn(|| {
            let mut undo = Undo::new();
            let made = make(&mut undo);
            (made, undo)
        });
        let reserved = add_ipam(ipam, req, &mut ipam_undo)
            .map_err(BoxError::from)
            .and_then(|result| then(result, &mut ipam_undo));
        let (made, made_undo) = making
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (made, made_undo, reserved)
    });
    undo.append(made_undo);
    undo.append(ipam_undo);
    match (made, reserved, first) {
        (Ok(made), Ok(kept), _) => Ok((made, kept)),
        (Err(e), Ok(_), _) | (Err(e), Err(_), FirstError::Link) => Err(e),
        (_, Err(e), _) => Err(e),
    }
}

/// DEL of an interface plugin's link and of its IPAM at once: `remove`
/// runs on a second thread while the delegated DEL of `ipam` (when there
/// is one) runs on this one ([`Teardown::alongside`]); both failures are
/// kept on `teardown`, and `remove`'s value is returned when it
/// succeeded. The reservation goes whatever became of the link, and the
/// kernel's tens of milliseconds deleting a link are not added to IPAM's.
///
/// Not for a plugin whose IPAM needs the link during its DEL: `dhcp`
/// sends its DHCPRELEASE from the container's link, so a link plugin
/// paired with it runs IPAM's DEL first (`cni_net::link_plugin::del`).
///
/// Go: none; the reference's `cmdDel` runs `ipam.ExecDel` and then
/// deletes the link, returning at the first failure.
pub fn del_alongside<C, T, F>(
    ipam: Option<&str>,
    req: &Request<'_, C>,
    teardown: &mut Teardown,
    remove: F,
) -> Option<T>
where
    T: Send,
    F: FnOnce() -> Result<T, BoxError> + Send,
{
    let Some(ipam) = ipam else {
        return teardown.keep("removing the interface", remove());
    };
    teardown.alongside("removing the interface", remove, |here| {
        here.keep("releasing the addresses", delegate_del(ipam, req));
    })
}
