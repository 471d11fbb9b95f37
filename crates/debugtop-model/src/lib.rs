//! debugtop's schema: what it knows about a machine, as plain data (`debugtop-model`).
//!
//! Every type that crosses a boundary lives here — the IPC contract with the UI (TypeScript is
//! generated from these with ts-rs, never copied by hand), the snapshot and fleet files, the
//! CLI's JSON, what a kill is asked and held as, and the observation the state step reads. The
//! one exception is the app's own settings file (`Settings`, in the app: no other part reads
//! it). They hold no behaviour beyond small helpers and their one wording (`Display`); nothing
//! here touches the OS, and the crate depends on no other crate of debugtop's (Cargo holds it
//! to that).

/// A type that travels as a string (its `Display` and `FromStr`): `string` in the TypeScript
/// bindings, a string with its own description (and pattern) in the JSON Schema. One
/// definition for every such identity, so the generated schemas cannot drift apart.
macro_rules! string_in_schemas {
    ($t:ty, $name:literal, $schema:tt) => {
        impl ts_rs::TS for $t {
            type WithoutGenerics = Self;
            type OptionInnerType = Self;
            fn name(_: &ts_rs::Config) -> String {
                "string".into()
            }
            fn inline(_: &ts_rs::Config) -> String {
                "string".into()
            }
        }

        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

pub mod budget;
mod delta;
pub mod error;
mod facts;
mod finding;
mod health;
mod ids;
mod kill;
mod kill_request;
mod lifecycle;
mod logs;
mod observation;
pub mod printable;
mod process;
mod progress;
mod run;
mod sessions;
mod snapshot;
mod target;
mod timeline;
mod tree;
mod update;
pub mod words;

pub use delta::{
    EnvironmentChange, Key, Keyed, SnapshotChanges, SnapshotHead, TimelineChanges, TreeRow,
    ViewMessage,
};
pub use facts::{from_log, ExitHow, Fact, FactKind, FactSource, Subject};
pub use finding::{
    group_findings, Finding, FindingGroup, FindingId, FindingKind, FindingsReport, ReportedFinding,
    Severity, FINDINGS_SCHEMA,
};
pub use health::{Health, HealthError, HttpSessionDetail, Listening};
pub use ids::{parse_pid, session_id, short, ProcId};
pub use kill::{
    ContainerStop, KillAnswer, KillMethod, KillPlan, KillReport, KillSignal, KillTarget, Outcome,
    PidOutcome, Progress, Refusal, Via,
};
pub use kill_request::{HeldPlan, KillRequest};
pub use lifecycle::{HttpEnd, SessionState};
pub use logs::{LogEvent, LogEventKind, LogOrigin, OrphanReaper, TailStats};
pub use observation::{
    Endpoints, Exit, HealthCheck, LiveTable, LogsRead, Observation, RemoteObservation, SelfInfo,
    ServerObservation, SessionLogs, LOG_BYTES_PER_USER, MAX_PROXY_LOGS, MAX_RUNS_PER_SESSION,
};
pub use process::{
    wrapper_name, Adopted, EnvMarkers, FdKind, HostKind, HostRef, Language, McpEvidence, PidNs,
    Proc, ProcFacts, ProcSample, ProcState, ProcessTable, Role, ScanStats, ServerInfo, ServerMode,
    Stdio,
};
pub use progress::{
    Asker, DebuggeeState, PendingRequest, SessionProgress, SignOfLife, Stage, StageMark,
    StartRequest, TraceState,
};
pub use run::{
    Allowance, Ancestor, CommandEnd, LeakPolicy, RunReport, RunScope, RunVerdict, ScopeKind,
    Survivor, TestName, TestRunner, LEAK_STATUS, RUN_SCHEMA, UNCHECKED_STATUS,
};
pub use sessions::{DebugSession, HttpSession};
pub use snapshot::{
    Environment, ExportFormat, LogExcerpt, ServerVersion, Snapshot, SourceKind, SourceState,
    SourceStatus, EXCERPT_CONTEXT, MAX_EXCERPTS, SCHEMA, SCHEMA_MAJOR,
};
pub use target::{
    statuses_look_alike, Capability, Hello, HelloLine, Target, TargetFailure, TargetState,
    TargetStatus, STREAM_SCHEMA,
};
pub use timeline::{TimelineEvent, TimelineKind};
pub use tree::{proc_node_id, Counterparts, NodeKind, NodeStatus, TreeNode};
pub use update::{
    audit_result, AuditResult, Fleet, FleetAudit, TargetAudit, TargetSnapshot, Update, FLEET_SCHEMA,
};

pub use error::{Error, Result};
