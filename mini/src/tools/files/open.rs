//! How a file tool reaches a path: the workspace it is confined to, the path resolved
//! inside it (never outside, see [`Confined::resolve`]), and the error that tells the
//! model a path is missing and how to find what is there.

use std::io;

use crate::tools::workspace::{Confined, Resolved};
use crate::tools::{ToolContext, ToolOutput};

pub(super) fn workspace(ctx: &ToolContext<'_>) -> Result<Confined, ToolOutput> {
    Confined::new(ctx.workspace, "the workspace").map_err(ToolOutput::error)
}

pub(super) fn resolve(ws: &Confined, raw: &str) -> Result<Resolved, ToolOutput> {
    ws.resolve(raw).map_err(ToolOutput::error)
}

pub(super) fn missing(shown: &str, e: &io::Error) -> ToolOutput {
    if e.kind() == io::ErrorKind::NotFound {
        ToolOutput::error(format!(
            "{shown} does not exist in the workspace; list_dir shows what is there"
        ))
    } else {
        ToolOutput::error(format!("cannot open {shown}: {e}"))
    }
}
