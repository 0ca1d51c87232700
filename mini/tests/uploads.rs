//! Files from the browser into the workspace (tea-agent's 文件上传 Drag & Drop):
//! `POST /v1/workspace/files?name=…` on the built `evolve serve` — the file lands in the
//! workspace under a cleaned name, never replaces one without `replace=true`, cannot be
//! steered out of the workspace by its name, a symlink or a hard link, and the model can
//! then read it with its file tools.

mod support;

use serde_json::json;
use support::serve::Server;
use support::{tool_call, Reply, World};

fn upload(s: &Server, query: &str, body: &[u8]) -> support::serve::Resp {
    let mut raw = format!(
        "POST /v1/workspace/files?{query} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
         Authorization: {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        s.port,
        s.bearer(),
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    s.raw(&raw)
}

#[test]
fn a_file_lands_in_the_workspace_and_is_never_replaced_without_asking() {
    let w = World::new("uploads-basic");
    let ws = w.workspace();
    let s = Server::start(&w, &[]);
    let r = upload(&s, "name=sales%202026.csv", b"month,total\njan,12\n");
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"path": "sales 2026.csv", "bytes": 19, "replaced": false})
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sales 2026.csv")).unwrap(),
        "month,total\njan,12\n"
    );

    // The same name again: 409, the file as it was.
    let r = upload(&s, "name=sales%202026.csv", b"other");
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "exists", "{}", r.body);
    assert!(r.body.contains("replace=true"), "{}", r.body);
    assert_eq!(
        std::fs::read_to_string(ws.join("sales 2026.csv")).unwrap(),
        "month,total\njan,12\n"
    );
    // Asked and confirmed: replaced, and no temporary file is left.
    let r = upload(&s, "name=sales%202026.csv&replace=true", b"new");
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["replaced"], true);
    assert_eq!(
        std::fs::read_to_string(ws.join("sales 2026.csv")).unwrap(),
        "new"
    );
    let names: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["sales 2026.csv".to_string()], "{names:?}");

    // Binary bytes arrive as they are.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let r = upload(&s, "name=blob.bin", &bytes);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(std::fs::read(ws.join("blob.bin")).unwrap(), bytes);
}

#[test]
fn a_name_or_a_link_cannot_take_the_file_out_of_the_workspace() {
    let w = World::new("uploads-escape");
    let ws = w.workspace();
    let outside = w.home.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim.txt"), "keep me").unwrap();
    std::os::unix::fs::symlink(outside.join("victim.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    std::fs::hard_link(outside.join("victim.txt"), ws.join("hard.txt")).unwrap();
    std::fs::create_dir(ws.join("folder")).unwrap();
    let s = Server::start(&w, &[]);

    // A path in the name keeps only its last part, at the workspace's top.
    for (query, lands) in [
        ("name=..%2F..%2Fescaped.txt", "escaped.txt"),
        ("name=%2Ftmp%2Fabs.txt", "abs.txt"),
        ("name=out%2Fthrough.txt", "through.txt"),
        ("name=.hidden", "hidden"),
    ] {
        let r = upload(&s, query, b"x");
        assert_eq!(r.status, 201, "{query}: {}", r.body);
        assert_eq!(r.json()["path"], lands, "{query}");
        assert!(ws.join(lands).is_file(), "{query}");
    }
    assert!(!outside.join("through.txt").exists());
    assert!(!w.home.join("escaped.txt").exists());

    // A symlink or a hard link to an outside file, even replacing: refused, it is untouched.
    for name in ["link.txt", "hard.txt"] {
        let r = upload(&s, &format!("name={name}&replace=true"), b"overwritten");
        assert_eq!(r.status, 403, "{name}: {}", r.body);
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "keep me"
    );

    for (query, status, said) in [
        ("", 400, "name is required"),
        ("name=..", 400, "not a usable file name"),
        (
            "name=a.txt&replace=maybe",
            400,
            "replace must be true or false",
        ),
        ("name=out", 403, "outside the workspace"),
        ("name=folder", 409, "is a folder"),
    ] {
        let r = upload(&s, query, b"x");
        assert_eq!(r.status, status, "{query}: {}", r.body);
        assert!(r.body.contains(said), "{query}: {}", r.body);
    }
    // Over the body limit: 413, nothing written.
    let r = upload(&s, "name=huge.bin", &vec![0u8; 4 * 1024 * 1024 + 1]);
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(!ws.join("huge.bin").exists());
}

#[test]
fn the_model_reads_an_uploaded_file_with_its_file_tools() {
    let w = World::new("uploads-read");
    let s = Server::start(&w, &[]);
    let r = upload(&s, "name=notes.md", "# Plan\nShip on Friday.\n".as_bytes());
    assert_eq!(r.status, 201, "{}", r.body);
    w.fake
        .push(tool_call("read_file", r#"{"path": "notes.md"}"#));
    w.fake.push(Reply::text("The plan is to ship on Friday."));
    let body = json!({"messages": [{"role": "user",
        "content": "What does it say?\n\n[Files added to the workspace: notes.md]"}]});
    let r = s.post("/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let tools = &r.json()["evolve"]["tools"];
    assert_eq!(tools[0]["name"], "read_file", "{tools}");
    let reqs = w.main_requests();
    let sent = reqs.last().unwrap().to_string();
    assert!(
        sent.contains("Ship on Friday."),
        "the tool result reached the model: {sent}"
    );
}
