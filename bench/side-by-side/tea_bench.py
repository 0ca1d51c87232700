"""tea-agent 0.17.6 side of the side-by-side benchmark, through tea-agent's own code.

Run by run.sh with the tea-agent venv's python (it imports tea_agent):

    python tea_bench.py select DATA_DIR N ITERS   MemoryManager.select_memories on a store of N
    python tea_bench.py history DATA_DIR ITERS    build_api_messages on the 2 000-message session
    python tea_bench.py history-whole DATA_DIR ITERS   the same with max_history off
    python tea_bench.py serve EVOLVE_BIN STARTS   both servers: start to first /health, idle RSS

Each prints machine-readable lines starting with "SIDE " (key=value pairs) that run.sh
parses; nothing is asserted.
"""

import contextlib
import copy
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta


def median_ns(samples):
    return int(statistics.median(samples))


def load_memories(data, n):
    out = []
    with open(os.path.join(data, "memories.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            out.append(json.loads(line))
    return out


def cmd_select(data, n, iters):
    import hashlib
    import logging

    logging.disable(logging.INFO)  # tea-agent's INFO lines would go to stderr only
    from tea_agent.memory import MemoryManager
    from tea_agent.store import Storage

    tmp = tempfile.mkdtemp(prefix="tea-select-")
    try:
        db = os.path.join(tmp, "chat_history.db")
        storage = Storage(db)  # tea-agent creates its own schema (store/migration.py)
        now = datetime.now()
        rows = []
        for i, m in enumerate(load_memories(data, n)):
            created = (now - timedelta(days=m["age_days"])).strftime("%Y-%m-%d %H:%M:%S")
            h = hashlib.sha256(m["content"].encode("utf-8")).hexdigest()[:16]
            rows.append((f"m{i:06d}", m["content"], m["category"], m["priority"], m["importance"], None, "", None, 0, h, created, created))
        # Seeding only (not measured): one transaction instead of add_memory's commit per row;
        # same columns as store/_memories.py MemoryStore.add_memory.
        c = sqlite3.connect(db)
        c.executemany(
            "INSERT INTO memories (id, content, category, priority, importance, expires_at, tags, "
            "source_topic_id, pinned, content_hash, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        c.commit()
        c.close()
        mm = MemoryManager(storage)
        query = open(os.path.join(data, "query.txt"), encoding="utf-8").read()
        # Warm up until the age decay that select_memories runs first has nothing left to do,
        # so every timed call sees the same store.
        for _ in range(6):
            if mm.degrade_by_age() == 0:
                break
        chosen = len(mm.select_memories(query))
        looked = len(storage.get_active_memories(limit=500))
        samples, cpu = [], []
        for _ in range(iters):
            t, c = time.perf_counter_ns(), time.process_time_ns()
            mm.select_memories(query)
            cpu.append(time.process_time_ns() - c)
            samples.append(time.perf_counter_ns() - t)
        print(
            f"SIDE product=tea measure=select n={n} median_ns={median_ns(samples)} cpu_ns={median_ns(cpu)} "
            f"samples={iters} considered={looked} chosen={chosen}",
            flush=True,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tea_messages(data):
    msgs = []
    with open(os.path.join(data, "session.jsonl"), encoding="utf-8") as f:
        for line in f:
            m = json.loads(line)
            if m["role"] == "tool":
                msgs.append({"role": "tool", "tool_call_id": m["call_id"], "name": m["name"], "content": m["content"]})
            elif m.get("calls"):
                calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in m["calls"]]
                msgs.append({"role": "assistant", "content": m["content"], "tool_calls": calls})
            else:
                msgs.append({"role": m["role"], "content": m["content"]})
    return msgs


def cmd_history(data, iters, whole=False):
    import logging

    logging.disable(logging.WARNING)
    from tea_agent.session.context import SessionContext
    from tea_agent.session.history_builder import build_api_messages, estimate_messages_tokens

    extras = json.load(open(os.path.join(data, "extras.json"), encoding="utf-8"))
    session = tea_messages(data)
    system = extras["system"]

    def context():
        ctx = SessionContext()
        ctx.model = "bench-model"
        ctx.max_context_tokens = 32768  # the same 32k window Evolve builds for
        ctx.supports_reasoning = False
        if whole:
            # max_history < 0 turns off the default cut to the last 10 user turns
            # (config.py max_history = 10), so the whole session goes to its token trimming.
            ctx.max_history = -1
        ctx.messages = [{"role": "system", "content": system}] + copy.deepcopy(session)
        ctx._semantic_summary = extras["summary"]
        ctx._injected_memories_text = extras["memory_block"]
        ctx._level2 = [{"user": e["user"], "assistant": e["assistant"], "kind": "full"} for e in extras["ring"]]
        return ctx

    out = build_api_messages(context(), system)
    tokens = estimate_messages_tokens(out)
    samples = []
    for _ in range(iters):
        ctx = context()  # build_api_messages writes its trims back into the session: fresh copy each time (not timed)
        t = time.perf_counter_ns()
        build_api_messages(ctx, system)
        samples.append(time.perf_counter_ns() - t)
    measure = "history_whole" if whole else "history"
    print(f"SIDE product=tea measure={measure} messages={len(session)} median_ns={median_ns(samples)} samples={iters} out_messages={len(out)} tokens={tokens}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss_kb(pid):
    """VmRSS of pid and all its descendants, in kB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        with contextlib.suppress(OSError):
            for t in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError):
                    todo.extend(int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split())
    return total


def count_tree(pid):
    n, todo = 0, [pid]
    while todo:
        p = todo.pop()
        n += 1
        with contextlib.suppress(OSError):
            for t in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError):
                    todo.extend(int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split())
    return n


def start_and_probe(argv, env, port, cwd, timeout=120.0):
    """Starts argv; returns (process, ns from spawn to the first 200 on /health)."""
    url = f"http://127.0.0.1:{port}/health"
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    r.read()
                    return proc, time.perf_counter_ns() - t0
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"{argv[0]} exited with {proc.returncode} before answering /health")
        time.sleep(0.0005)
    raise RuntimeError(f"{argv} did not answer /health within {timeout} s")


def stop(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 15)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def tea_home(root):
    home = os.path.join(root, "home")
    cfg = os.path.join(home, ".tea_agent")
    os.makedirs(cfg, exist_ok=True)
    # A provider that points at a closed loopback port, with a dummy key: no model is called.
    with open(os.path.join(cfg, "provider.yaml"), "w", encoding="utf-8") as f:
        f.write(
            "version: 1\nproviders:\n  bench:\n    api_url: http://127.0.0.1:9/v1\n"
            "    api_keys: [sk-bench]\n    api_key: sk-bench\n    default_model: bench-model\n"
            "    source: custom\n    models:\n      bench-model:\n        max_context_tokens: 32768\n"
        )
    return home


def cmd_serve(evolve_bin, starts, idle_s):
    base_env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    results = {}
    for product in ("evolve", "tea"):
        times, rss, procs = [], [], 0
        for _ in range(starts):
            root = tempfile.mkdtemp(prefix=f"sbs-{product}-")
            port = free_port()
            env = dict(base_env)
            if product == "evolve":
                env.update(HOME=root, EVOLVE_HOME=root, OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="sk-bench", EVOLVE_MODEL="bench-model")
                argv = [evolve_bin, "serve", "--port", str(port)]
            else:
                env.update(HOME=tea_home(root))
                argv = [sys.executable, "-m", "tea_agent.server", "--port", str(port)]
            proc = None
            try:
                # cwd = the temp dir: tea-agent keeps its store in ./.tea_agent_run by default
                proc, ns = start_and_probe(argv, env, port, root)
                times.append(ns)
                time.sleep(idle_s)
                rss.append(tree_rss_kb(proc.pid))
                procs = count_tree(proc.pid)
            finally:
                if proc is not None:
                    stop(proc)
                shutil.rmtree(root, ignore_errors=True)
        results[product] = (times, rss, procs)
        print(f"SIDE product={product} measure=start median_ns={median_ns(times)} samples={starts} processes={procs}", flush=True)
        print(f"SIDE product={product} measure=rss median_kb={int(statistics.median(rss))} samples={starts} idle_s={idle_s}", flush=True)


def main():
    cmd = sys.argv[1]
    if cmd == "select":
        cmd_select(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "history":
        cmd_history(sys.argv[2], int(sys.argv[3]))
    elif cmd == "history-whole":
        cmd_history(sys.argv[2], int(sys.argv[3]), whole=True)
    elif cmd == "serve":
        cmd_serve(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 3.0)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
