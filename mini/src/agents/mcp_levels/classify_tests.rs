use super::*;
use std::sync::{Arc, Mutex};

use evolve_core::history::Message;
use evolve_core::permission::Annotations;

use crate::cancel::Cancel;
use crate::llm::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError, ModelRole, Usage};
use crate::mcp_spec::{SpecSource, Transport};
use crate::store::Store;
use crate::testing::TempDir;

/// A model that answers every request with the next scripted reply (an error when
/// none is left) and records the requests.
#[derive(Clone, Default)]
struct Scripted {
    replies: Arc<Mutex<Vec<Result<String, ()>>>>,
    seen: Arc<Mutex<Vec<ChatRequest>>>,
}

impl Scripted {
    fn push(&self, reply: &str) {
        self.replies.lock().unwrap().push(Ok(reply.to_string()));
    }
    fn fail(&self) {
        self.replies.lock().unwrap().push(Err(()));
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl ChatModel for Scripted {
    fn chat(
        &self,
        req: &ChatRequest,
        _on_delta: &mut dyn FnMut(Delta<'_>),
        _cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        self.seen.lock().unwrap().push(req.clone());
        let mut replies = self.replies.lock().unwrap();
        let next = if replies.is_empty() {
            Err(())
        } else {
            replies.remove(0)
        };
        match next {
            Ok(text) => Ok(ChatResponse {
                message: Message::assistant(text),
                finish_reason: Some("stop".into()),
                usage: Usage::default(),
                model: "fake-cheap".into(),
                cut: None,
                images_left_out: 0,
            }),
            Err(()) => Err(LlmError::Protocol {
                url: "http://127.0.0.1:1/v1".into(),
                detail: "scripted failure".into(),
            }),
        }
    }
    fn model_name(&self, _role: ModelRole) -> &str {
        "fake"
    }
}

fn tool(name: &str, description: &str, annotations: Annotations) -> McpTool {
    McpTool {
        name: name.into(),
        description: description.into(),
        input_schema: r#"{"type":"object","properties":{"path":{"type":"string"}}}"#.into(),
        output_schema: None,
        annotations,
    }
}

fn spec(trusted: bool) -> ServerSpec {
    ServerSpec {
        name: "fs".into(),
        transport: Transport::Stdio {
            command: "fs-server".into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        },
        timeout: std::time::Duration::from_secs(60),
        sandbox: Default::default(),
        trusted,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        disabled: false,
        roots: Vec::new(),
        source: SpecSource::ConfigFile,
    }
}

/// What a [`Classifier`] borrows, owned by the test.
struct Parts {
    store: Store,
    levels: Vec<(String, Level)>,
    model: Scripted,
}

impl Parts {
    fn classifier(&self) -> Classifier<'_> {
        Classifier {
            store: &self.store,
            levels: &self.levels,
            model: &self.model,
        }
    }
}

fn runtime(dir: &TempDir, model: &Scripted, levels: &[(&str, Level)]) -> Parts {
    let store = Store::open(
        &dir.path().join("evolve.redb"),
        &evolve_core::text::FallbackTokenizer,
    )
    .expect("store");
    Parts {
        store,
        levels: levels.iter().map(|(n, l)| (n.to_string(), *l)).collect(),
        model: model.clone(),
    }
}

static NEVER: Cancel = Cancel::new();

#[test]
fn fingerprints_are_stable_and_see_every_part() {
    let base = tool("read", "Reads a file", Annotations::default());
    let mut changed = Vec::new();
    let mut t = base.clone();
    t.name = "reads".into();
    changed.push(t);
    let mut t = base.clone();
    t.description = "Reads a file.".into();
    changed.push(t);
    let mut t = base.clone();
    t.input_schema = "{}".into();
    changed.push(t);
    let mut t = base.clone();
    t.annotations.read_only_hint = Some(true);
    changed.push(t);
    let mut t = base.clone();
    t.annotations.read_only_hint = Some(false);
    changed.push(t);
    // Text moved from one part to the next.
    let mut t = base.clone();
    t.name = "readR".into();
    t.description = "eads a file".into();
    changed.push(t);
    let mut all: Vec<u64> = changed.iter().map(fingerprint).collect();
    all.push(fingerprint(&base));
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "every change gives another fingerprint");
    // The same schema reformatted keeps the cached level.
    let mut spaced = base.clone();
    spaced.input_schema = spaced.input_schema.replace(':', " : ");
    assert_ne!(spaced.input_schema, base.input_schema);
    assert_eq!(fingerprint(&spaced), fingerprint(&base));
}

#[test]
fn replies_are_read_tolerantly() {
    let names = ["read_file", "write_file", "delete"];
    let cases: &[(&str, [Option<Level>; 3])] = &[
        (
            r#"{"read_file": "L2", "write_file": "L3", "delete": "L4"}"#,
            [Some(Level::L2), Some(Level::L3), Some(Level::L4)],
        ),
        (
            "Sure! ```json\n{\"READ_FILE\": 2, \"fs__write_file\": \"l3\", \"delete\": {\"level\": \"L5\"}}\n```",
            [Some(Level::L2), Some(Level::L3), Some(Level::L5)],
        ),
        (
            r#"{"tools": [{"name": "read_file", "level": "L1 - public"}, {"tool": "delete", "level": 4}]}"#,
            [Some(Level::L1), None, Some(Level::L4)],
        ),
        (
            r#"{"read_file": "L7", "write_file": "risky", "other": "L1""#,
            [None, None, None],
        ),
        ("I cannot classify these.", [None, None, None]),
    ];
    for (reply, want) in cases {
        assert_eq!(parse_levels(reply, "fs", &names), want.to_vec(), "{reply}");
    }
}

#[test]
fn one_request_per_server_then_the_cache_until_a_tool_changes() {
    let dir = TempDir::new("classify-cache");
    let model = Scripted::default();
    let rt = runtime(&dir, &model, &[]);
    let tools = vec![
        tool("read", "Reads a file", Annotations::default()),
        tool("write", "Writes a file", Annotations::default()),
        tool("odd", "Something", Annotations::default()),
    ];
    model.push(r#"{"read": "L2", "write": "L3"}"#);
    let got = explain(&rt.classifier(), &spec(false), &tools, &NEVER);
    let levels: Vec<(Level, ClassSource)> = got
        .iter()
        .map(|c| (c.class.level, c.class.source))
        .collect();
    assert_eq!(
        levels,
        [
            // No readOnlyHint: the classifier's L2 is raised to the floor, L3.
            (Level::L3, ClassSource::Floor),
            (Level::L3, ClassSource::Classifier),
            (Level::L4, ClassSource::Unclassified),
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "one request for the server");
    let system = requests[0].messages[0].content.clone();
    assert!(system.starts_with("[evolve:classify]"), "{system}");
    for level in Level::ALL {
        assert!(
            system.contains(&format!("{level} {}", level.meaning())),
            "{system}"
        );
    }
    assert_eq!(requests[0].role, ModelRole::Cheap);
    let user = requests[0].messages[1].content.clone();
    assert!(
        user.contains("name: write") && user.contains("Writes a file"),
        "{user}"
    );

    // Asked again: all three come from the cache (the unclassified one too).
    assert_eq!(explain(&rt.classifier(), &spec(false), &tools, &NEVER), got);
    assert_eq!(model.requests().len(), 1, "no new request");

    // A changed description is classified again, alone.
    let mut changed = tools.clone();
    changed[1].description = "Writes or deletes a file".into();
    model.push(r#"{"write": "L4"}"#);
    let again = classes(&rt.classifier(), &spec(false), &changed, &NEVER);
    assert_eq!(again[1].level, Level::L4);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let user = requests[1].messages[1].content.clone();
    assert!(
        user.contains("name: write") && !user.contains("name: read"),
        "{user}"
    );
}

/// A tool the classifier left out is not asked about at every step, but again once
/// that answer is an hour old (it used to stick until the server was re-added).
#[test]
fn a_tool_left_unclassified_is_asked_again_later() {
    let dir = TempDir::new("classify-retry");
    let model = Scripted::default();
    let rt = runtime(&dir, &model, &[]);
    let tools = vec![tool("odd", "Something", Annotations::default())];
    model.push(r#"{"other": "L1"}"#);
    let got = classes(&rt.classifier(), &spec(false), &tools, &NEVER);
    assert_eq!(got[0].source, ClassSource::Unclassified);
    let _ = classes(&rt.classifier(), &spec(false), &tools, &NEVER);
    assert_eq!(model.requests().len(), 1, "not asked again at once");
    // An hour later.
    let mut record = rt
        .store
        .tool_class("fs__odd")
        .expect("read")
        .expect("cached");
    assert_eq!(record.source, CLASS_UNCLASSIFIED);
    record.at -= RETRY_UNCLASSIFIED + 1;
    rt.store
        .set_tool_classes(&[("fs__odd".to_string(), record)])
        .expect("aged");
    model.push(r#"{"odd": "L4"}"#);
    let got = classes(&rt.classifier(), &spec(false), &tools, &NEVER);
    assert_eq!(
        (got[0].level, got[0].source),
        (Level::L4, ClassSource::Classifier)
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_failed_call_is_l4_and_asked_again_next_time() {
    let dir = TempDir::new("classify-fail");
    let model = Scripted::default();
    let rt = runtime(&dir, &model, &[]);
    let tools = vec![tool("read", "Reads", Annotations::default())];
    model.fail();
    let got = classes(&rt.classifier(), &spec(false), &tools, &NEVER);
    assert_eq!(got[0].level, Level::L4);
    assert_eq!(got[0].source, ClassSource::Unclassified);
    assert_eq!(rt.store.tool_class("fs__read").expect("read"), None);
    model.push(r#"{"read": "L1"}"#);
    let got = classes(&rt.classifier(), &spec(false), &tools, &NEVER);
    // Classified now; not read-only, so no lower than L3.
    assert_eq!(
        (got[0].level, got[0].source),
        (Level::L3, ClassSource::Floor)
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn user_levels_annotations_and_trust_combine_by_the_cores_rule() {
    let dir = TempDir::new("classify-combine");
    let model = Scripted::default();
    let rt = runtime(
        &dir,
        &model,
        &[("fs__cfg", Level::L1), ("fs__both", Level::L5)],
    );
    rt.store
        .set_tool_class(
            "fs__both",
            &ToolClassRecord {
                level: Level::L2,
                fingerprint: 0,
                definition: None,
                source: CLASS_BY_USER.into(),
                at: 0,
            },
        )
        .expect("set");
    let read_only = Annotations {
        read_only_hint: Some(true),
        ..Annotations::default()
    };
    let destructive = Annotations {
        destructive_hint: Some(true),
        ..Annotations::default()
    };
    let tools = vec![
        tool("cfg", "c", Annotations::default()),
        tool("both", "b", destructive),
        tool("ro", "r", read_only),
        tool("boom", "d", destructive),
    ];
    // (trusted, want per tool (level, source, origin text))
    model.push(r#"{"ro": "L3", "boom": "L1"}"#);
    let untrusted = explain(&rt.classifier(), &spec(false), &tools, &NEVER);
    let want_untrusted = [
        (Level::L1, "user (config.toml [tools.levels])"),
        // The command's level beats the file's, and annotations do not move it.
        (Level::L2, "user (evolve mcp level)"),
        // An untrusted read-only hint cannot lower the classifier's L3.
        (Level::L3, "classifier"),
        // A destructive hint raises the classifier's L1 to its floor.
        (Level::L4, "floor, destructive (classifier L1)"),
    ];
    let got: Vec<(Level, String)> = untrusted
        .iter()
        .map(|c| (c.class.level, c.origin()))
        .collect();
    let want: Vec<(Level, String)> = want_untrusted
        .iter()
        .map(|(l, o)| (*l, o.to_string()))
        .collect();
    assert_eq!(got, want);
    // Only the two tools without a user level were asked about.
    let user = model.requests()[0].messages[1].content.clone();
    assert!(
        !user.contains("name: cfg") && !user.contains("name: both"),
        "{user}"
    );

    // Trusted: the read-only hint lowers L3 to L2.
    let trusted = classes(&rt.classifier(), &spec(true), &tools, &NEVER);
    assert_eq!(trusted[2].level, Level::L2);
    assert_eq!(trusted[2].source, ClassSource::Annotations);
    assert_eq!(
        model.requests().len(),
        1,
        "the cache served the second call"
    );
}
