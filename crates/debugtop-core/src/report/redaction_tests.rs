//! Redaction held against the engine's own fixtures and report: secrets planted in every string
//! and identity of the fixture snapshots never reach an export's JSON or Markdown, and a live
//! state's redaction, tick after tick, equals redacting everything. (The redaction is the
//! `debugtop-redact` crate; these need the snapshots the engine builds and its Markdown.)

mod document {
    //! Secrets planted in every free-text string of generated snapshots, in every shape the
    //! review found; none may survive redaction into the JSON or the Markdown export.
    use proptest::prelude::*;
    use serde_json::Value;

    use crate::model::Snapshot;
    use crate::redact::redact_snapshot;
    use crate::testing::{host_snapshot, sample_snapshot};

    /// Paths (JSON pointers) of the string leaves the model reads as free text: replacing one
    /// with arbitrary words still deserialises (enums and ids do not).
    fn free_text_leaves(v: &Value) -> Vec<String> {
        fn walk(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::String(_) => out.push(at),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
                Value::Object(m) => m
                    .iter()
                    .for_each(|(k, x)| walk(x, format!("{at}/{k}"), out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        walk(v, String::new(), &mut all);
        all.into_iter()
            .filter(|p| p != "/schema")
            .filter(|p| {
                let mut w = v.clone();
                if let Some(x) = w.pointer_mut(p) {
                    *x = Value::String("free words".into());
                }
                serde_json::from_value::<Snapshot>(w).is_ok()
            })
            .collect()
    }

    const SHAPES: [&str; 32] = [
        "--password SECRET",
        "--token=SECRET",
        r#"{"token":"SECRET"}"#,
        r#""password": "SECRET""#,
        "Authorization: Basic SECRET",
        "Bearer SECRET",
        "https://SECRET@host/x",
        "https://user:SECRET@host/x",
        "see http://h/cb?access_token=SECRET&x=1",
        r#"--pass "a SECRET b""#,
        "-pSECRET",
        "API_KEY=SECRET",
        "token: SECRET",
        "--adapter-access-token SECRET",
        "curl -u alice:SECRET x",
        "--passphrase SECRET",
        "--bearer SECRET",
        "-PSECRET",
        "apikey sk-SECRET",
        "root:$6$saltsalt$SECRET:19000:0:99999:7:::",
        "$y$j9T$salt$SECRET",
        "--password 'a SECRET'",
        "--password \"a SECRET\"",
        // Forms a second read of the redaction found going through.
        "-ualice:SECRET",
        "--requirepass SECRET",
        "--accessKey SECRET",
        "--privateKey SECRET",
        "-H X-Auth-Token:SECRET",
        r#"{\"token\":\"SECRET\"}"#,
        "password:SECRET",
        "{'password': 'SECRET'}",
        "--password -SECRET",
    ];

    /// The planted text and the secret as it stands in it: `SHAPES`, then keys known by their
    /// shape alone (an AWS access key id, an AWS secret key), made from the secret.
    fn plant(shape: usize, secret: &str) -> (String, String) {
        match shape.checked_sub(SHAPES.len()) {
            None => (SHAPES[shape].replace("SECRET", secret), secret.to_owned()),
            Some(0) => {
                let id: String = secret
                    .to_ascii_uppercase()
                    .chars()
                    .chain(std::iter::repeat('7'))
                    .take(16)
                    .collect();
                (format!("key AKIA{id}"), id)
            }
            _ => {
                let key: String = format!("{secret}/a9B+").chars().cycle().take(40).collect();
                (format!("aws_secret {key}"), key)
            }
        }
    }

    /// Paths of the string leaves that are identities (a finding id, a session id): replacing
    /// one with a secret-shaped token of the same form (`kind:sk-…`, `sk-…`) still reads.
    fn identity_leaves(v: &Value, free: &[String]) -> Vec<(String, String)> {
        let mut all = Vec::new();
        fn walk(v: &Value, at: String, out: &mut Vec<(String, String)>) {
            match v {
                Value::String(s) => out.push((at, s.clone())),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
                Value::Object(m) => m
                    .iter()
                    .for_each(|(k, x)| walk(x, format!("{at}/{k}"), out)),
                _ => {}
            }
        }
        walk(v, String::new(), &mut all);
        all.into_iter()
            .filter(|(p, _)| p != "/schema" && !free.contains(p))
            .filter_map(|(p, s)| {
                let planted = match s.split_once(':') {
                    Some((kind, _)) => format!("{kind}:sk-PLANTED"),
                    None => "sk-PLANTED".to_owned(),
                };
                let mut w = v.clone();
                *w.pointer_mut(&p)? = Value::String(planted.clone());
                serde_json::from_value::<Snapshot>(w)
                    .is_ok()
                    .then_some((p, planted))
            })
            .collect()
    }

    /// `base` with every section that carries text filled (an unconfirmed finding too).
    fn every_section(mut base: Snapshot) -> Snapshot {
        if base.unconfirmed.is_empty() {
            base.unconfirmed = base.findings.clone();
        }
        base.redacted = false;
        base
    }

    /// Plants every shape (with the secret `raw`) in every free-text string and every identity
    /// of both snapshots, one shape at a time, and redacts each through the snapshot path
    /// (`redact_snapshot`): none may survive into the JSON or the Markdown, and nothing may be
    /// dropped for it. Returns how many (snapshot, shape) pairs went through.
    fn every_shape_through_the_snapshot_path(raw: &str) -> Result<usize, String> {
        let mut through = 0;
        for base in [sample_snapshot(), host_snapshot()].map(every_section) {
            let clean = serde_json::to_value(&base).unwrap();
            let leaves = free_text_leaves(&clean);
            if leaves.len() <= 50 {
                return Err(format!("only {} free-text leaves", leaves.len()));
            }
            let ids = identity_leaves(&clean, &leaves);
            if ids.len() < 3 {
                return Err(format!("only {} identity leaves", ids.len()));
            }
            for section in [
                "/tree",
                "/unconfirmed",
                "/groups",
                "/servers",
                "/findings",
                "/timeline",
                "/processes",
                "/sources",
            ] {
                if !leaves
                    .iter()
                    .chain(ids.iter().map(|(p, _)| p))
                    .any(|p| p.starts_with(section))
                {
                    return Err(format!("no string of {section} is planted"));
                }
            }
            for shape in 0..SHAPES.len() + 2 {
                let (planted, secret) = plant(shape, raw);
                let mut v = clean.clone();
                for p in &leaves {
                    if let Some(Value::String(x)) = v.pointer_mut(p) {
                        *x = format!("{x} {planted}");
                    }
                }
                for (p, id) in &ids {
                    if let Some(x) = v.pointer_mut(p) {
                        *x = Value::String(id.replace("PLANTED", raw));
                    }
                }
                let mut s: Snapshot = serde_json::from_value(v).unwrap();
                let counts = |s: &Snapshot| {
                    (
                        s.processes.len(),
                        s.findings.len(),
                        s.unconfirmed.len(),
                        s.groups.len(),
                        s.sources.len(),
                    )
                };
                let before = counts(&s);
                redact_snapshot(&mut s, Some("/home/dev"));
                let json = serde_json::to_string(&s).unwrap();
                let md = crate::report::markdown::render(&s);
                for secret in [secret.as_str(), raw] {
                    if json.contains(secret) {
                        return Err(format!("shape {shape}: {planted:?} survived in the JSON"));
                    }
                    if md.contains(secret) {
                        return Err(format!(
                            "shape {shape}: {planted:?} survived in the Markdown"
                        ));
                    }
                }
                if before != counts(&s) {
                    return Err(format!("shape {shape}: something was dropped"));
                }
                through += 1;
            }
        }
        Ok(through)
    }

    /// Every shape through the snapshot path, every run, whatever proptest draws: fixed
    /// secrets (short and long, lower and upper case), both snapshots, all shapes.
    #[test]
    fn every_shape_is_redacted_through_the_snapshot_path_on_every_run() {
        for raw in ["Zq0123456789", "ZqAbCdEfGhIjKlMnOp"] {
            match every_shape_through_the_snapshot_path(raw) {
                Ok(n) => assert_eq!(n, 2 * (SHAPES.len() + 2), "every shape of both snapshots"),
                Err(e) => panic!("secret {raw}: {e}"),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]
        /// The free-form part: any secret, through every shape of both snapshots.
        #[test]
        fn no_planted_secret_survives_either_export(raw in "Zq[A-Za-z0-9]{10,18}") {
            let r = every_shape_through_the_snapshot_path(&raw);
            prop_assert!(r.is_ok(), "{}", r.err().unwrap_or_default());
        }
    }

    #[test]
    fn regression_a_secret_shaped_session_id_turned_redaction_off_for_whole_sections() {
        // A session named `sk-…` (a key's shape) gave findings the id `stuck-session:sk-…`,
        // whose redaction no longer parsed; the fallback then left `unconfirmed`, `groups` and
        // `servers` unredacted and emptied `sources`.
        let mut s = every_section(sample_snapshot());
        let sid = "sk-0123456789abcdef";
        let f = std::sync::Arc::make_mut(&mut s.findings[0]);
        f.id = format!("stuck-session:{sid}").parse().unwrap();
        f.session_id = Some(sid.to_owned());
        f.evidence
            .push("its command line: x --token Zqtok1 --api-key=Zqtok2".into());
        let mut u = (*s.findings[0]).clone();
        u.id = format!("session-without-worker:{sid}").parse().unwrap();
        s.unconfirmed = vec![std::sync::Arc::new(u)];
        s.groups = crate::model::group_findings(&s.findings);
        s.servers[0].log_file = Some("/srv/x --password Zqtok3".into());
        let sources = s.sources.len();
        redact_snapshot(&mut s, None);
        let json = serde_json::to_string(&s).unwrap();
        for leaked in ["Zqtok1", "Zqtok2", "Zqtok3", sid] {
            assert!(!json.contains(leaked), "{leaked} left in {json}");
        }
        assert_eq!(s.sources.len(), sources, "sources kept, nothing dropped");
        assert_eq!(s.unconfirmed.len(), 1);
        // The id keeps its kind and matches itself wherever it is named.
        let id = s.findings[0].id.to_string();
        assert!(id.starts_with("stuck-session:redacted-"), "{id}");
        assert_eq!(s.groups[0].findings[0].to_string(), id);
        assert_eq!(
            s.findings[0].session_id.as_deref(),
            id.strip_prefix("stuck-session:")
        );
        // Near miss: an ordinary session id is kept.
        let mut plain = every_section(sample_snapshot());
        let kept = plain.findings[0].id.clone();
        redact_snapshot(&mut plain, None);
        assert_eq!(plain.findings[0].id, kept);
    }
}

mod live {
    use proptest::prelude::*;

    use std::sync::Arc;

    use crate::model::{Snapshot, TimelineEvent};
    use crate::redact::{redact_snapshot, LiveRedaction};
    use crate::testing::{host_snapshot, sample_snapshot};

    fn whole(s: &Snapshot) -> Snapshot {
        let mut w = s.clone();
        redact_snapshot(&mut w, Some("/home/dev"));
        w
    }

    /// Plants a secret in the command line, a label and a finding's evidence, and changes
    /// samples, so that some elements are reused and some redacted anew.
    fn edit(s: &mut Snapshot, op: u8, at: usize, secret: &str) {
        match op {
            0 => {
                let i = at % s.processes.len().max(1);
                if let Some(p) = s.processes.get_mut(i).map(Arc::make_mut) {
                    p.argv = super::with_arg(&p.argv, format!("--token={secret}"));
                }
            }
            1 => {
                let i = at % s.processes.len().max(1);
                if let Some(p) = s.processes.get_mut(i).map(Arc::make_mut) {
                    p.sample.cpu_percent = Some(at as f32 / 7.0);
                    p.sample.rss_bytes = at as u64 * 4096;
                }
            }
            2 => {
                if let Some(n) = s
                    .tree
                    .first_mut()
                    .and_then(|n| Arc::make_mut(n).children.first_mut())
                {
                    Arc::make_mut(n).label = format!("node x --password {secret}");
                }
            }
            3 => {
                let i = at % s.findings.len().max(1);
                if let Some(f) = s.findings.get_mut(i).map(Arc::make_mut) {
                    f.evidence.push(format!("Authorization: Bearer {secret}"));
                }
            }
            4 => {
                if !s.processes.is_empty() {
                    s.processes.remove(at % s.processes.len());
                }
            }
            5 => {
                if let Some(d) = s.debug_sessions.first_mut().map(Arc::make_mut) {
                    d.name = Some(format!("run --pass {secret}"));
                }
            }
            7 => {
                let mut e = TimelineEvent::new(
                    crate::testing::at(at as i64),
                    crate::model::TimelineKind::ProcessAppeared,
                    format!("worker {at} appeared: node /home/dev/w.js --token {secret}"),
                );
                e.pid = Some(at as u32);
                let i = s.timeline.partition_point(|x| x.at <= e.at);
                s.timeline.insert(i, Arc::new(e));
            }
            8 => {
                if !s.timeline.is_empty() {
                    s.timeline.remove(at % s.timeline.len());
                }
            }
            _ => {
                if !s.tree.is_empty() {
                    s.tree.remove(at % s.tree.len());
                }
            }
        }
    }

    proptest! {
        #[test]
        fn reusing_last_ticks_redaction_gives_what_redacting_everything_gives(
            ops in proptest::collection::vec((0u8..9, 0usize..1000), 0..10),
            secret in "Zq[A-Za-z0-9]{10,18}",
            host in proptest::bool::ANY,
        ) {
            let a = if host { host_snapshot() } else { sample_snapshot() };
            let mut b = a.clone();
            for (op, at) in ops {
                edit(&mut b, op, at, &secret);
            }
            let mut live = LiveRedaction::new(Some("/home/dev".into()));
            for s in [&a, &b, &b, &a] {
                let mut got = s.clone();
                live.apply(&mut got);
                prop_assert_eq!(&got, &whole(s));
                prop_assert!(!serde_json::to_string(&got).unwrap().contains(&secret));
            }
        }
    }

    #[test]
    fn a_process_whose_samples_change_keeps_its_redacted_command_line() {
        let mut s = sample_snapshot();
        let p = Arc::make_mut(&mut s.processes[0]);
        p.argv = super::with_arg(&p.argv, "--adapter-access-token=Zq0123456789".into());
        let mut live = LiveRedaction::new(None);
        let mut first = s.clone();
        live.apply(&mut first);
        Arc::make_mut(&mut s.processes[0]).sample.cpu_percent = Some(99.0);
        Arc::make_mut(&mut s.processes[0]).sample.rss_bytes = 1 << 30;
        let mut second = s.clone();
        live.apply(&mut second);
        assert_eq!(second.processes[0].sample.cpu_percent, Some(99.0));
        assert_eq!(second.processes[0].sample.rss_bytes, 1 << 30);
        assert_eq!(second.processes[0].argv, first.processes[0].argv);
        assert!(!second.processes[0].argv.join(" ").contains("Zq0123456789"));
    }
}

/// `argv` with `arg` after it.
fn with_arg(argv: &[String], arg: String) -> std::sync::Arc<[String]> {
    argv.iter().cloned().chain([arg]).collect()
}
