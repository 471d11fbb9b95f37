//! The `debugtop` desktop binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

/// mimalloc: at incident scale a tick allocates and frees hundreds of thousands of small
/// strings; glibc's allocator made the same tick 1.4× slower (BENCHMARKS.md). Built without
/// its transparent huge pages (`no_thp` in the workspace's Cargo.toml): they doubled what a
/// long `watch` keeps resident.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    debugtop_app::run();
}
