//! Integration tests of tool-sdk; the tests are the `[[test]]` targets beside this file.
//! [`mcp_peers`] finds (and on first use installs) the real MCP servers and clients the MCP
//! tests run against; [`browser`] is the user's browser of the OAuth tests.

pub mod browser;
pub mod mcp_peers;
pub mod script;
pub mod stepping;
pub mod stream_server;
