//! What the first bytes of the store file say, read before redb is let near it: whether it
//! is a redb file at all, whether its header is whole, and whether the process that last
//! had it open closed it (redb then trusts it) or not (a crash: redb repairs it on open).
//!
//! [`check`] is a pure function of those bytes and the file's length. It reads the
//! fields redb 4.6 reads when it opens a file (`tree_store/page_store/header.rs`:
//! signature, flags, page size, region geometry, commit slot versions) with redb's own
//! rules, so that what redb would report as "failed to fill whole buffer" or "magic number
//! mismatch" is said plainly, and so that nothing opens a file redb would misread. The
//! pages behind the header are checked by the dry run ([`super::dry_run`]).

/// redb's signature: the first 9 bytes of every file it writes.
const SIGNATURE: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
/// The flags byte after the signature.
const FLAGS_AT: usize = 9;
const PAGE_SIZE_AT: usize = 12;
const REGION_HEADER_PAGES_AT: usize = 16;
const REGION_DATA_PAGES_AT: usize = 20;
const FULL_REGIONS_AT: usize = 24;
const TRAILING_PAGES_AT: usize = 28;
/// The two commit slots; the first byte of each is the file format version.
const SLOTS_AT: [usize; 2] = [64, 192];
/// Signature, geometry and both commit slots.
pub(super) const HEADER_LEN: usize = 320;
/// How much of the file [`check`] looks at: the header, and enough to tell text.
pub(super) const LOOK_AT: usize = 512;
/// The only page size redb 4.6 writes (it is not configurable).
const PAGE_SIZE: u32 = 4096;
/// Set while a writer has the file open, and left set by a crash.
const RECOVERY_REQUIRED: u8 = 2;
/// Set by a writer between a commit and its flush (multi-process modes); also a crash.
const PRIMARY_UNFLUSHED: u8 = 8;
/// Primary slot, recovery required, two-phase commit, primary unflushed.
const KNOWN_FLAGS: u8 = 0b1111;
/// Pages of one region: the page index is 20 bits.
const MAX_REGION_PAGES: u32 = 1 << 20;
/// Regions of one file: the region index is 20 bits.
const MAX_REGIONS: u64 = 1 << 20;
/// The file format version of the commit slots redb 4 writes; 1 and 2 are older redb
/// files, which redb itself refuses with the version (see `UpgradeRequired`).
const FORMAT_VERSIONS: [u8; 3] = [1, 2, 3];

/// How the file was left, for a file whose header is whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closed {
    /// Closed by redb: it trusts the file and its recorded allocator state.
    Cleanly,
    /// Left open (a crash, `kill -9`) or its length changed: redb repairs it on open.
    NotCleanly,
}

/// Why a file cannot be a store, from its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unusable {
    /// 0 bytes. Evolve never leaves an empty file where its store goes (a new store is
    /// written beside it and moved into place whole), so an empty file is someone else's
    /// truncation, not a store to initialise.
    Empty,
    /// Not a redb file.
    Foreign(Foreign),
    /// The header looks like a store's but its first bytes (the signature) are overwritten.
    SignatureDamaged,
    /// Shorter than its header says (`expected`), or than any store can be.
    CutShort { len: u64, expected: Option<u64> },
    /// A header field no redb file holds.
    HeaderDamaged(String),
}

/// What a file that is not a redb file looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Foreign {
    /// Text; its first line (cut, control characters dropped).
    Text(String),
    /// An SQLite database.
    Sqlite,
    /// Anything else; its first bytes.
    Binary(Vec<u8>),
}

impl Unusable {
    /// The part of the message after "the store FILE is damaged: " (or "is not an evolve
    /// store: ").
    pub(super) fn what(&self) -> String {
        match self {
            Unusable::Empty => "it is empty (0 bytes): there is no store in it".into(),
            Unusable::Foreign(Foreign::Text(line)) => {
                format!("it holds text, not a database (its first line: \"{line}\")")
            }
            Unusable::Foreign(Foreign::Sqlite) => "it is an SQLite database".into(),
            Unusable::Foreign(Foreign::Binary(head)) => format!(
                "it does not begin with redb's signature (its first bytes: {})",
                head.iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Unusable::SignatureDamaged => "its first bytes (the redb signature) are \
                 overwritten, though the rest of its header looks like a store's"
                .into(),
            Unusable::CutShort {
                len,
                expected: Some(expected),
            } => format!("it is cut short: {len} bytes, where its header says {expected}"),
            Unusable::CutShort {
                len,
                expected: None,
            } => format!("it is cut short: {len} bytes, too few to hold a store"),
            Unusable::HeaderDamaged(detail) => format!("its header is damaged ({detail})"),
        }
    }

    /// Whether the file is something else than a store (rather than a damaged one).
    pub(super) fn is_foreign(&self) -> bool {
        matches!(self, Unusable::Foreign(_))
    }
}

/// Checks `head`, the first [`LOOK_AT`] bytes of a file of `len` bytes (all of them when
/// it is shorter).
pub(super) fn check(head: &[u8], len: u64) -> Result<Closed, Unusable> {
    if len == 0 {
        return Err(Unusable::Empty);
    }
    if !head.starts_with(&SIGNATURE) {
        return Err(if looks_like_a_header(head) {
            Unusable::SignatureDamaged
        } else {
            Unusable::Foreign(foreign(head))
        });
    }
    if head.len() < HEADER_LEN || len < u64::from(PAGE_SIZE) {
        return Err(Unusable::CutShort {
            len,
            expected: None,
        });
    }
    let flags = head[FLAGS_AT];
    if flags & !KNOWN_FLAGS != 0 {
        return Err(damaged(format!("unknown flags {flags:#04x}")));
    }
    let page_size = u32_at(head, PAGE_SIZE_AT);
    if page_size != PAGE_SIZE {
        return Err(damaged(format!("page size {page_size}")));
    }
    let header_pages = u32_at(head, REGION_HEADER_PAGES_AT);
    let data_pages = u32_at(head, REGION_DATA_PAGES_AT);
    if data_pages == 0 || data_pages > MAX_REGION_PAGES {
        return Err(damaged(format!("{data_pages} pages per region")));
    }
    if header_pages > MAX_REGION_PAGES {
        return Err(damaged(format!("{header_pages} header pages per region")));
    }
    for at in SLOTS_AT {
        if !FORMAT_VERSIONS.contains(&head[at]) {
            return Err(damaged(format!("file format version {}", head[at])));
        }
    }
    let page = u64::from(page_size);
    let region_len = (u64::from(header_pages) + u64::from(data_pages)) * page;
    if flags & (RECOVERY_REQUIRED | PRIMARY_UNFLUSHED) != 0 {
        // redb rebuilds the region counts from the length (they may be torn by a crash
        // in the middle of a resize): only the length itself can be wrong.
        if len < page * (u64::from(header_pages) + 2) {
            return Err(Unusable::CutShort {
                len,
                expected: None,
            });
        }
        return Ok(Closed::NotCleanly);
    }
    let full_regions = u64::from(u32_at(head, FULL_REGIONS_AT));
    let trailing = u32_at(head, TRAILING_PAGES_AT);
    if trailing > data_pages {
        return Err(damaged(format!(
            "{trailing} pages in its last region, of {data_pages}"
        )));
    }
    let regions = full_regions + u64::from(trailing > 0);
    if regions == 0 || regions > MAX_REGIONS {
        return Err(damaged(format!("{regions} regions")));
    }
    let trailing_len = match trailing {
        0 => 0,
        n => (u64::from(header_pages) + u64::from(n)) * page,
    };
    let expected = page + full_regions * region_len + trailing_len;
    match len.cmp(&expected) {
        std::cmp::Ordering::Less => Err(Unusable::CutShort {
            len,
            expected: Some(expected),
        }),
        std::cmp::Ordering::Equal => Ok(Closed::Cleanly),
        // Grown by something else (a copy tool padding it): redb recomputes the layout
        // from the length, writing the header, so the dry run decides.
        std::cmp::Ordering::Greater => Ok(Closed::NotCleanly),
    }
}

fn damaged(detail: String) -> Unusable {
    Unusable::HeaderDamaged(detail)
}

fn u32_at(head: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&head[at..at + 4]);
    u32::from_le_bytes(b)
}

/// A header whose fields after the signature are a store's: the page size, a region
/// geometry and commit slots redb writes.
fn looks_like_a_header(head: &[u8]) -> bool {
    head.len() >= HEADER_LEN
        && u32_at(head, PAGE_SIZE_AT) == PAGE_SIZE
        && (1..=MAX_REGION_PAGES).contains(&u32_at(head, REGION_DATA_PAGES_AT))
        && SLOTS_AT
            .iter()
            .all(|&at| FORMAT_VERSIONS.contains(&head[at]))
}

/// What a file without redb's signature is, to name it.
fn foreign(head: &[u8]) -> Foreign {
    if head.starts_with(b"SQLite format 3\0") {
        return Foreign::Sqlite;
    }
    // Text: UTF-8 (but for a character cut at the end of `head`) without control
    // characters other than tab and line ends.
    let text = match std::str::from_utf8(head) {
        Ok(t) => Some(t),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    match text {
        Some(t)
            if !t
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) =>
        {
            let first = t.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let mut line: String = first.trim().chars().take(40).collect();
            if first.trim().chars().count() > 40 {
                line.push('…');
            }
            Foreign::Text(line)
        }
        _ => Foreign::Binary(head.iter().take(8).copied().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header redb writes for a new file of `regions` full regions: flags 0 (closed),
    /// page size 4096, no region header pages, `pages` per region.
    fn header(flags: u8, pages: u32, full: u32, trailing: u32) -> Vec<u8> {
        let mut h = vec![0u8; LOOK_AT];
        h[..9].copy_from_slice(&SIGNATURE);
        h[FLAGS_AT] = flags;
        h[PAGE_SIZE_AT..PAGE_SIZE_AT + 4].copy_from_slice(&4096u32.to_le_bytes());
        h[REGION_DATA_PAGES_AT..REGION_DATA_PAGES_AT + 4].copy_from_slice(&pages.to_le_bytes());
        h[FULL_REGIONS_AT..FULL_REGIONS_AT + 4].copy_from_slice(&full.to_le_bytes());
        h[TRAILING_PAGES_AT..TRAILING_PAGES_AT + 4].copy_from_slice(&trailing.to_le_bytes());
        h[64] = 3;
        h[192] = 3;
        h
    }

    fn with(mut h: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
        h[at..at + bytes.len()].copy_from_slice(bytes);
        h
    }

    /// One page of super-header, then a trailing region of 30 data pages.
    const LEN: u64 = 4096 + 30 * 4096;

    #[test]
    fn headers_are_read_with_redbs_rules() {
        let good = header(0, 1 << 20, 0, 30);
        type Case = (&'static str, Vec<u8>, u64, Result<Closed, Unusable>);
        let table: Vec<Case> = vec![
            ("closed cleanly", good.clone(), LEN, Ok(Closed::Cleanly)),
            (
                "closed cleanly, primary in slot 1, two-phase commit",
                header(1 | 4, 1 << 20, 0, 30),
                LEN,
                Ok(Closed::Cleanly),
            ),
            (
                "left open by a crash",
                header(RECOVERY_REQUIRED, 1 << 20, 0, 30),
                LEN,
                Ok(Closed::NotCleanly),
            ),
            (
                "a crash between a commit and its flush",
                header(PRIMARY_UNFLUSHED, 1 << 20, 0, 30),
                LEN,
                Ok(Closed::NotCleanly),
            ),
            (
                "a crash: the region counts are not trusted",
                header(RECOVERY_REQUIRED, 1 << 20, 7, 99),
                LEN,
                Ok(Closed::NotCleanly),
            ),
            (
                "longer than its header says: redb recomputes",
                good.clone(),
                LEN + 4096,
                Ok(Closed::NotCleanly),
            ),
            (
                "full regions",
                header(0, 16, 2, 0),
                4096 + 2 * 16 * 4096,
                Ok(Closed::Cleanly),
            ),
            (
                "an older redb format is redb's to report",
                with(good.clone(), 64, &[2]),
                LEN,
                Ok(Closed::Cleanly),
            ),
            ("empty", Vec::new(), 0, Err(Unusable::Empty)),
            (
                "cut to 100 bytes",
                good[..100].to_vec(),
                100,
                Err(Unusable::CutShort {
                    len: 100,
                    expected: None,
                }),
            ),
            (
                "cut to one page",
                good.clone(),
                4096,
                Err(Unusable::CutShort {
                    len: 4096,
                    expected: Some(LEN),
                }),
            ),
            (
                "cut in the middle",
                good.clone(),
                LEN - 4096,
                Err(Unusable::CutShort {
                    len: LEN - 4096,
                    expected: Some(LEN),
                }),
            ),
            (
                "cut after a crash",
                header(RECOVERY_REQUIRED, 1 << 20, 0, 30),
                4096,
                Err(Unusable::CutShort {
                    len: 4096,
                    expected: None,
                }),
            ),
            (
                "signature overwritten",
                with(good.clone(), 0, b"XXXX"),
                LEN,
                Err(Unusable::SignatureDamaged),
            ),
            (
                "unknown flags",
                header(0x40, 1 << 20, 0, 30),
                LEN,
                Err(damaged("unknown flags 0x40".into())),
            ),
            (
                "page size",
                with(good.clone(), PAGE_SIZE_AT, &512u32.to_le_bytes()),
                LEN,
                Err(damaged("page size 512".into())),
            ),
            (
                "no pages per region",
                header(0, 0, 0, 30),
                LEN,
                Err(damaged("0 pages per region".into())),
            ),
            (
                "more pages per region than redb addresses",
                header(0, (1 << 20) + 1, 0, 30),
                LEN,
                Err(damaged("1048577 pages per region".into())),
            ),
            (
                "region header pages",
                with(
                    good.clone(),
                    REGION_HEADER_PAGES_AT,
                    &u32::MAX.to_le_bytes(),
                ),
                LEN,
                Err(damaged("4294967295 header pages per region".into())),
            ),
            (
                "file format version",
                with(good.clone(), 192, &[0xee]),
                LEN,
                Err(damaged("file format version 238".into())),
            ),
            (
                "last region larger than a region",
                header(0, 16, 0, 17),
                LEN,
                Err(damaged("17 pages in its last region, of 16".into())),
            ),
            (
                "no regions",
                header(0, 16, 0, 0),
                LEN,
                Err(damaged("0 regions".into())),
            ),
        ];
        for (name, head, len, want) in table {
            let head = &head[..head.len().min(usize::try_from(len).unwrap())];
            assert_eq!(check(head, len), want, "{name}");
        }
    }

    #[test]
    fn files_that_are_not_redb_are_named() {
        let long = "é".repeat(100);
        let table: [(&[u8], Foreign); 6] = [
            (
                b"hello text\nsecond line\n",
                Foreign::Text("hello text".into()),
            ),
            (
                b"\n\n  indented first\n",
                Foreign::Text("indented first".into()),
            ),
            (
                long.as_bytes(),
                Foreign::Text(format!("{}…", "é".repeat(40))),
            ),
            (b"SQLite format 3\0\x10\0", Foreign::Sqlite),
            (
                b"\x7fELF\x02\x01\x01\0\0\0",
                Foreign::Binary(b"\x7fELF\x02\x01\x01\0".to_vec()),
            ),
            (b"\0\0\0", Foreign::Binary(vec![0, 0, 0])),
        ];
        for (head, want) in table {
            assert_eq!(
                check(head, head.len() as u64),
                Err(Unusable::Foreign(want.clone())),
                "{want:?}"
            );
        }
        // A multi-byte character cut at the end of what was read is still text.
        let mut cut = "ä".repeat(300).into_bytes();
        cut.truncate(LOOK_AT - 1);
        assert!(matches!(
            check(&cut, 10_000),
            Err(Unusable::Foreign(Foreign::Text(_)))
        ));
        // Terminal escapes are not text to repeat.
        assert!(matches!(
            check(b"\x1b]52;c;cm0=\x07", 12),
            Err(Unusable::Foreign(Foreign::Binary(_)))
        ));
    }

    #[test]
    fn messages_say_what_is_wrong() {
        let table = [
            (Unusable::Empty, "empty (0 bytes)"),
            (
                Unusable::CutShort {
                    len: 100,
                    expected: None,
                },
                "cut short: 100 bytes",
            ),
            (
                Unusable::CutShort {
                    len: 8192,
                    expected: Some(126_976),
                },
                "8192 bytes, where its header says 126976",
            ),
            (Unusable::SignatureDamaged, "signature"),
            (
                Unusable::Foreign(Foreign::Binary(vec![0xde, 0xad])),
                "first bytes: de ad",
            ),
            (Unusable::Foreign(Foreign::Text("hi".into())), "\"hi\""),
        ];
        for (u, needle) in table {
            assert!(u.what().contains(needle), "{:?}: {}", u, u.what());
        }
    }
}
