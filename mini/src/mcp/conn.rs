//! One connection: starting a server (stdio child or streamable HTTP), the handshake,
//! listing and calling tools, and noticing `tools/list_changed`.
