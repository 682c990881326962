//! The operator's limits on the process (`ulimit -v`, `ulimit -f`, systemd's `LimitAS=`):
//! a run under them ends with a message that names the limit, never with a silent abort or
//! a signal.
//!
//! Address space: the allocator reserves address space per thread (far more than it
//! uses), so under a small `RLIMIT_AS` the first allocation that does not fit aborts the
//! process. A run therefore starts only with [`MIN_ADDRESS_SPACE`], and takes fewer threads
//! than it has cores when the limit would not hold one reservation per core. A container's
//! memory limit (a cgroup) counts what is used, not what is reserved, and needs none of
//! this.

use std::io::Write as _;
use std::sync::OnceLock;

use rustix::process::{getrlimit, Resource};

const MIB: u64 = 1 << 20;

/// The least address space a run starts in: the program, its first threads and their
/// allocator reservations.
pub const MIN_ADDRESS_SPACE: u64 = 256 * MIB;

/// The address space each thread beyond the first may take: its stack, and what the
/// allocator reserves for it.
const PER_THREAD: u64 = 128 * MIB;

/// The soft address-space limit (`None`: unlimited), read once.
pub fn address_space() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(|| getrlimit(Resource::As).current)
}

/// How many threads a parallel step may take within the address space: `cores` when it is
/// unlimited, fewer under a limit (at least one).
pub fn threads(cores: usize) -> usize {
    threads_within(address_space(), cores)
}

fn threads_within(limit: Option<u64>, cores: usize) -> usize {
    let Some(limit) = limit else {
        return cores;
    };
    let extra = limit.saturating_sub(MIN_ADDRESS_SPACE) / PER_THREAD;
    let fit = usize::try_from(extra)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    cores.min(fit).max(1)
}

/// First thing in `main`: `Err` with the exit code when the address space is too small to
/// run in, after saying so on stderr (written without allocating: an allocation might be
/// what does not fit). Below what Rust's runtime needs to reach `main`, the runtime's own
/// "memory allocation failed" is all there can be.
pub fn check_at_start() -> Result<(), i32> {
    match address_space() {
        Some(limit) if limit < MIN_ADDRESS_SPACE => {
            let _ = writeln!(
                std::io::stderr(),
                "error: the address space is limited to {} MiB (ulimit -v, RLIMIT_AS); imagebump needs at least {} MiB: raise the limit, or bound memory with a container's memory limit, which counts what is used rather than what is reserved",
                limit / MIB,
                MIN_ADDRESS_SPACE / MIB
            );
            Err(imagebump_model::exit::USAGE)
        }
        _ => Ok(()),
    }
}

/// A write past the file-size limit (`ulimit -f`) then fails with `EFBIG`, which the
/// writer reports with its file (and a temporary file is removed), instead of `SIGXFSZ`
/// ending the process with no word. The handler Tokio installs stays for the life of the
/// process; programs imagebump starts (git) get the default action back when they start.
/// Called inside the runtime.
pub fn catch_file_size_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let xfsz = SignalKind::from_raw(rustix::process::Signal::XFSZ.as_raw());
    if let Err(e) = signal(xfsz) {
        tracing::warn!("cannot catch SIGXFSZ ({e}): a write past ulimit -f ends the process");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_shrink_with_the_address_space_down_to_one() {
        assert_eq!(threads_within(None, 64), 64);
        assert_eq!(threads_within(Some(MIN_ADDRESS_SPACE), 64), 1);
        assert_eq!(threads_within(Some(MIN_ADDRESS_SPACE - 1), 64), 1);
        assert_eq!(
            threads_within(Some(MIN_ADDRESS_SPACE + 3 * PER_THREAD), 64),
            4
        );
        assert_eq!(threads_within(Some(u64::MAX), 8), 8);
        assert_eq!(threads_within(Some(MIN_ADDRESS_SPACE), 0), 1);
    }
}
