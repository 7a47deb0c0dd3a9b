//! `dhcp`: a drop-in for the reference `dhcp` IPAM plugin and its daemon.
//! `dhcp daemon [flags]` runs the daemon (the reference's flags:
//! `-socketpath`, `-hostprefix`, `-broadcast`, `-timeout`, `-resendmax`,
//! `-resendtimeout`, `-pidfile`); anything else is the plugin, which asks
//! the daemon. Where it differs from the reference is in `cni_dhcp`'s
//! crate documentation.

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("daemon") {
        let outcome =
            cni_dhcp::daemon::DaemonOptions::from_args(args).and_then(cni_dhcp::daemon::run);
        if let Err(e) = outcome {
            eprintln!("dhcp daemon: {e}");
            std::process::exit(1);
        }
        return;
    }
    cni_skel::run(
        &cni_dhcp::DhcpPlugin,
        &cni_version::PluginInfo::all(),
        "CNI dhcp plugin v0.1.0 (cni-rs)",
    );
}
