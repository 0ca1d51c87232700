//! A `config.toml` through the file format the shell checks it against
//! (`evolve_mini::config_file`, the module `mini/src/config/file.rs`) and the
//! core's sections (`evolve_core::CoreConfig`: `[memory]`, `[history]`, `[permission]`).
//! The rest of loading (merging profiles, environment, paths) is `resolve.rs`, which
//! needs the whole shell; its rules are table-tested there.
//!
//! Invariants beyond "no panic": a file the format accepts is a TOML table; the core's
//! sections, when they read, write out as TOML that reads back to the same text.
#![no_main]

use evolve_core::CoreConfig;
use evolve_mini::config_file as file;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // the shell reports a file that is not UTF-8 before parsing
    };
    let table = toml::from_str::<toml::Table>(text);
    if toml::from_str::<file::RawLayer>(text).is_ok() {
        assert!(table.is_ok(), "the format accepts what is not a TOML table");
    }
    let Ok(table) = table else {
        return;
    };

    if let Some(layer) = table.get("profiles").and_then(|p| p.as_table()) {
        for profile in layer.values() {
            let _ = profile.clone().try_into::<file::RawLayer>();
        }
    }

    let mut core = toml::Table::new();
    for key in ["memory", "history", "permission"] {
        if let Some(section) = table.get(key) {
            core.insert(key.to_string(), section.clone());
        }
    }
    let Ok(config) = core.try_into::<CoreConfig>() else {
        return;
    };
    let written = toml::to_string(&config).expect("a CoreConfig writes as TOML");
    let again: CoreConfig =
        toml::from_str(&written).unwrap_or_else(|e| panic!("{written:?} does not read back: {e}"));
    let rewritten = toml::to_string(&again).expect("a CoreConfig writes as TOML");
    assert_eq!(
        written, rewritten,
        "a written config changed when read back"
    );
});
