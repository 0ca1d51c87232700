//! Images with a question (tea-agent's 图片预览, 多模态格式转换) through the built
//! binary: `ask --image FILE` and the chat API's `image_url` parts reach the model as
//! OpenAI image parts after the text, stay with the session (its messages, a later
//! turn's history), and a model that refuses images gets the text with a note — the
//! turn answers, the record says what happened, and later questions skip the refusal.

mod support;

use serde_json::{json, Value};
use support::serve::Server;
use support::{Reply, World};

/// The smallest real PNG (1×1, transparent).
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

const PNG_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

/// The content of the last user message of the last main request.
fn last_user_content(w: &World) -> Value {
    let reqs = w.main_requests();
    let last = reqs.last().expect("a main request");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message")["content"]
        .clone()
}

fn image_parts(content: &Value) -> Vec<String> {
    content
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["type"] == "image_url")
                .map(|p| p["image_url"]["url"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn ask_sends_the_image_after_the_text_and_the_session_keeps_it() {
    let w = World::new("images-ask");
    let file = w.home.join("dot.png");
    std::fs::write(&file, PNG).unwrap();
    w.fake.push(Reply::text("A single transparent pixel."));
    let run = w
        .run(&[
            "ask",
            "--json",
            "--image",
            file.to_str().unwrap(),
            "What is in this picture?",
        ])
        .expect(0);
    assert!(run.stdout.contains("transparent pixel"), "{}", run.stdout);
    let content = last_user_content(&w);
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "What is in this picture?"})
    );
    assert_eq!(image_parts(&content), vec![PNG_URL.to_string()]);
    let sid = run.json()["session"].as_str().unwrap().to_string();

    // The next turn's history still shows the model the picture it talked about.
    w.fake.push(Reply::text("Still one pixel."));
    w.run(&["ask", "--session", &sid, "And its colour?"])
        .expect(0);
    let reqs = w.main_requests();
    let msgs = reqs.last().unwrap()["messages"].as_array().unwrap().clone();
    let with_image: Vec<&Value> = msgs
        .iter()
        .filter(|m| !image_parts(&m["content"]).is_empty())
        .collect();
    assert_eq!(with_image.len(), 1, "{msgs:#?}");
    assert_eq!(
        with_image[0]["content"][0]["text"],
        "What is in this picture?"
    );

    // The export keeps it.
    let export = w
        .run(&["sessions", "export", &sid, "--format", "json"])
        .expect(0)
        .json();
    assert_eq!(
        export["messages"][0]["message"]["images"],
        json!([PNG_URL]),
        "{export}"
    );
}

#[test]
fn ask_refuses_what_is_not_an_image_or_too_big_before_asking_the_model() {
    let w = World::new("images-bad");
    let text = w.home.join("notes.png");
    std::fs::write(&text, "I am text with a .png name").unwrap();
    let r = w
        .run(&["ask", "--image", text.to_str().unwrap(), "look"])
        .expect(2);
    assert!(
        r.stderr.contains("not a PNG, JPEG, GIF or WebP"),
        "{}",
        r.stderr
    );
    let big = w.home.join("big.png");
    let mut bytes = PNG.to_vec();
    bytes.resize(3 * 1024 * 1024, 0);
    std::fs::write(&big, bytes).unwrap();
    let r = w
        .run(&["ask", "--image", big.to_str().unwrap(), "look"])
        .expect(2);
    assert!(
        r.stderr.contains("3.0 MiB") && r.stderr.contains("up to 2 MiB"),
        "{}",
        r.stderr
    );
    let r = w
        .run(&["ask", "--image", "/nonexistent.png", "look"])
        .expect(2);
    assert!(r.stderr.contains("/nonexistent.png"), "{}", r.stderr);
    assert!(w.main_requests().is_empty(), "the model was not asked");
}

#[test]
fn a_model_that_refuses_images_gets_the_text_with_a_note_and_the_turn_answers() {
    let w = World::new("images-refused");
    let file = w.home.join("dot.png");
    std::fs::write(&file, PNG).unwrap();
    w.fake.push(Reply::error(
        400,
        "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
    ));
    w.fake.push(Reply::text(
        "I cannot see images, but the note says one was attached.",
    ));
    let run = w
        .run(&[
            "ask",
            "--json",
            "--image",
            file.to_str().unwrap(),
            "Describe it",
        ])
        .expect(0);
    let record = run.json();
    assert!(
        record["reply"]
            .as_str()
            .unwrap()
            .contains("cannot see images"),
        "{record}"
    );
    let problems = record["problems"].to_string();
    assert!(
        problems.contains("does not take images: 1 left out"),
        "{problems}"
    );
    let content = last_user_content(&w);
    let text = content.as_str().expect("plain text the second time");
    assert!(
        text.starts_with("Describe it\n\n[an image was attached here"),
        "{text}"
    );
    assert!(
        run.stderr.contains("does not take images"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_chat_api_takes_image_parts_checks_them_and_lists_them_with_the_session() {
    let w = World::new("images-api");
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::text("A pixel."));
    let body = json!({"model": "evolve", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]}]});
    let r = s.post("/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.json()["evolve"]["session"].as_str().unwrap().to_string();
    assert_eq!(
        image_parts(&last_user_content(&w)),
        vec![PNG_URL.to_string()]
    );
    let m = s.get(&format!("/v1/sessions/{sid}/messages"));
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(
        m.json()["data"][0]["images"],
        json!([PNG_URL]),
        "{}",
        m.body
    );

    // What a client gets wrong is a 400 that says what, and the model is not asked.
    let asked = w.main_requests().len();
    let jpeg_claim = PNG_URL.replace("image/png", "image/jpeg");
    let cases = [
        (
            json!({"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}),
            "data: URL",
        ),
        (
            json!({"type": "image_url", "image_url": {"url": jpeg_claim}}),
            "says image/jpeg but is image/png",
        ),
        (
            json!({"type": "image_url", "image_url": {}}),
            "needs image_url.url",
        ),
        (
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}}),
            "base64",
        ),
    ];
    for (part, said) in cases {
        let body = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "look"}, part]}]});
        let r = s.post("/v1/chat/completions", &body.to_string());
        assert_eq!(r.status, 400, "{part}: {}", r.body);
        assert!(r.body.contains(said), "{part}: {}", r.body);
    }
    let five: Vec<Value> = std::iter::once(json!({"type": "text", "text": "look"}))
        .chain((0..5).map(|_| json!({"type": "image_url", "image_url": {"url": PNG_URL}})))
        .collect();
    let r = s.post(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": five}]}).to_string(),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("at most 4"), "{}", r.body);
    let only_image = json!({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": PNG_URL}}]}]});
    let r = s.post("/v1/chat/completions", &only_image.to_string());
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("images but no text"), "{}", r.body);
    assert_eq!(
        w.main_requests().len(),
        asked,
        "no bad request reached the model"
    );
}
