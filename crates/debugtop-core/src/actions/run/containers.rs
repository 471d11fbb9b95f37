//! Containers a `docker run` inside the command started: their processes descend from the
//! container engine, not from the command, so no cgroup or subreaper of the run holds them. A
//! run ties a container to its own `docker run` client when the engine, asked about it, names
//! the same main process, image, name (when the client gave one) and command (when the client
//! gave one), and the container's main process started while that client ran. Containers are
//! found as the engine finds them (the id in each process's cgroup path); every process of a
//! tied container is then one of the run's, ended through the engine first.

use std::collections::HashMap;

use serde_json::Value;

use super::lineage::Lineage;
use crate::collect::scope::{self, Contained, Member};
use crate::model::{ContainerStop, ProcId};
use crate::targets::command::DOCKER_COMMAND_ENV;

/// The client's environment that says which engine it talks to.
const ENGINE_ENV: [&str; 2] = ["DOCKER_HOST", "DOCKER_CONTEXT"];

/// A `docker run` command line, as far as the tie needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerRun {
    /// The image, as the client names it (the engine keeps it so in `Config.Image`).
    pub image: String,
    /// `--name`, when given.
    pub name: Option<String>,
    /// The command after the image, when given (the engine's `Config.Cmd`).
    pub command: Vec<String>,
    /// The client's own engine options (`-H`, `--host`, `-c`, `--context`), with their values.
    pub engine_args: Vec<String>,
}

/// The docker client's options that take a value, before its subcommand.
const GLOBAL_VALUED: [&str; 10] = [
    "--config",
    "-c",
    "--context",
    "-H",
    "--host",
    "-l",
    "--log-level",
    "--tlscacert",
    "--tlscert",
    "--tlskey",
];

/// `docker run`'s options that take no value (every other option takes one).
const RUN_FLAGS: [&str; 20] = [
    "-d",
    "--detach",
    "-i",
    "--interactive",
    "-t",
    "--tty",
    "--rm",
    "--init",
    "--privileged",
    "-P",
    "--publish-all",
    "--read-only",
    "--no-healthcheck",
    "--oom-kill-disable",
    "-q",
    "--quiet",
    "--help",
    "--disable-content-trust",
    "--sig-proxy",
    "--use-api-socket",
];

/// The one-letter flags that may be bundled (`-dit`).
const SHORT_FLAGS: &str = "dit Pq";

impl DockerRun {
    /// `argv` as `docker [GLOBAL…] run|container run [OPTIONS] IMAGE [COMMAND…]`, else `None`.
    pub fn parse(argv: &[String]) -> Option<Self> {
        let (program, rest) = argv.split_first()?;
        let base = program.rsplit('/').next().unwrap_or(program);
        if base != "docker" {
            return None;
        }
        let (engine_args, at) = global_options(rest);
        let rest = &rest[at..];
        let rest = match rest {
            [run, rest @ ..] if run == "run" => rest,
            [c, run, rest @ ..] if c == "container" && run == "run" => rest,
            _ => return None,
        };
        run_options(rest, engine_args)
    }
}

/// The client's options before its subcommand: the engine ones kept, and where they end.
fn global_options(words: &[String]) -> (Vec<String>, usize) {
    let mut kept = Vec::new();
    let mut i = 0;
    while let Some(w) = words.get(i).filter(|w| w.starts_with('-')) {
        let name = w.split('=').next().unwrap_or(w);
        let engine = ["-H", "--host", "-c", "--context"].contains(&name);
        let takes_next = GLOBAL_VALUED.contains(&w.as_str());
        if engine {
            kept.push(w.clone());
            if let (true, Some(v)) = (takes_next, words.get(i + 1)) {
                kept.push(v.clone());
            }
        }
        i += if takes_next { 2 } else { 1 };
    }
    (kept, i)
}

/// `run`'s options, then the image and the command.
fn run_options(words: &[String], engine_args: Vec<String>) -> Option<DockerRun> {
    let mut name = None;
    let mut i = 0;
    while let Some(w) = words.get(i).filter(|w| w.starts_with('-')) {
        if w == "--" {
            i += 1;
            break;
        }
        let (opt, inline) = match w.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v)),
            _ => (w.as_str(), None),
        };
        let flag = RUN_FLAGS.contains(&opt)
            || (opt.len() > 2
                && !opt.starts_with("--")
                && opt[1..].chars().all(|c| SHORT_FLAGS.contains(c)));
        let value = match (flag, inline) {
            (true, _) => None,
            (false, Some(v)) => Some(v.to_owned()),
            (false, None) if opt.len() > 2 && !opt.starts_with("--") => Some(opt[2..].to_owned()),
            (false, None) => {
                i += 1;
                Some(words.get(i)?.clone())
            }
        };
        if opt == "--name" {
            name = value;
        }
        i += 1;
    }
    let (image, command) = words.get(i..)?.split_first()?;
    Some(DockerRun {
        image: image.clone(),
        name,
        command: command.to_vec(),
        engine_args,
    })
}

/// What the engine says of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inspected {
    pid: u32,
    name: String,
    image: String,
    command: Vec<String>,
}

impl Inspected {
    /// From `docker inspect`'s answer (a JSON array of one).
    fn parse(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(text).ok()?;
        let c = v.get(0)?;
        let words = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        Some(Self {
            pid: u32::try_from(c.pointer("/State/Pid")?.as_u64()?).ok()?,
            name: c.get("Name")?.as_str()?.to_owned(),
            image: c.pointer("/Config/Image")?.as_str()?.to_owned(),
            command: words(c.pointer("/Config/Cmd").unwrap_or(&Value::Null)),
        })
    }

    /// Whether it is the container `run` asked for, running `main`.
    fn is(&self, run: &DockerRun, main: u32) -> bool {
        self.pid == main
            && self.image == run.image
            && run
                .name
                .as_ref()
                .is_none_or(|n| self.name.trim_start_matches('/') == n)
            && (run.command.is_empty() || self.command == run.command)
    }
}

/// A container tied to the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tie {
    /// The container's id (12 hex characters).
    pub container: String,
    /// The run's `docker run` that started it.
    pub client: ProcId,
    /// Its main process.
    pub main: ProcId,
    /// The engine command that named it (and ends it).
    pub engine: Vec<String>,
}

impl Tie {
    /// What ends it through its engine.
    pub fn stop(&self) -> ContainerStop {
        ContainerStop {
            id: self.container.clone(),
            main_pid: self.main.pid,
            main_start_ticks: self.main.start_ticks,
        }
    }
}

#[derive(Debug)]
struct Client {
    run: DockerRun,
    engine: Vec<String>,
    last_alive: u64,
}

/// The run's `docker run` clients and the containers tied to them, look by look.
#[derive(Debug, Default)]
pub struct Containers {
    clients: HashMap<ProcId, Client>,
    /// Every container judged once: tied, or not the run's.
    decided: HashMap<String, Option<Tie>>,
    /// Containers seen but not judged yet: the look each was first seen at.
    pending: HashMap<String, u64>,
    /// Each tied container's processes at the last look.
    pub members: HashMap<ProcId, String>,
    looks: u64,
    /// What could not be asked.
    pub problems: Vec<String>,
}

impl Containers {
    /// One look: the run's clients among `alive` (read from `lineage`), new containers judged,
    /// and every process of a tied container now.
    pub fn look(&mut self, alive: &[Member], lineage: &Lineage) -> Vec<Contained> {
        self.looks += 1;
        self.see_clients(alive, lineage);
        if !self.worth_a_scan() {
            self.members.clear();
            return Vec::new();
        }
        let now = scope::contained();
        for c in now.iter().filter(|c| c.main) {
            if !self.decided.contains_key(&c.container) {
                self.judge_pending(c);
            }
        }
        let ours: Vec<Contained> = now
            .into_iter()
            .filter(|c| matches!(self.decided.get(&c.container), Some(Some(_))))
            .collect();
        self.members = ours
            .iter()
            .map(|c| {
                let m = &c.member;
                (ProcId::new(m.pid, m.start_ticks), c.container.clone())
            })
            .collect();
        ours
    }

    /// Whether this look reads the machine's containers (a cgroup read per process): only
    /// while a client of the run ran at the last look, a container waits to be judged, or a
    /// tied one still has processes.
    fn worth_a_scan(&self) -> bool {
        self.clients
            .values()
            .any(|c| c.last_alive + 1 >= self.looks)
            || !self.pending.is_empty()
            || !self.members.is_empty()
    }

    /// The containers tied so far.
    pub fn ties(&self) -> impl Iterator<Item = &Tie> {
        self.decided.values().flatten()
    }

    fn see_clients(&mut self, alive: &[Member], lineage: &Lineage) {
        for m in alive {
            let id = ProcId::new(m.pid, m.start_ticks);
            if let Some(c) = self.clients.get_mut(&id) {
                c.last_alive = self.looks;
                continue;
            }
            let Some(run) = lineage.record(id).and_then(|r| DockerRun::parse(&r.argv)) else {
                continue;
            };
            let engine = engine_for(&run, &scope::read_env(m.pid, &ENGINE_ENV));
            self.clients.insert(
                id,
                Client {
                    run,
                    engine,
                    last_alive: self.looks,
                },
            );
        }
    }

    /// Judges a container not tied yet. Its main process may still be the runtime's own
    /// (`runc init`, before the engine names it), so it is asked again at each look for
    /// [`PENDING_LOOKS`], then judged not the run's (and why, when the engine could not say).
    fn judge_pending(&mut self, c: &Contained) {
        let looks = self.looks;
        let first = *self.pending.entry(c.container.clone()).or_insert(looks);
        let decided = match self.judge(c, first) {
            Ok(Some(tie)) => Some(Some(tie)),
            Ok(None) | Err(_) if looks < first + PENDING_LOOKS => None,
            Ok(None) => Some(None),
            Err(e) => {
                self.problems.push(e);
                Some(None)
            }
        };
        if let Some(d) = decided {
            self.pending.remove(&c.container);
            self.decided.insert(c.container.clone(), d);
        }
    }

    /// The tie of a container first seen at look `first`: to the latest-started client that
    /// ran then, is not tied yet, and that the engine confirms; the engine's failure in words.
    fn judge(&self, c: &Contained, first: u64) -> Result<Option<Tie>, String> {
        let main = ProcId::new(c.member.pid, c.member.start_ticks);
        let mut candidates: Vec<(&ProcId, &Client)> = self
            .clients
            .iter()
            .filter(|(id, cl)| {
                id.start_ticks <= main.start_ticks
                    && cl.last_alive + 1 >= first
                    && !self.ties().any(|t| t.client == **id)
            })
            .collect();
        candidates.sort_by_key(|(id, _)| std::cmp::Reverse(id.start_ticks));
        let mut asked: HashMap<&[String], Result<Inspected, String>> = HashMap::new();
        let mut failed = None;
        for (id, cl) in candidates {
            let said = asked
                .entry(cl.engine.as_slice())
                .or_insert_with(|| inspect(&cl.engine, &c.container));
            match said {
                Ok(i) if i.is(&cl.run, main.pid) => {
                    return Ok(Some(Tie {
                        container: c.container.clone(),
                        client: *id,
                        main,
                        engine: cl.engine.clone(),
                    }));
                }
                Ok(_) => {}
                Err(e) => {
                    failed = Some(format!(
                        "cannot ask the engine whether container {} is the one `docker run` \
                         (pid {}) started: {e}",
                        c.container, id.pid
                    ));
                }
            }
        }
        failed.map_or(Ok(None), Err)
    }
}

/// Looks for which a container seen while a client of the run ran is asked about again
/// (about a second): the runtime starts its main process before the engine names it.
const PENDING_LOOKS: u64 = 20;

/// The engine command for a client: `DEBUGTOP_DOCKER_COMMAND` where set (the engine's own
/// setting), else `docker` with the client's engine options and environment.
fn engine_for(run: &DockerRun, env: &[(String, String)]) -> Vec<String> {
    if let Some(words) = crate::targets::command::words_of(DOCKER_COMMAND_ENV) {
        return words;
    }
    let mut words = vec!["docker".to_owned()];
    for (k, v) in env.iter().filter(|(_, v)| !v.starts_with('-')) {
        let opt = if k == "DOCKER_HOST" {
            "--host"
        } else {
            "--context"
        };
        words.push(format!("{opt}={v}"));
    }
    words.extend(run.engine_args.iter().cloned());
    words
}

/// `docker inspect ID` through `engine`.
fn inspect(engine: &[String], id: &str) -> Result<Inspected, String> {
    if !ContainerStop::valid_id(id) {
        return Err(format!("{id:?} is not a container id"));
    }
    let said = crate::actions::container::ask(engine, &["inspect", "--type", "container", id])?;
    Inspected::parse(&said).ok_or_else(|| format!("docker said nothing readable about {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn a_docker_run_command_line_gives_its_image_name_command_and_engine() {
        let r = DockerRun::parse(&words(
            "/usr/bin/docker -H unix:///tmp/d.sock --log-level error run -d --rm -v /usr:/usr:ro \
             --name dt-1 -e=A=b --network=host -it alpine:3 sleep 300",
        ))
        .unwrap();
        assert_eq!(r.image, "alpine:3");
        assert_eq!(r.name.as_deref(), Some("dt-1"));
        assert_eq!(r.command, ["sleep", "300"]);
        assert_eq!(r.engine_args, ["-H", "unix:///tmp/d.sock"]);
        let r = DockerRun::parse(&words("docker container run -eX=1 -dit img")).unwrap();
        assert_eq!(
            (r.image.as_str(), r.name, r.command.len()),
            ("img", None, 0)
        );
        let r = DockerRun::parse(&words("docker --context=ci run --name=n -- img -x")).unwrap();
        assert_eq!(r.engine_args, ["--context=ci"]);
        assert_eq!(
            (r.name.as_deref(), r.command.as_slice()),
            (Some("n"), &["-x".to_owned()][..])
        );
    }

    #[test]
    fn other_docker_commands_and_other_programs_are_no_docker_run() {
        for argv in [
            "docker ps",
            "docker -H x exec c sh",
            "docker run -d",
            "docker run --name",
            "/usr/bin/podman run img",
            "mydocker run img",
            "docker container ls",
        ] {
            assert_eq!(DockerRun::parse(&words(argv)), None, "{argv}");
        }
        assert_eq!(DockerRun::parse(&[]), None);
    }

    #[test]
    fn the_engine_confirms_a_container_only_by_its_main_process_image_name_and_command() {
        let said = r#"[{"Name":"/dt-1","State":{"Pid":4242},"Config":{"Image":"img:1","Cmd":["sleep","300"]}}]"#;
        let i = Inspected::parse(said).unwrap();
        let run = DockerRun::parse(&words("docker run --name dt-1 img:1 sleep 300")).unwrap();
        assert!(i.is(&run, 4242));
        // Near misses: another main process, image, name or command.
        assert!(!i.is(&run, 4243));
        for other in [
            "docker run --name dt-1 img:2 sleep 300",
            "docker run --name dt-2 img:1 sleep 300",
            "docker run --name dt-1 img:1 sleep 301",
        ] {
            assert!(
                !i.is(&DockerRun::parse(&words(other)).unwrap(), 4242),
                "{other}"
            );
        }
        // Without a name or a command, the image and the main process decide.
        assert!(i.is(
            &DockerRun::parse(&words("docker run -d img:1")).unwrap(),
            4242
        ));
        assert_eq!(Inspected::parse("[]"), None);
        assert_eq!(Inspected::parse("not json"), None);
    }

    #[test]
    fn the_clients_engine_is_its_own_unless_the_engine_setting_names_one() {
        if std::env::var_os(DOCKER_COMMAND_ENV).is_some() {
            return;
        }
        let run = DockerRun::parse(&words("docker -H tcp://h:1 run img")).unwrap();
        let env = [("DOCKER_CONTEXT".to_owned(), "ci".to_owned())];
        assert_eq!(
            engine_for(&run, &env),
            ["docker", "--context=ci", "-H", "tcp://h:1"]
        );
        let env = [("DOCKER_HOST".to_owned(), "-oEvil".to_owned())];
        assert_eq!(engine_for(&run, &env), ["docker", "-H", "tcp://h:1"]);
    }
}
