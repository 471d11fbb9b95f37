//! The `debugtop` desktop binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    debugtop_app::run();
}
