//! The file tools: `read_file`, `list_dir`, `search_files`, `write_file`, `edit_file`.
//! Every path goes through [`Confined::resolve`] first and the tools then touch only the
//! resolved path; walking directories never follows symlinks (a symlink is listed, not
//! entered), so a walk cannot leave the workspace either.
//!
//! One file per tool (`read.rs`, `list.rs`, `search.rs`; `write.rs` for `write_file` and
//! `edit_file`); beside them how a tool reaches a path (`open.rs`) and what it makes of a
//! file's bytes (`bytes.rs`, also used by the web and skill tools).

mod bytes;
mod list;
mod open;
mod read;
mod search;
mod write;

pub use bytes::{clip_bytes, human_size, looks_binary};
pub use list::{list_dir, LIST_MAX_DEPTH, LIST_MAX_ENTRIES};
pub use read::{read_file, DEFAULT_READ_LINES};
pub use search::{search_files, SEARCH_MAX_HITS};
pub use write::{edit_file, write_file};

#[cfg(all(test, unix))]
mod tests;
