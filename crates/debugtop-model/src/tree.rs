//! The reconciled tree: server → HTTP sessions → debug sessions → processes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::facts::Fact;
use super::ids::ProcId;
use super::lifecycle::{HttpEnd, SessionState};
use super::process::{ProcState, Role};

/// What a tree node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum NodeKind {
    /// A live mcp-debugger server.
    Server,
    /// A server that is gone (dead, or its pid now another process), kept for what it left.
    GoneServer,
    /// A server given by URL (`--server`): `/health` only.
    RemoteServer,
    /// An MCP host: a process that spawned stdio MCP servers.
    Host,
    /// A host that is gone, kept for the servers it left (or, with no pid, stdio servers whose
    /// host debugtop never saw).
    GoneHost,
    /// An HTTP session.
    HttpSession,
    /// A debug session.
    DebugSession,
    /// A process.
    Process,
}

/// A session node's status.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum NodeStatus {
    /// An HTTP session still open.
    Open,
    /// An HTTP session closed, or a debug session the log ended.
    Closed,
    /// An HTTP session reaped by the stale sweep.
    Reaped,
    /// An HTTP session reaped because its stream was lost.
    StreamLost,
    /// A debug session in this state.
    Created,
    /// Setting up.
    Initializing,
    /// Ready.
    Ready,
    /// Running.
    Running,
    /// Paused.
    Paused,
    /// Stopped.
    Stopped,
    /// Error.
    Error,
    /// Not known (known only from its processes).
    Unknown,
}

impl From<SessionState> for NodeStatus {
    fn from(s: SessionState) -> Self {
        match s {
            SessionState::Created => Self::Created,
            SessionState::Initializing => Self::Initializing,
            SessionState::Ready => Self::Ready,
            SessionState::Running => Self::Running,
            SessionState::Paused => Self::Paused,
            SessionState::Stopped => Self::Stopped,
            SessionState::Error => Self::Error,
            SessionState::Unknown => Self::Unknown,
        }
    }
}

impl From<HttpEnd> for NodeStatus {
    fn from(e: HttpEnd) -> Self {
        match e {
            HttpEnd::Closed => Self::Closed,
            HttpEnd::Reaped => Self::Reaped,
            HttpEnd::StreamLost => Self::StreamLost,
        }
    }
}

/// A node of the reconciled tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TreeNode {
    /// Stable id: `server:<pid>`, `gone:<pid>`, `remote:<url>`, `http:<id>`, `debug:<id>`,
    /// `proc:<pid>.<start ticks>`.
    pub id: String,
    /// What it is.
    pub kind: NodeKind,
    /// Short text (for processes: the command line).
    pub label: String,
    /// The process (process and server nodes).
    pub pid: Option<u32>,
    /// Its role (process nodes).
    pub role: Option<Role>,
    /// Its scheduler state (process nodes).
    pub state: Option<ProcState>,
    /// The debug session, where known.
    pub session_id: Option<String>,
    /// Session nodes: their status.
    pub status: Option<NodeStatus>,
    /// What is known about this node, with sources.
    pub facts: Vec<Fact>,
    /// Children.
    // Shared: a subtree that did not change between two steps is the same allocation in
    // both (`state::reuse::share`), so copying, redacting and diffing it is a pointer operation.
    pub children: Vec<Arc<TreeNode>>,
}

impl TreeNode {
    /// A node without children or facts.
    pub fn new(id: String, kind: NodeKind, label: String) -> Self {
        Self {
            id,
            kind,
            label,
            pid: None,
            role: None,
            state: None,
            session_id: None,
            status: None,
            facts: Vec::new(),
            children: Vec::new(),
        }
    }

    /// A copy of this node alone (its children not copied: `clone` would copy the subtree).
    pub fn without_children(&self) -> Self {
        let Self {
            id,
            kind,
            label,
            pid,
            role,
            state,
            session_id,
            status,
            facts,
            children: _,
        } = self;
        Self {
            id: id.clone(),
            kind: *kind,
            label: label.clone(),
            pid: *pid,
            role: *role,
            state: *state,
            session_id: session_id.clone(),
            status: *status,
            facts: facts.clone(),
            children: Vec::new(),
        }
    }

    /// Equal to `other` in every field but the children.
    pub fn same_row(&self, other: &Self) -> bool {
        let Self {
            id,
            kind,
            label,
            pid,
            role,
            state,
            session_id,
            status,
            facts,
            children: _,
        } = self;
        *id == other.id
            && *kind == other.kind
            && *label == other.label
            && *pid == other.pid
            && *role == other.role
            && *state == other.state
            && *session_id == other.session_id
            && *status == other.status
            && *facts == other.facts
    }

    /// Depth-first iterator over this node and its descendants.
    pub fn walk(&self) -> Vec<&TreeNode> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }
}

impl AsRef<TreeNode> for TreeNode {
    fn as_ref(&self) -> &TreeNode {
        self
    }
}

/// Last tick's counterparts of a node's children, by id: the same position first (a tree
/// rarely reorders), else an index built on first need.
#[derive(Debug)]
pub struct Counterparts<'a> {
    old: &'a [Arc<TreeNode>],
    index: Option<std::collections::HashMap<&'a str, &'a Arc<TreeNode>>>,
}

impl<'a> Counterparts<'a> {
    /// Over last tick's children (or roots).
    pub fn new(old: &'a [Arc<TreeNode>]) -> Self {
        Self { old, index: None }
    }

    /// The old node with this id, for the new node at position `at`.
    pub fn of(&mut self, at: usize, id: &str) -> Option<&'a Arc<TreeNode>> {
        if let Some(o) = self.old.get(at).filter(|o| o.id == id) {
            return Some(o);
        }
        let old = self.old;
        self.index
            .get_or_insert_with(|| old.iter().rev().map(|o| (o.id.as_str(), o)).collect())
            .get(id)
            .copied()
    }
}

/// The id of a process node.
pub fn proc_node_id(id: ProcId) -> String {
    format!("proc:{id}")
}
