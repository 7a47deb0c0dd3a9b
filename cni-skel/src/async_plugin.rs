//! Plugins whose methods are `async`, served by the one dispatcher.
//!
//! A plugin process handles one command and exits, so there is nothing to
//! run concurrently with it: [`Blocking`] turns an [`AsyncPlugin`] into a
//! [`Plugin`] by blocking on each method's future, and [`run`](crate::run),
//! [`dispatch`](crate::dispatch) and [`TestRequest`](crate::TestRequest)
//! serve it exactly as they serve a sync plugin (same checks, same codes,
//! same conversion; there is no second dispatch path).
//!
//! The default executor, [`ParkThread`], parks the thread until the future
//! wakes it; it needs no runtime and adds no dependency. Futures from an
//! I/O library that drives its own reactor (`async-io`, as the agent sample
//! uses) run on it as they are. A plugin built on tokio passes its runtime
//! instead, through [`Executor`].
//!
//! Behind the `async` feature; a sync plugin compiles none of this.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use crate::{BoxError, CheckSupport, FromConfig, Plugin, Reply, Request};

/// A CNI plugin whose methods are `async`: [`Plugin`] with `async fn`s.
/// Serve it with [`Blocking`].
///
/// ```no_run
/// use cni_skel::{AsyncPlugin, Blocking, BoxError, CheckSupport, Reply, Request};
/// use cni_types::NetConf;
///
/// struct Shim;
///
/// impl AsyncPlugin for Shim {
///     type Config = NetConf;
///     // The agent keeps no state this shim could compare.
///     const CHECK: CheckSupport = CheckSupport::Unsupported;
///
///     async fn add(&self, req: &Request<'_, Self::Config>) -> Result<Reply, BoxError> {
///         // e.g. ask a local agent over a socket, awaiting its answer
///         # let _ = req;
///         Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into())
///     }
///
///     async fn del(&self, _req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
///         Ok(())
///     }
/// }
///
/// fn main() {
///     cni_skel::run(&Blocking::new(Shim), &cni_version::PluginInfo::all(), "CNI shim v1.0.0");
/// }
/// ```
// The futures are polled on the thread that created them and never sent
// elsewhere, so they need no `Send` bound (the lint's concern).
#[allow(async_fn_in_trait)]
pub trait AsyncPlugin {
    /// The configuration the plugin reads from stdin; see [`Plugin::Config`].
    type Config: FromConfig;

    /// ADD; see [`Plugin::add`].
    async fn add(&self, req: &Request<'_, Self::Config>) -> Result<Reply, BoxError>;

    /// DEL; see [`Plugin::del`].
    async fn del(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError>;

    /// What [`check`](AsyncPlugin::check) verifies; see [`Plugin::CHECK`].
    /// No default.
    const CHECK: CheckSupport;

    /// CHECK; see [`Plugin::check`]. Called unless
    /// [`CHECK`](AsyncPlugin::CHECK) is [`CheckSupport::Unsupported`]; the
    /// default body fails with code 999, as [`Plugin::check`]'s does.
    async fn check(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        let _ = req;
        Err(cni_types::Error::new(
            cni_types::Code::INTERNAL,
            format!(
                "the plugin declares CHECK support {:?} but implements no check",
                Self::CHECK
            ),
        )
        .into())
    }

    /// GC; see [`Plugin::gc`]. Succeeds with no output by default.
    async fn gc(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        let _ = req;
        Ok(())
    }

    /// STATUS; see [`Plugin::status`]. Succeeds with no output by default.
    async fn status(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        let _ = req;
        Ok(())
    }
}

/// Runs a future to completion on the calling thread.
pub trait Executor {
    /// Polls `future` until it is ready and returns its output.
    fn block_on<F: Future>(&self, future: F) -> F::Output;
}

/// The minimal executor: polls the future, and parks the thread until its
/// waker unparks it. Enough for one future at a time, which is all a
/// plugin process runs.
///
/// ```
/// use cni_skel::{Executor, ParkThread};
/// assert_eq!(ParkThread.block_on(async { 6 * 7 }), 42);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ParkThread;

/// Wakes the parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

impl Executor for ParkThread {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        loop {
            match future.as_mut().poll(&mut cx) {
                Poll::Ready(output) => return output,
                // A wake before the park leaves a token, so none is lost;
                // a spurious return only polls once more.
                Poll::Pending => thread::park(),
            }
        }
    }
}

/// An [`AsyncPlugin`] served as a [`Plugin`]: each method's future is run
/// to completion with the executor `E` ([`ParkThread`] unless given).
#[derive(Debug, Clone, Default)]
pub struct Blocking<P, E = ParkThread> {
    plugin: P,
    executor: E,
}

impl<P> Blocking<P> {
    /// `plugin` on the minimal executor, [`ParkThread`].
    pub fn new(plugin: P) -> Blocking<P> {
        Blocking::with_executor(plugin, ParkThread)
    }
}

impl<P, E> Blocking<P, E> {
    /// `plugin` on `executor`: for a tokio-based plugin, an executor whose
    /// `block_on` calls its runtime's.
    pub fn with_executor(plugin: P, executor: E) -> Blocking<P, E> {
        Blocking { plugin, executor }
    }

    /// The async plugin.
    pub fn plugin(&self) -> &P {
        &self.plugin
    }
}

impl<P: AsyncPlugin, E: Executor> Plugin for Blocking<P, E> {
    type Config = P::Config;
    const CHECK: CheckSupport = P::CHECK;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        self.executor.block_on(self.plugin.add(req))
    }

    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        self.executor.block_on(self.plugin.del(req))
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        self.executor.block_on(self.plugin.check(req))
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        self.executor.block_on(self.plugin.gc(req))
    }

    fn status(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        self.executor.block_on(self.plugin.status(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Ready once another thread has set its value, which it wakes.
    struct SetLater(Arc<Mutex<(Option<u32>, Option<Waker>)>>);

    impl Future for SetLater {
        type Output = u32;
        fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            let mut slot = self.0.lock().unwrap();
            match slot.0 {
                Some(v) => Poll::Ready(v),
                None => {
                    slot.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }

    #[test]
    fn the_minimal_executor_sleeps_until_another_thread_wakes_the_future() {
        let shared: Arc<Mutex<(Option<u32>, Option<Waker>)>> = Arc::default();
        let setter = Arc::clone(&shared);
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            let mut slot = setter.lock().unwrap();
            slot.0 = Some(7);
            if let Some(w) = slot.1.take() {
                w.wake();
            }
        });
        assert_eq!(ParkThread.block_on(SetLater(shared)), 7);
        t.join().unwrap();
    }
}
