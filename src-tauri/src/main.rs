//! The `debugtop` desktop binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

/// mimalloc: at incident scale a tick allocates and frees hundreds of thousands of small
/// strings; glibc's allocator made the same tick 1.4× slower (BENCHMARKS.md). Built without
/// its transparent huge pages (`no_thp` in the workspace's Cargo.toml): they doubled what a
/// long `watch` keeps resident.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`, by its number in mimalloc.h's `mi_option_e` (the sys
/// crate names no constant for it); a test checks that the linked mimalloc reads
/// `MIMALLOC_PURGE_DELAY` into it.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    return_freed_memory_at_once();
    debugtop_app::run();
}

/// Memory the app frees goes back to the system when freed, not a second later at
/// mimalloc's next collection on the freeing thread (the default of the mimalloc v3 built
/// here): a worker that freed a tick's peak and slept could keep it. At 5,000 orphans the app
/// holds about 10 MB less (BENCHMARKS.md). A `MIMALLOC_PURGE_DELAY` set in the environment
/// wins (mimalloc reads it at start).
fn return_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: `mi_option_set` takes any option number and value; it only stores the value.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::PURGE_DELAY;

    /// The number is mimalloc's purge delay: a child of this test, started with
    /// `MIMALLOC_PURGE_DELAY=4321`, reads that value under it.
    #[test]
    fn the_option_set_at_start_is_mimallocs_purge_delay() {
        if std::env::var_os("DEBUGTOP_PURGE_CHILD").is_some() {
            // SAFETY: reads an option's value.
            #[allow(unsafe_code)]
            let got = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
            assert_eq!(got, 4321);
            return;
        }
        let exe = std::env::current_exe().expect("this test's binary");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "tests::the_option_set_at_start_is_mimallocs_purge_delay",
            ])
            .env("MIMALLOC_PURGE_DELAY", "4321")
            .env("DEBUGTOP_PURGE_CHILD", "1")
            .output()
            .expect("run the child");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    }
}
