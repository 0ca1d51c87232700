//! The level policy of MCP tools, kept out of the protocol client: [`classify`] decides
//! each tool's level from the user's override, the cheap model's classification (asked
//! through the model client and cached in the store) and the floor of the tool's
//! annotations; [`user_level`] sets or removes the user's own level for a tool, for the
//! command line, `/mcp level` in chat and the API. Both read the definitions the client
//! saw (`mcp::definition`); neither speaks MCP.

pub mod classify;
pub mod user_level;
