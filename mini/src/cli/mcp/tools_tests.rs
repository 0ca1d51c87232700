use super::*;
use evolve_core::permission::{Annotations, ClassSource, ToolClass};

#[test]
fn a_listing_shows_each_tool_with_its_level_and_where_it_came_from() {
    let tool = |name: &str, description: &str| McpTool {
        name: name.into(),
        description: description.into(),
        input_schema: "{}".into(),
        output_schema: None,
        annotations: Annotations::default(),
    };
    let class = |level, source, classifier| {
        Some(Classified {
            class: ToolClass { level, source },
            user: None,
            classifier,
            definition: String::new(),
            change: None,
        })
    };
    let listings = vec![
        (
            "fs".to_string(),
            Listing::Tools(vec![
                Row {
                    tool: tool("read_file", "Read a file.\nWhole."),
                    class: class(Level::L2, ClassSource::Classifier, Some(Level::L2)),
                    offered_as: Some("fs__read_file".into()),
                },
                Row {
                    tool: tool("delete", "Delete \u{1b}[31m"),
                    class: class(Level::L4, ClassSource::Floor, Some(Level::L3)),
                    offered_as: Some("fs__delete".into()),
                },
                Row {
                    tool: tool("move", ""),
                    class: None,
                    offered_as: None,
                },
            ]),
        ),
        ("web".to_string(), Listing::Failed("no route".into())),
        ("old".to_string(), Listing::Disabled),
    ];
    let mut out = Vec::new();
    let failed = write_listings(&mut out, &listings).expect("write");
    assert_eq!(failed, ["web"]);
    let text = String::from_utf8(out).expect("utf-8");
    let want = "fs: 3 tools\n\
                \x20 fs__read_file  L2   classifier                          Read a file. Whole.\n\
                \x20 fs__delete     L4   floor, destructive (classifier L3)  Delete \\u{1b}[31m\n\
                \x20 fs__move       off  not offered\n\
                web: could not be listed\n\
                old: disabled (`evolve mcp enable old`)\n";
    assert_eq!(text, want);
    let json = listings_json(&listings);
    assert_eq!(json[0]["tools"][1]["level"], "L4");
    assert_eq!(json[0]["tools"][1]["source"], "floor");
    assert_eq!(json[0]["tools"][1]["classifier"], "L3");
    assert_eq!(json[0]["tools"][2]["offered"], false);
    assert_eq!(json[1]["ok"], false);
}
