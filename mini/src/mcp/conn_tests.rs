use super::*;

#[test]
fn results_read_as_the_model_sees_them() {
    let cases = [
        (
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            "a\nb",
            false,
        ),
        (
            json!({"content": [{"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}], "isError": true}),
            "[image image/png of 8 base64 bytes]",
            true,
        ),
        (
            json!({"content": [{"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]}),
            "[audio audio/wav of 4 base64 bytes]",
            false,
        ),
        (
            json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}}]}),
            "[resource file:///a.txt]\nhello",
            false,
        ),
        (
            json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AA=="}}]}),
            "[resource file:///a.bin: binary data]",
            false,
        ),
        (
            json!({"content": [{"type": "resource", "resource": {"uri": "x:1", "mimeType": "image/gif", "blob": "AA=="}}]}),
            "[resource x:1: image/gif data]",
            false,
        ),
        (
            json!({"content": [{"type": "resource_link", "name": "notes", "uri": "file:///n"}]}),
            "[link notes file:///n]",
            false,
        ),
        (
            json!({"content": [{"type": "resource_link", "name": "NOTES.md", "title": "Project notes", "uri": "file:///p/NOTES.md", "description": "what we know"}]}),
            "[link Project notes (NOTES.md) file:///p/NOTES.md] what we know",
            false,
        ),
        (
            json!({"content": [{"type": "hologram"}]}),
            "[content of a kind evolve does not show]",
            false,
        ),
        (
            json!({"content": [], "structuredContent": {"sum": 5}}),
            "{\"sum\":5}",
            false,
        ),
        (json!({"content": [], "isError": false}), "", false),
    ];
    for (result, text, is_error) in cases {
        let out = outcome(&result, None);
        assert_eq!(
            (out.content.as_str(), out.is_error),
            (text, is_error),
            "{result}"
        );
    }
}

#[test]
fn listed_tools_keep_their_schema_and_hints() {
    let t = tool(&json!({
        "name": "write",
        "description": "Writes",
        "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}},
        "annotations": {"readOnlyHint": false, "destructiveHint": true}
    }))
    .expect("a tool");
    assert_eq!(t.name, "write");
    assert_eq!(t.description, "Writes");
    assert_eq!(
        t.input_schema,
        r#"{"properties":{"p":{"type":"string"}},"type":"object"}"#
    );
    assert_eq!(t.annotations.read_only_hint, Some(false));
    assert_eq!(t.annotations.destructive_hint, Some(true));
    assert_eq!(t.annotations.open_world_hint, None);
    let bare = tool(&json!({"name": "x"})).expect("a tool");
    assert_eq!(
        (bare.description.as_str(), bare.input_schema.as_str()),
        ("", "{\"type\":\"object\"}")
    );
    assert!(tool(&json!({"description": "no name"})).is_none());
}
