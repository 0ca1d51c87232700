#!/usr/bin/env bash
# Builds the `FROM scratch` image of cross/Dockerfile and checks it works as documented.
#
# Run from anywhere, as root: cross/docker-verify.sh
# Needs: the static binary (EVOLVE_BIN, default the one `.ci/build-musl` makes; built
# with it when missing), Debian's docker.io (installed quietly when `dockerd` is missing;
# also openssl, curl, python3, iproute2 and file). Starts a local dockerd (`--iptables=false --bridge=none`,
# no registry needed) when none answers, and stops it again at the end. Network: loopback
# only (the container runs with --network host).
# Checks: the image builds; `evolve serve` (the default command) answers /health; a
# request without the token gets 401, with the token read from the volume 200; the token
# and store survive a restart with the same volume; the process runs as a non-root uid;
# `docker stop` ends it cleanly (exit code 0); TLS works in scratch with the compiled-in
# roots (a private CA is refused) and with SSL_CERT_FILE naming a PEM bundle.
# Prints: each check, the image size and the time of each step; exit code 0 if all pass.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${EVOLVE_BIN:-target/debian/x86_64-unknown-linux-musl/release/evolve}"
IMAGE=evolve:verify
NAME="evolve-verify-$$"
VOLUME="evolve-verify-$$"
WORK=$(mktemp -d)
STARTED_DOCKERD=""
TLS_PID=""

now_ms() { date +%s%3N; }
T0=$(now_ms)
step() { # label start_ms
    echo "  ($1: $(($(now_ms) - $2)) ms)"
}
# (No `producer | grep -q`: with pipefail, grep leaving early fails the pipe.)
listening() { [ -n "$(ss -ltnH "sport = :$1")" ]; }
in_log() {
    local log
    log=$(docker logs "$NAME" 2>&1)
    grep -q -- "$1" <<<"$log"
}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

cleanup() {
    set +e
    docker rm -f "$NAME" >/dev/null 2>&1
    docker volume rm -f "$VOLUME" >/dev/null 2>&1
    docker rmi -f "$IMAGE" >/dev/null 2>&1
    [ -n "$TLS_PID" ] && kill "$TLS_PID" 2>/dev/null
    if [ -n "$STARTED_DOCKERD" ]; then
        kill "$STARTED_DOCKERD" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 0.1; done
        echo "stopped the dockerd this script started"
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- tools -------------------------------------------------------------------------
if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null \
    || ! command -v openssl >/dev/null || ! command -v curl >/dev/null \
    || ! command -v python3 >/dev/null || ! command -v ss >/dev/null || ! command -v file >/dev/null; then
    t=$(now_ms)
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker.io openssl curl python3 iproute2 file >/dev/null
    step "installed docker.io" "$t"
fi
if [ ! -x "$BIN" ]; then
    .ci/build-musl
fi
grep -Eq 'statically linked|static-pie linked' <<<"$(file "$BIN")" || fail "$BIN is not a static binary"

# --- the daemon ----------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
    t=$(now_ms)
    dockerd --iptables=false --bridge=none --pidfile "$WORK/dockerd.pid" \
        >"$WORK/dockerd.log" 2>&1 </dev/null &
    STARTED_DOCKERD=$!
    for _ in $(seq 1 300); do docker info >/dev/null 2>&1 && break; sleep 0.1; done
    docker info >/dev/null 2>&1 || { tail -20 "$WORK/dockerd.log" >&2; fail "dockerd did not start"; }
    echo "started dockerd (pid $STARTED_DOCKERD)"
    step "dockerd start" "$t"
fi

# --- build ---------------------------------------------------------------------------
t=$(now_ms)
mkdir -p "$WORK/context/data"
cp "$BIN" "$WORK/context/evolve"
docker build -q -f cross/Dockerfile -t "$IMAGE" "$WORK/context" 2>"$WORK/build.err" >/dev/null \
    || { cat "$WORK/build.err" >&2; fail "docker build"; }
SIZE=$(docker image inspect "$IMAGE" --format '{{.Size}}')
echo "ok   image $IMAGE built: $SIZE bytes (binary $(stat -c %s "$BIN") bytes)"
step "docker build" "$t"

# --- serve ---------------------------------------------------------------------------
# The image's own command when 8080 is free; the same command on another port if not.
PORT=8080
ARGS=()
if listening 8080; then
    PORT=18080
    while listening $PORT; do PORT=$((PORT + 1)); done
    ARGS=(serve --host 0.0.0.0 --port "$PORT")
    echo "note: port 8080 is taken here; running the same command on port $PORT"
fi
URL="http://127.0.0.1:$PORT"
run_server() {
    docker run -d --name "$NAME" --network host -v "$VOLUME:/data" "$IMAGE" "${ARGS[@]}" >/dev/null
    for _ in $(seq 1 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" = 200 ] && return 0
        sleep 0.05
    done
    docker logs "$NAME" >&2
    fail "/health did not answer 200 on $URL"
}
t=$(now_ms)
run_server
echo "ok   /health answers: $(curl -s "$URL/health")"
step "docker run to /health 200" "$t"

CODE=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/models")
[ "$CODE" = 401 ] || fail "a request without the token got $CODE, not 401"
echo "ok   without the token: 401"
DATA=$(docker volume inspect "$VOLUME" --format '{{.Mountpoint}}')
TOKEN=$(cat "$DATA/serve.token")
for _ in $(seq 1 20); do in_log "$TOKEN" && break; sleep 0.05; done
in_log "$TOKEN" || fail "the token was not printed in docker logs"
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/models")
[ "$CODE" = 200 ] || fail "a request with the token got $CODE, not 200"
echo "ok   with the token from the volume (/data/serve.token, also in docker logs): 200"

PID=$(docker inspect "$NAME" --format '{{.State.Pid}}')
USER_ID=$(awk '/^Uid:/ { print $2 }' "/proc/$PID/status")
[ "$USER_ID" != 0 ] || fail "the server runs as root"
echo "ok   the server runs as uid $USER_ID (not root); volume files: $(stat -c '%u:%g' "$DATA/evolve.redb")"

t=$(now_ms)
docker stop "$NAME" >/dev/null
EXIT=$(docker inspect "$NAME" --format '{{.State.ExitCode}}')
[ "$EXIT" = 0 ] || fail "docker stop: exit code $EXIT"
in_log 'evolve serve stopped' || fail "no clean stop in the log"
echo "ok   docker stop: a clean stop, exit code 0"
step "docker stop" "$t"

docker rm "$NAME" >/dev/null
run_server
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/models")
[ "$CODE" = 200 ] || fail "after a restart the same token got $CODE"
for _ in $(seq 1 20); do [ "$(docker logs "$NAME" 2>&1 | grep -c "login#token=$TOKEN")" -ge 1 ] && break; sleep 0.05; done
[ "$(docker logs "$NAME" 2>&1 | grep -c 'login#token=')" = "$(docker logs "$NAME" 2>&1 | grep -c "login#token=$TOKEN")" ] || fail "a restart made a new token"
echo "ok   a new container on the same volume keeps the token and the store"
docker rm -f "$NAME" >/dev/null

# --- TLS in scratch ------------------------------------------------------------------
t=$(now_ms)
grep -q 'ISRG Root X1' "$BIN" || fail "the compiled-in root certificates are missing"
(
    cd "$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
        -subj /CN=evolve-verify-ca -keyout ca.key -out ca.pem 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
        -keyout leaf.key -out leaf.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >leaf.ext
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
        -extfile leaf.ext -out leaf.pem 2>/dev/null
)
TLS_PORT=18443
while listening $TLS_PORT; do TLS_PORT=$((TLS_PORT + 1)); done
# A TLS model server on loopback with a certificate from the private CA: it lists one
# model and refuses completions (enough to see the handshake pass or fail).
cat >"$WORK/tls_server.py" <<'PY'
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply(200, {"object": "list", "data": [{"id": "verify", "object": "model"}]})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(400, {"error": {"message": "docker-verify: TLS only"}})
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
python3 "$WORK/tls_server.py" "$TLS_PORT" "$WORK/leaf.pem" "$WORK/leaf.key" </dev/null &
TLS_PID=$!
for _ in $(seq 1 50); do listening $TLS_PORT && break; sleep 0.1; done
doctor() {
    timeout 60 docker run --rm --network host -e OPENAI_BASE_URL="https://127.0.0.1:$TLS_PORT/v1" \
        -e OPENAI_API_KEY=verify "$@" "$IMAGE" doctor 2>&1 || true
}
OUT=$(doctor)
grep -q 'UnknownIssuer' <<<"$OUT" || { echo "$OUT" >&2; fail "a private CA was not refused"; }
echo "ok   TLS in scratch, bundled roots: a server signed by a private CA is refused (UnknownIssuer)"
chmod 644 "$WORK/ca.pem"
OUT=$(doctor -v "$WORK/ca.pem:/ca.pem:ro" -e SSL_CERT_FILE=/ca.pem)
if ! grep -q '✓ server reachable' <<<"$OUT"; then
    echo "$OUT" >&2
    fail "SSL_CERT_FILE: the CA in the bundle was not trusted"
fi
echo "ok   SSL_CERT_FILE=/ca.pem (the private CA): $(grep -m1 '✓ server reachable' <<<"$OUT" | tr -s ' ')"
OUT=$(doctor -e SSL_CERT_FILE=/missing.pem)
grep -q 'SSL_CERT_FILE' <<<"$OUT" || { echo "$OUT" >&2; fail "a missing SSL_CERT_FILE was not named"; }
echo "ok   SSL_CERT_FILE naming a missing file: $(head -1 <<<"$OUT" | cut -c1-100)"
step "TLS checks" "$t"

echo "docker-verify: all checks passed in $(($(now_ms) - T0)) ms (image $SIZE bytes)"
