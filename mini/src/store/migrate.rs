//! The schema version and the way a file gets from the version it holds to the one this
//! build writes: every step from the file's version up runs in ONE write transaction,
//! together with the new version number, so a crash mid-migration leaves the file as it
//! was. A file from a newer build is refused, never touched.
//!
//! A brand-new (or empty) file is version 0; step 1 creates the tables. A later schema
//! change adds a [`Migration`] to [`MIGRATIONS`] and bumps [`super::SCHEMA_VERSION`].

use redb::{
    Database, MultimapTableHandle, ReadableDatabase, ReadableTable, TableError, TableHandle,
    WriteTransaction,
};

use super::error::Fail;
use super::schema::*;
use super::SCHEMA_VERSION;

/// One step of the schema: what it does and how.
pub(super) struct Migration {
    /// The version the file holds after this step.
    pub to: u64,
    /// For the log.
    pub what: &'static str,
    /// The step, inside the migration's write transaction.
    pub apply: fn(&WriteTransaction) -> Result<(), Fail>,
}

/// Every step, oldest first.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        to: 1,
        what: "create the tables",
        apply: create_tables,
    },
    Migration {
        to: 2,
        what: "add the MCP servers and tool lists",
        apply: add_mcp_tables,
    },
    Migration {
        to: 3,
        what: "add the scheduled tasks and their runs",
        apply: add_task_tables,
    },
    Migration {
        to: 4,
        what: "add the OAuth logins of MCP servers",
        apply: add_login_table,
    },
    Migration {
        to: 5,
        what: "bind MCP grants to the tool's definition",
        apply: add_definitions,
    },
    Migration {
        to: 6,
        what: "link dialog memories to the turn before them",
        apply: add_conversation_tails,
    },
];

/// Version 1: every table of the module documentation exists (redb creates a table the
/// first time a write transaction opens it).
fn create_tables(txn: &WriteTransaction) -> Result<(), Fail> {
    txn.open_table(META)?;
    txn.open_table(MEMORIES)?;
    txn.open_table(SESSIONS)?;
    txn.open_table(MESSAGES)?;
    txn.open_table(L2)?;
    txn.open_table(L3)?;
    txn.open_table(PROMPTS)?;
    txn.open_table(STYLE_NOTES)?;
    txn.open_table(EVALUATIONS)?;
    txn.open_table(TOOL_CLASSES)?;
    txn.open_table(GRANTS)?;
    txn.open_table(PENDING)?;
    txn.open_table(AUDIT)?;
    txn.open_table(TURNS)?;
    txn.open_table(TODOS)?;
    Ok(())
}

/// Version 2: the servers added at run time and the cached tool lists.
fn add_mcp_tables(txn: &WriteTransaction) -> Result<(), Fail> {
    txn.open_table(MCP_SERVERS)?;
    txn.open_table(MCP_TOOLS)?;
    Ok(())
}

/// Version 3: scheduled tasks and their runs.
fn add_task_tables(txn: &WriteTransaction) -> Result<(), Fail> {
    txn.open_table(TASKS)?;
    txn.open_table(TASK_RUNS)?;
    Ok(())
}

/// Version 4: the OAuth logins of HTTP MCP servers (`evolve mcp login`).
fn add_login_table(txn: &WriteTransaction) -> Result<(), Fail> {
    txn.open_table(MCP_LOGINS)?;
    Ok(())
}

/// Version 5: the definitions of MCP tools as last seen, which grants and user levels
/// are bound to. A session's grant for an MCP tool kept before (bound to no definition)
/// is dropped: nobody can say which definition the person allowed, so the next call is
/// asked again. Levels set with `evolve mcp level` are kept; each is bound to the
/// definition seen at the next listing (`agents::mcp_levels::classify`).
fn add_definitions(txn: &WriteTransaction) -> Result<(), Fail> {
    txn.open_table(MCP_DEFINITIONS)?;
    let mut table = txn.open_table(GRANTS)?;
    let mut rows: Vec<(String, evolve_core::permission::Grants)> = Vec::new();
    for row in table.iter()? {
        let (key, value) = row?;
        let session = key.value().to_string();
        let grants: evolve_core::permission::Grants = decode("grants", &session, value.value())?;
        rows.push((session, grants));
    }
    for (session, mut grants) in rows {
        let unbound: Vec<evolve_core::permission::Grant> = grants
            .iter()
            .filter(|g| g.definition.is_none() && g.tool.contains(crate::mcp_spec::SEP))
            .cloned()
            .collect();
        if unbound.is_empty() {
            continue;
        }
        for g in &unbound {
            log::info!(
                "store: the \"always\" for MCP tool {} in session {session} is dropped: it \
                 was given before grants were bound to a tool's definition",
                g.tool
            );
            grants.withdraw(evolve_core::permission::Revoke::Label(&g.tool));
        }
        if grants.is_empty() {
            table.remove(session.as_str())?;
        } else {
            put_json(&mut table, "grants", session.as_str(), &grants)?;
        }
    }
    Ok(())
}

/// Version 6: memories may name the memory before them in their conversation and their
/// speaker (`prev`, `speaker`, read as absent from older records: an old memory simply
/// has no link), and each conversation's newest memory is kept to link the next. No
/// record is rewritten; the version keeps an older evolve, which would drop the links
/// when it rewrites a memory, from opening the file.
fn add_conversation_tails(txn: &WriteTransaction) -> Result<(), Fail> {
    txn.open_table(CONVERSATION_TAILS)?;
    Ok(())
}

/// What [`migrate`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Migrated {
    /// The version the file held.
    pub from: u64,
    /// The version it holds now.
    pub to: u64,
}

/// Brings the file to [`SCHEMA_VERSION`] with [`MIGRATIONS`].
pub(super) fn migrate(db: &Database) -> Result<Migrated, Fail> {
    migrate_with(db, MIGRATIONS, SCHEMA_VERSION)
}

/// Brings the file to `target` with `steps` (a parameter so tests can add a failing
/// step). A file already at `target` costs one read transaction and no write.
pub(super) fn migrate_with(
    db: &Database,
    steps: &[Migration],
    target: u64,
) -> Result<Migrated, Fail> {
    let found = found_version(db)?;
    if found > target {
        return Err(Fail::TooNew(found));
    }
    if found == target {
        return Ok(Migrated {
            from: found,
            to: found,
        });
    }
    let txn = db.begin_write()?;
    // Read again inside the write transaction: it is the one that counts.
    let from = stored_version(&txn.open_table(META)?)?;
    if from > target {
        return Err(Fail::TooNew(from));
    }
    for step in steps.iter().filter(|s| s.to > from && s.to <= target) {
        log::info!("store: schema {} → {}: {}", step.to - 1, step.to, step.what);
        (step.apply)(&txn)?;
    }
    txn.open_table(META)?.insert(SCHEMA_VERSION_KEY, target)?;
    txn.commit()?;
    Ok(Migrated { from, to: target })
}

/// Refuses, writing nothing, a file this build must not migrate: one of a newer
/// evolve, or a redb file of another program. The open calls it before anything writes.
pub(super) fn check(db: &impl ReadableDatabase) -> Result<(), Fail> {
    match found_version(db)? {
        found if found > SCHEMA_VERSION => Err(Fail::TooNew(found)),
        _ => Ok(()),
    }
}

/// The schema version the file holds: 0 for a new, empty one. A file with tables but
/// none of ours is another program's, and is not taken over.
fn found_version(db: &impl ReadableDatabase) -> Result<u64, Fail> {
    let txn = db.begin_read()?;
    match txn.open_table(META) {
        Ok(meta) => stored_version(&meta),
        Err(TableError::TableDoesNotExist(_)) => {
            let mut tables: Vec<String> = txn
                .list_tables()?
                .map(|t| t.name().to_string())
                .chain(txn.list_multimap_tables()?.map(|t| t.name().to_string()))
                .collect();
            if tables.is_empty() {
                return Ok(0);
            }
            tables.sort();
            Err(Fail::NotAStore(format!(
                "it is a redb database of another program (its tables: {})",
                tables.join(", ")
            )))
        }
        Err(e @ (TableError::TableTypeMismatch { .. } | TableError::TableIsMultimap(_))) => Err(
            Fail::NotAStore(format!("its tables are not the ones evolve writes ({e})")),
        ),
        Err(e) => Err(e.into()),
    }
}

fn stored_version(meta: &impl ReadableTable<&'static str, u64>) -> Result<u64, Fail> {
    Ok(meta
        .get(SCHEMA_VERSION_KEY)?
        .map(|v| v.value())
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::temp_path;

    fn new_db(name: &str) -> Database {
        let path = temp_path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        Database::create(&path).unwrap()
    }

    fn version(db: &Database) -> u64 {
        let txn = db.begin_read().unwrap();
        let meta = txn.open_table(META).unwrap();
        stored_version(&meta).unwrap()
    }

    fn fails(_: &WriteTransaction) -> Result<(), Fail> {
        Err(Fail::NotFound("step 2 failed".into()))
    }

    const ADDS_A_TABLE: TableDefinition<u64, u64> = TableDefinition::new("added_in_2");

    fn adds_a_table(txn: &WriteTransaction) -> Result<(), Fail> {
        txn.open_table(ADDS_A_TABLE)?.insert(1, 2)?;
        Ok(())
    }

    use redb::{ReadableTableMetadata, TableDefinition};

    #[test]
    fn a_new_file_is_created_at_the_current_version_and_reopening_writes_nothing() {
        let db = new_db("migrate-new");
        assert_eq!(
            migrate(&db).unwrap(),
            Migrated {
                from: 0,
                to: SCHEMA_VERSION
            }
        );
        assert_eq!(version(&db), SCHEMA_VERSION);
        {
            let txn = db.begin_read().unwrap();
            txn.open_table(MESSAGES).unwrap();
            txn.open_table(TODOS).unwrap();
        }
        assert_eq!(
            migrate(&db).unwrap(),
            Migrated {
                from: SCHEMA_VERSION,
                to: SCHEMA_VERSION
            }
        );
    }

    #[test]
    fn steps_run_in_order_and_a_failing_step_leaves_the_file_untouched() {
        let db = new_db("migrate-steps");

        let broken = [
            Migration {
                to: 1,
                what: "create",
                apply: create_tables,
            },
            Migration {
                to: 2,
                what: "add a table",
                apply: adds_a_table,
            },
            Migration {
                to: 3,
                what: "fail",
                apply: fails,
            },
        ];
        assert_eq!(
            migrate_with(&db, &broken[..1], 1).unwrap(),
            Migrated { from: 0, to: 1 }
        );
        assert!(matches!(
            migrate_with(&db, &broken, 3),
            Err(Fail::NotFound(_))
        ));
        assert_eq!(version(&db), 1, "the failed migration changed nothing");
        {
            let txn = db.begin_read().unwrap();
            assert!(matches!(
                txn.open_table(ADDS_A_TABLE),
                Err(TableError::TableDoesNotExist(_))
            ));
        }

        assert_eq!(
            migrate_with(&db, &broken[..2], 2).unwrap(),
            Migrated { from: 1, to: 2 }
        );
        assert_eq!(version(&db), 2);
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(ADDS_A_TABLE).unwrap();
        assert_eq!(t.get(1).unwrap().unwrap().value(), 2);
    }

    #[test]
    fn a_newer_file_is_refused_and_left_alone() {
        let db = new_db("migrate-newer");
        {
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert(SCHEMA_VERSION_KEY, 99)
                .unwrap();
            txn.commit().unwrap();
        }
        assert!(matches!(migrate(&db), Err(Fail::TooNew(99))));
        assert_eq!(version(&db), 99);
    }

    #[test]
    fn a_version_4_file_drops_mcp_grants_without_a_definition_and_keeps_the_rest() {
        let db = new_db("migrate-v4");
        migrate_with(&db, &MIGRATIONS[..4], 4).unwrap();
        {
            let txn = db.begin_write().unwrap();
            let mut grants = txn.open_table(GRANTS).unwrap();
            grants
                .insert(
                    "s1",
                    r#"[{"tool":"notes__show","level":"L3"},{"tool":"write_file","level":"L3"},{"tool":"shell","command":"ls","level":"L3"}]"#,
                )
                .unwrap();
            grants.insert("s2", r#"["notes__show"]"#).unwrap();
            drop(grants);
            txn.commit().unwrap();
        }
        migrate(&db).unwrap();
        let txn = db.begin_read().unwrap();
        let grants = txn.open_table(GRANTS).unwrap();
        let s1: evolve_core::permission::Grants =
            serde_json::from_str(grants.get("s1").unwrap().unwrap().value()).unwrap();
        let labels: Vec<String> = s1.iter().map(|g| g.label()).collect();
        assert_eq!(labels, ["shell: ls", "write_file"]);
        assert!(
            grants.get("s2").unwrap().is_none(),
            "nothing left: the row goes"
        );
        assert_eq!(txn.open_table(MCP_DEFINITIONS).unwrap().len().unwrap(), 0);
    }

    #[test]
    fn a_version_1_file_gets_the_mcp_tables_and_keeps_its_data() {
        let db = new_db("migrate-v1");
        migrate_with(&db, &MIGRATIONS[..1], 1).unwrap();
        {
            let txn = db.begin_write().unwrap();
            txn.open_table(TOOL_CLASSES)
                .unwrap()
                .insert("fs__read", "{}")
                .unwrap();
            txn.commit().unwrap();
        }
        {
            let txn = db.begin_read().unwrap();
            assert!(matches!(
                txn.open_table(MCP_SERVERS),
                Err(TableError::TableDoesNotExist(_))
            ));
        }
        assert_eq!(
            migrate(&db).unwrap(),
            Migrated {
                from: 1,
                to: SCHEMA_VERSION
            }
        );
        let txn = db.begin_read().unwrap();
        assert_eq!(txn.open_table(MCP_SERVERS).unwrap().len().unwrap(), 0);
        assert_eq!(txn.open_table(MCP_TOOLS).unwrap().len().unwrap(), 0);
        let classes = txn.open_table(TOOL_CLASSES).unwrap();
        assert_eq!(classes.get("fs__read").unwrap().unwrap().value(), "{}");
    }
}
