"""Prints the side-by-side table from the SIDE lines run.sh collected (stdlib only).

    python3 table.py SIDE_FILE MACHINE_LINE
"""

import sys


def parse(path):
    rows = {}
    for line in open(path, encoding="utf-8"):
        if not line.startswith("SIDE "):
            continue
        kv = dict(p.split("=", 1) for p in line.split()[1:])
        key = (kv["measure"], kv.get("n", kv.get("messages", "")))
        rows.setdefault(key, {})[kv["product"]] = kv
    return rows


def dur(ns):
    ns = float(ns)
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def main():
    rows = parse(sys.argv[1])
    print(sys.argv[2])
    head = ("measure", "Evolve (median)", "tea-agent (median)", "ratio", "samples E / t", "notes")
    table = []
    for n in ("1000", "10000", "100000"):
        r = rows.get(("select", n), {})
        e, t = r.get("evolve"), r.get("tea")
        if not (e and t):
            continue
        table.append((
            "memory selection, " + f"{int(n):,}".replace(",", " ") + " memories",
            dur(e["median_ns"]), dur(t["median_ns"]),
            f"{float(t['median_ns']) / float(e['median_ns']):.0f}×",
            f"{e['samples']} / {t['samples']}",
            f"Evolve scores {e['considered']}, tea-agent looks at {t['considered']} (its CPU {dur(t['cpu_ns'])}); chosen {e['chosen']} / {t['chosen']}",
        ))
    evolve_history = {k[1]: r["evolve"] for k, r in rows.items() if k[0] == "history" and "evolve" in r}
    for key, r in rows.items():
        if key[0] not in ("history", "history_whole"):
            continue
        e, t = evolve_history.get(key[1]), r.get("tea")
        if e and t:
            label = f"history build, {key[1]} messages, 32k window"
            if key[0] == "history_whole":
                label += " (tea: max_history off)"
            else:
                label += " (tea: defaults)"
            table.append((
                label,
                dur(e["median_ns"]), dur(t["median_ns"]),
                f"{float(t['median_ns']) / float(e['median_ns']):.0f}×",
                f"{e['samples']} / {t['samples']}",
                f"sends {e['out_messages']} msgs ≈{e['tokens']} tok / {t['out_messages']} msgs ≈{t['tokens']} tok",
            ))
    r = rows.get(("start", ""), {})
    e, t = r.get("evolve"), r.get("tea")
    if e and t:
        table.append((
            "server start → first 200 on /health",
            dur(e["median_ns"]), dur(t["median_ns"]),
            f"{float(t['median_ns']) / float(e['median_ns']):.0f}×",
            f"{e['samples']} / {t['samples']}",
            f"processes: {e['processes']} / {t['processes']}",
        ))
    r = rows.get(("rss", ""), {})
    e, t = r.get("evolve"), r.get("tea")
    if e and t:
        table.append((
            "idle RSS of the server (process tree)",
            f"{int(e['median_kb']) / 1024:.1f} MiB", f"{int(t['median_kb']) / 1024:.1f} MiB",
            f"{int(t['median_kb']) / int(e['median_kb']):.1f}×",
            f"{e['samples']} / {t['samples']}",
            f"VmRSS {e['idle_s']} s after the first /health",
        ))
    widths = [max(len(str(row[i])) for row in [head] + table) for i in range(len(head))]
    line = lambda row: "| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |"
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in table:
        print(line(row))
    print("ratio = tea-agent median / Evolve median (higher: Evolve faster or smaller).")


if __name__ == "__main__":
    main()
