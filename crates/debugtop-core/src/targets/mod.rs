//! Targets beyond this machine. Each is a command the user already has — `ssh`, `docker exec`,
//! `kubectl exec`, any command — that runs `debugtop-cli` on the far side; debugtop never opens
//! a port of its own. This module builds that command (`command`), checks who answered
//! (`hello`), runs one remote action (`once`: audit, kill, snapshot) and keeps a live stream of
//! updates with backoff and staleness (`stream`). Everything the far side prints is data: every
//! line is capped, every wait has a deadline, every failure is worded.

pub mod command;
pub mod hello;
pub mod once;
pub mod stream;

pub use command::{
    classify, invocation, Engines, Invocation, DOCKER_COMMAND_ENV, KUBECTL_COMMAND_ENV,
    SSH_COMMAND_ENV,
};
pub use hello::{check_hello, hello_line, local_hello};
pub use once::{run_once, Answer};
pub use stream::{spawn_stream, stream_command, Feed, StreamConfig, TargetFeed};

/// The longest line a far side may send (a snapshot of a very busy machine is a few MiB).
pub const MAX_LINE: u64 = 64 << 20;
