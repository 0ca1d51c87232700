// Preload for Node MCP servers under test: `node --require tests/mcp-peers/loopback.cjs SERVER`.
//
// @modelcontextprotocol/server-everything's streamableHttp mode calls `app.listen(PORT)`
// with no host, so it binds every interface, and it has no HOST setting. This preload
// rewrites every TCP `listen` of the process to 127.0.0.1 (a given host is replaced too),
// leaving Unix sockets alone, and reports the bound port on stderr as
//   evolve-loopback: listening on 127.0.0.1:PORT
// so PORT=0 works (the server itself would print "port 0").
'use strict';
const net = require('net');

const LOOPBACK = '127.0.0.1';
const original = net.Server.prototype.listen;

function isPort(v) {
  return typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
}

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (isPort(first) || first === undefined || typeof first === 'function') {
    // listen([port][, host][, backlog][, callback])
    const port = isPort(first) ? Number(first) : 0;
    const rest = isPort(first) ? args.slice(1) : args;
    if (typeof rest[0] === 'string') rest.shift();
    args = [port, LOOPBACK, ...rest];
  } else if (first !== null && typeof first === 'object' && first.path === undefined
             && first.fd === undefined && first._handle === undefined && !(first instanceof net.Server)) {
    // listen(options[, callback]) with a TCP port
    args = [{ ...first, host: LOOPBACK }, ...args.slice(1)];
  }
  this.once('listening', () => {
    const address = this.address();
    if (address !== null && typeof address === 'object') {
      process.stderr.write(`evolve-loopback: listening on ${address.address}:${address.port}\n`);
    }
  });
  return original.apply(this, args);
};
