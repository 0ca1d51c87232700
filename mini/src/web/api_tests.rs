use super::*;
use crate::web::sessions::download_name;
use serde_json::Value;
use std::collections::BTreeSet;

#[test]
fn a_download_is_named_after_its_chat() {
    for (title, id, want) in [
            (
                "Trip to Kyoto",
                "s1",
                "attachment; filename=\"Trip_to_Kyoto.md\"; filename*=UTF-8''Trip%20to%20Kyoto.md",
            ),
            (
                "去京都 trip",
                "s2",
                "attachment; filename=\"trip.md\"; filename*=UTF-8''%E5%8E%BB%E4%BA%AC%E9%83%BD%20trip.md",
            ),
            (
                "旅行",
                "s-3",
                "attachment; filename=\"evolve-s-3.md\"; filename*=UTF-8''%E6%97%85%E8%A1%8C.md",
            ),
            ("", "a/../b", "attachment; filename=\"evolve-a_b.md\""),
            (
                "../../etc \"x\"",
                "s4",
                "attachment; filename=\"etc_x.md\"; filename*=UTF-8''%2E%2E%5F%2E%2E%5Fetc%20%22x%22.md",
            ),
        ] {
            assert_eq!(download_name(title, id, "md"), want, "{title:?}");
        }
}

/// The table and `/openapi.json` name the same routes (the favicon and the internal
/// store lend aside, see `super::super::lend`), so what the API documents is what is
/// served and a 405's `Allow` matches the document.
#[test]
fn the_route_table_is_the_openapi_document() {
    let doc: Value = serde_json::from_slice(&assets::file("openapi.json").expect("embedded"))
        .expect("openapi.json is JSON");
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .filter(|(_, path, _)| !["/favicon.ico", "/v1/store/lend"].contains(path))
        .map(|(m, path, _)| (m.to_string(), path.to_string()))
        .collect();
    assert_eq!(served, documented);
}

#[test]
fn the_first_matching_pattern_decides_and_yields_the_segments() {
    fn first<'p>(path: &[&'p str]) -> Option<(&'static str, Vec<&'p str>)> {
        ROUTES
            .iter()
            .find_map(|(_, p, _)| Some((*p, matches(p, path)?)))
    }
    assert_eq!(
        first(&["v1", "memory", "maintain"]),
        Some(("/v1/memory/maintain", vec![]))
    );
    assert_eq!(
        first(&["v1", "memory", "7"]),
        Some(("/v1/memory/{id}", vec!["7"]))
    );
    assert_eq!(
        first(&["v1", "sessions", "s1", "turns", "2"]),
        Some(("/v1/sessions/{id}/turns/{n}", vec!["s1", "2"]))
    );
    assert_eq!(first(&["v1", "nothing", "here"]), None);
}
