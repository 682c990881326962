use clap::Parser;

/// YAML parsing allocates a great deal: with glibc's allocator a quarter of a large run's
/// time went to malloc and free (musl's is slower still). docs/performance.md has the figures.
/// The `system-allocator` feature leaves it out, for heap profilers that watch `malloc`.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The one place the process exits (clippy.toml): everything below returns an exit code.
#[allow(clippy::disallowed_methods)]
fn main() {
    // First: under a small address space, the first allocation may be what aborts.
    if let Err(code) = imagebump::limits::check_at_start() {
        std::process::exit(code);
    }
    let cli = imagebump::cli::Cli::parse();
    std::process::exit(imagebump::app::main(cli));
}
