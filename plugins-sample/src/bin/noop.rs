//! `noop`: a drop-in replacement for the reference CNI noop test double.

fn main() {
    let stdin = match cni_skel::read_stdin() {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("test setup error: unable to read stdin: {e}");
            std::process::exit(plugins_sample::noop::SETUP_ERROR_STATUS);
        }
    };
    let code = plugins_sample::noop::main_with(
        &cni_skel::ProcessEnv,
        &stdin,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
