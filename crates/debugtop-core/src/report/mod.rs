//! Reports: the snapshot as people read it outside the app (the Markdown incident report).

pub mod markdown;
pub mod notices;
