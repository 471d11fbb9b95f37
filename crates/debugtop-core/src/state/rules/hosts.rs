//! Stdio processes whose host is gone: MCP servers (critical), and anything else nobody can
//! reach over its stdio any more (a warning). The leak is the fact; the name is a label.

use super::{about, Candidate, Ctx, NAME_CHARS};
use crate::model::{
    wrapper_name as wrapper, ContainerStop, FdKind, FindingKind, KillPlan, McpEvidence, Proc, Role,
    Severity,
};
use crate::redact::CommandLines;

/// A live stdio MCP server nobody can write to any more: no process holds the writing end of
/// its stdin pipe, and its host (if debugtop saw one) is gone. Well-behaved servers exit on
/// stdin EOF within seconds; the grace leaves them that time.
pub fn orphaned_server(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx
        .procs()
        .filter(|p| is_orphaned_server(ctx, p) && container_of(p).is_none())
    {
        let Some(channel) = p.channel else {
            continue;
        };
        let mcp_debugger = ctx.world.server(p.pid).is_some();
        let mut f = about(
            FindingKind::OrphanedServer,
            Severity::Critical,
            p,
            ctx.now(),
        );
        let root = chain_root(ctx, p);
        f.server_pid = Some(p.pid);
        f.evidence = evidence(ctx, p, channel, mcp_debugger);
        f.evidence
            .extend(wrapper_line(p, root, ctx.command_lines()));
        f.suggested_action = format!(
            "kill MCP server {}, its process group and what it started{}: nothing can reach it",
            p.pid,
            if root.pid == p.pid {
                String::new()
            } else {
                format!(", from its wrapper {} down", root.pid)
            }
        );
        f.plan = Some(chain_plan(
            ctx,
            &Chain {
                root,
                server: Some(p),
            },
        ));
        out.push(Candidate {
            hold_grace: true,
            ..Candidate::new(f)
        });
    }
    out
}

/// A container whose main process is a stdio MCP server nobody can reach: the `docker run -i`
/// (or `docker attach`) client that wrote to it is gone — the runtime closed the container's
/// stdin when it left — and the server ignored the end of its input (upstream's own leak: 98
/// containers on one machine). Its plan ends the container through docker, once docker names
/// the same main process.
pub fn orphaned_container(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx.procs().filter(|p| is_orphaned_server(ctx, p)) {
        let (Some(id), Some(channel)) = (container_of(p), p.channel) else {
            continue;
        };
        let mut f = about(
            FindingKind::OrphanedContainer,
            Severity::Critical,
            p,
            ctx.now(),
        );
        f.server_pid = Some(p.pid);
        f.evidence = vec![
            unreachable_line(p, channel, ctx.command_lines()),
            format!(
                "it is the main process of container {id} (pid 1 there); the client that ran \
                 it (`docker run -i`, `docker attach`) is gone: the runtime closed the \
                 container's stdin when it left, and the server ignored the end of its input"
            ),
            mcp_line(p, ctx.world.server(p.pid).is_some()),
        ];
        f.evidence.extend(children_line(ctx, p));
        f.suggested_action = format!("docker kill {id}: nothing can reach the MCP server it runs");
        f.plan = Some(chain_plan(
            ctx,
            &Chain {
                root: p,
                server: Some(p),
            },
        ));
        out.push(Candidate {
            hold_grace: true,
            ..Candidate::new(f)
        });
    }
    out
}

/// The container whose main process (pid 1 of its pid namespace) `p` is, by the id its cgroup
/// names.
fn container_of(p: &Proc) -> Option<&str> {
    p.ns.as_ref()
        .filter(|ns| ns.pid == 1)
        .and_then(|ns| ns.container.as_deref())
        .filter(|id| ContainerStop::valid_id(id))
}

/// A stdio MCP server (or mcp-debugger in stdio mode) nobody can reach any more: nobody holds
/// the other end of its channel — or, where that cannot be checked, the parent that made the
/// pipe is gone — and its remembered host is not alive.
fn is_orphaned_server(ctx: &Ctx<'_>, p: &Proc) -> bool {
    let unreachable = if p.stdin_unchecked {
        parent_gone(ctx, p)
    } else {
        p.stdin_holders.as_ref().is_some_and(Vec::is_empty)
    };
    p.role == Role::Server
        && p.sample.state.is_alive()
        && p.channel.is_some()
        && unreachable
        && (p.mcp.is_some() || ctx.world.server(p.pid).is_some())
        && !host_alive(ctx, p)
}

/// The root of a leaked chain with nothing MCP in it: adopted, nobody at the other end of its
/// stdio, standing for itself.
fn is_stdio_root(p: &Proc) -> bool {
    p.sample.state.is_alive()
        && matches!(p.role, Role::Wrapper | Role::Other)
        && p.server_pid == Some(p.pid)
        && p.adopted.is_some()
        && p.stdin_holders.as_ref().is_some_and(Vec::is_empty)
}

/// A leaked stdio chain: its topmost process, and the MCP server in it when there is one.
pub struct Chain<'a> {
    /// The topmost process (a wrapper, the server itself, or a nameless root).
    pub root: &'a Proc,
    /// The MCP server in it.
    pub server: Option<&'a Proc>,
}

/// The leaked stdio chain `p` belongs to (as its root, a wrapper, its server or something it
/// started), if any.
pub fn leaked_chain<'a>(ctx: &'a Ctx<'_>, p: &'a Proc) -> Option<Chain<'a>> {
    let key = ctx.world.proc(p.server_pid?)?;
    if is_orphaned_server(ctx, key) {
        Some(Chain {
            root: chain_root(ctx, key),
            server: Some(key),
        })
    } else {
        is_stdio_root(key).then_some(Chain {
            root: key,
            server: None,
        })
    }
}

/// The plan that ends a leaked chain, about its root (everything in it descends from the root;
/// the server is named too: following relations never takes a server by itself). Short (SIGKILL
/// after a second) when its root or server spins: a process looping on a closed pipe ignores
/// SIGTERM as often as not — and then the `spinning` finding's plan is this very plan.
pub fn chain_plan(ctx: &Ctx<'_>, chain: &Chain<'_>) -> KillPlan {
    let spins = |p: &Proc| {
        p.sample
            .cpu_percent
            .is_some_and(|c| c >= ctx.config.spin_cpu)
    };
    let short = spins(chain.root) || chain.server.is_some_and(spins);
    let mut pids = vec![chain.root.pid];
    pids.extend(chain.server.map(|s| s.pid).filter(|s| *s != chain.root.pid));
    let mut plan = ctx.plan(chain.root, &pids, short);
    // A container's main process: ended through docker first.
    plan.container = container_of(chain.root).map(|id| ContainerStop {
        id: id.to_owned(),
        main_pid: chain.root.pid,
        main_start_ticks: chain.root.start_ticks,
    });
    plan
}

/// A process nobody can reach over its stdio (no process holds the other end of its stdin, or
/// of its stdout), whose parent is gone (re-parented to init, adopted by a subreaper), with
/// nothing saying it is an MCP server: a warning, its whole chain in the plan. (An MCP server
/// under it makes the chain an `orphaned-server`.)
pub fn orphaned_stdio(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx.procs().filter(|p| is_stdio_root(p)) {
        let (Some(channel), Some(adopted)) = (p.channel, &p.adopted) else {
            continue;
        };
        let mut f = about(FindingKind::OrphanedStdio, Severity::Warning, p, ctx.now());
        f.server_pid = Some(p.pid);
        let name = ctx.command_lines().text(&p.argv, NAME_CHARS);
        let reads = p.stdio.is_some_and(|io| io.stdin == channel);
        f.evidence = vec![
            format!(
                "process {} ({name}): {}",
                p.pid,
                if reads {
                    format!("no process holds {}, so nothing can write to it", far_end(channel))
                } else {
                    format!("no process reads its stdout ({}), so what it writes goes nowhere", link(channel))
                }
            ),
            format!("its parent is gone: it was {adopted} (parent now pid {})", p.ppid),
            "nothing says it is an MCP server (no MCP in its command line, package, script or environment)".into(),
        ];
        f.evidence.extend(children_line(ctx, p));
        f.suggested_action = format!(
            "kill process {} and what it started: nothing can write to it; its parent is gone",
            p.pid
        );
        f.plan = Some(chain_plan(
            ctx,
            &Chain {
                root: p,
                server: None,
            },
        ));
        out.push(Candidate {
            hold_grace: true,
            ..Candidate::new(f)
        });
    }
    out
}

/// The topmost process of a server's leaked chain: its wrappers above it (npx, `sh -c`) that
/// the table ties to it, up to the first that is not.
fn chain_root<'a>(ctx: &'a Ctx<'_>, p: &'a Proc) -> &'a Proc {
    let mut root = p;
    for _ in 0..8 {
        match ctx.world.proc(root.ppid) {
            Some(q)
                if q.sample.state.is_alive()
                    && matches!(q.role, Role::Wrapper | Role::Other)
                    && q.server_pid == Some(p.pid)
                    && q.start_time <= root.start_time =>
            {
                root = q;
            }
            _ => break,
        }
    }
    root
}

/// What the server was started through, when a wrapper is the chain's root.
fn wrapper_line(p: &Proc, root: &Proc, lines: CommandLines) -> Option<String> {
    (root.pid != p.pid).then(|| {
        let through = wrapper(&root.argv).unwrap_or("a launcher");
        let name = lines.text(&root.argv, NAME_CHARS);
        let adopted = root
            .adopted
            .as_ref()
            .map(|a| format!(", {a}"))
            .unwrap_or_default();
        format!(
            "started through {through}: pid {} ({name}){adopted}",
            root.pid
        )
    })
}

/// The far end of a channel, in words.
fn far_end(channel: FdKind) -> String {
    match channel {
        FdKind::Pipe { .. } => format!("the writing end of its stdin pipe ({})", link(channel)),
        _ => format!("the other end of its stdin ({})", link(channel)),
    }
}

fn link(channel: FdKind) -> String {
    match channel {
        FdKind::Pipe { inode } => format!("pipe:[{inode}]"),
        FdKind::Socket { inode } => format!("socket:[{inode}]"),
        _ => "its stdio".into(),
    }
}

/// Its live children, when it has any.
fn children_line(ctx: &Ctx<'_>, p: &Proc) -> Option<String> {
    let kids: Vec<String> = ctx
        .procs()
        .filter(|q| q.ppid == p.pid && q.sample.state.is_alive())
        .map(|q| q.pid.to_string())
        .collect();
    (!kids.is_empty()).then(|| format!("still running under it: {}", kids.join(", ")))
}

/// Its parent is not a live process created before it (on a system that never re-parents, the
/// parent pid it was started with names a gone process, or a younger one that reused it).
fn parent_gone(ctx: &Ctx<'_>, p: &Proc) -> bool {
    !ctx.world
        .proc(p.ppid)
        .is_some_and(|q| q.sample.state.is_alive() && q.start_time <= p.start_time)
}

/// Its remembered host is alive, the same process, and still its parent.
fn host_alive(ctx: &Ctx<'_>, p: &Proc) -> bool {
    live_host(ctx, p).is_some()
}

/// Its remembered host, when that host is alive, the same process, and still its parent.
pub fn live_host<'a>(ctx: &Ctx<'_>, p: &'a Proc) -> Option<&'a crate::model::HostRef> {
    p.host.as_ref().filter(|h| {
        h.pid == p.ppid
            && ctx
                .world
                .proc(h.pid)
                .is_some_and(|q| q.start_ticks == h.start_ticks && q.sample.state.is_alive())
    })
}

fn evidence(ctx: &Ctx<'_>, p: &Proc, channel: FdKind, mcp_debugger: bool) -> Vec<String> {
    let mut e = vec![
        unreachable_line(p, channel, ctx.command_lines()),
        host_line(p, ctx.command_lines()),
        mcp_line(p, mcp_debugger),
    ];
    if p.stdio.is_some_and(|x| x.stdout.is_channel()) {
        e.push("its stdout leads to the gone host too: what it answers goes nowhere".into());
    }
    e.extend(children_line(ctx, p));
    e
}

/// Why nothing can reach it: nobody holds the other end of its channel — or, where that cannot
/// be checked, which check was not possible.
fn unreachable_line(p: &Proc, channel: FdKind, lines: CommandLines) -> String {
    let name = lines.text(&p.argv, NAME_CHARS);
    let end = match channel {
        // Inode 0: a system without pipe inodes (Windows).
        FdKind::Pipe { inode: 0 } => "the writing end of its stdio pipe".to_owned(),
        FdKind::Pipe { inode } => format!("the writing end of its stdio pipe (pipe:[{inode}])"),
        FdKind::Socket { inode } => format!("the other end of its stdio socket (socket:[{inode}])"),
        _ => "the other end of its stdio".to_owned(),
    };
    if p.stdin_unchecked {
        format!(
            "stdio MCP server {} ({name}): who holds {end} cannot be checked here (enumerating \
             other processes' handles takes rights a normal user lacks), so this rests on its \
             host being gone",
            p.pid
        )
    } else {
        format!(
            "stdio MCP server {} ({name}): no process holds {end}, so no request can ever reach it",
            p.pid
        )
    }
}

/// Its host, gone.
fn host_line(p: &Proc, lines: CommandLines) -> String {
    match &p.host {
        Some(h) => format!(
            "its {} host {} ({}) is gone; its parent is now pid {}",
            h.kind.title(),
            h.pid,
            lines.text(&h.argv, NAME_CHARS),
            p.ppid
        ),
        None if p.stdin_unchecked => {
            format!("the process that started it (pid {}) is gone", p.ppid)
        }
        None => format!(
            "its parent is pid {}{}, which does not write to it",
            p.ppid,
            match &p.adopted {
                Some(a) => format!(" ({a})"),
                None if p.ppid == 1 => " (init: it was re-parented)".into(),
                None => String::new(),
            }
        ),
    }
}

/// Why it is an MCP server.
fn mcp_line(p: &Proc, mcp_debugger: bool) -> String {
    match (&p.mcp, mcp_debugger) {
        (_, true) => "it is an mcp-debugger server in stdio mode".into(),
        (Some(McpEvidence::Argv { arg }), _) => {
            format!("it is an MCP server: its command line names {arg}")
        }
        (Some(McpEvidence::Package { file, says }), _) => {
            format!("it is an MCP server: {file} — {says}")
        }
        (Some(McpEvidence::HostChild), _) | (None, false) => {
            "it is an MCP server: its host talked to it over stdin and stdout".into()
        }
    }
}
