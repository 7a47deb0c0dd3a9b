//! `noop`: a drop-in replacement for the reference CNI noop test double.
#![no_main]

cni_skel::plugin_main!(noop_main);

fn noop_main() -> i32 {
    let stdin = match cni_skel::read_stdin() {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("test setup error: unable to read stdin: {e}");
            return plugins_sample::noop::SETUP_ERROR_STATUS;
        }
    };
    plugins_sample::noop::main_with(
        &cni_skel::ProcessEnv,
        &stdin,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
}
