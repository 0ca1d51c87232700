"""Generates the data both products are seeded with, from a fixed seed (stdlib only).

    python3 gen_data.py OUT_DIR

Writes into OUT_DIR:
  memories.jsonl  100 000 memories, one JSON object a line: content, category,
                  priority (0 critical … 3 low; the first 15 critical, as Evolve's FIFO
                  cap allows), importance 1-5, age_days 0-364. The first N lines are
                  the N-memory store. Three in four are English-like (10-20 words from a
                  skewed 3 000-word vocabulary), one in four Chinese (6-12 words).
  query.txt       the topic both products select memories for (8 words).
  session.jsonl   a long session of 2 000+ messages: user questions, tool rounds (one
                  turn in three, 1-2 calls with 1-6 KB outputs), replies; a quarter CJK.
                  Objects: role, content, calls [{id, name, arguments}], call_id, name.
  extras.json     the system prompt, memory block, summary and 50 ring (L2) entries.
"""

import json
import os
import random
import sys

SEED = 0x9E3779B9
LETTERS = "abcdefghijklmnopqrstuvwxyz"
ZH = [
    "我们", "需要", "检查", "配置", "文件", "内存", "历史", "压缩", "模型", "请求", "错误",
    "重试", "工具", "输出", "记忆", "任务", "用户", "偏好", "项目", "部署", "服务器", "数据库",
    "测试", "日志", "网络", "缓存", "版本", "接口", "文档", "代码", "周末", "会议", "提醒",
    "喜欢", "咖啡", "中文", "回答", "简洁", "备份", "路由器",
]
EN = [
    "the", "build", "fails", "when", "cargo", "runs", "tests", "memory", "history", "budget",
    "tokens", "file", "path", "config", "server", "request", "error", "retry", "stream", "model",
    "rust", "trait", "lifetime", "borrow", "async", "thread", "queue", "index", "cache", "hash",
]
CATEGORIES = ["instruction", "preference", "reminder", "fact", "general"]


def vocabulary(rng):
    words, seen = [], set()
    while len(words) < 3000:
        w = "".join(rng.choice(LETTERS) for _ in range(3 + rng.randrange(7)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def word(rng, vocab):
    v = len(vocab)
    return vocab[rng.randrange(v) * rng.randrange(v) // v]


def memory_text(rng, vocab):
    if rng.randrange(4) == 0:
        return "".join(rng.choice(ZH) for _ in range(6 + rng.randrange(7)))
    return " ".join(word(rng, vocab) for _ in range(10 + rng.randrange(11)))


def sentence(rng, words):
    if rng.randrange(4) == 0:
        s = ""
        for i in range(words):
            s += rng.choice(ZH)
            if i % 8 == 7:
                s += "，"
        return s
    return " ".join(rng.choice(EN) for _ in range(words))


def tool_output(rng, size):
    out, line = [], 0
    n = 0
    while n < size:
        s = f"{line:5}: {sentence(rng, 8)}\n"
        out.append(s)
        n += len(s.encode())
        line += 1
    return "".join(out)


def session(rng, n):
    msgs, call = [], 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": sentence(rng, 10 + rng.randrange(40))})
        if rng.randrange(3) == 0:
            calls = []
            for _ in range(1 + rng.randrange(2)):
                call += 1
                calls.append({"id": f"call_{call}", "name": "read_file", "arguments": json.dumps({"path": f"src/mod{call}.rs"})})
            msgs.append({"role": "assistant", "content": sentence(rng, 12), "calls": calls})
            for c in calls:
                msgs.append({"role": "tool", "content": tool_output(rng, 1000 + rng.randrange(5000)), "call_id": c["id"], "name": c["name"]})
        msgs.append({"role": "assistant", "content": sentence(rng, 40 + rng.randrange(150))})
    msgs.append({"role": "user", "content": sentence(rng, 25)})
    return msgs


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(SEED)
    vocab = vocabulary(rng)
    query = " ".join(word(rng, vocab) for _ in range(6)) + " " + rng.choice(ZH) + rng.choice(ZH)
    with open(os.path.join(out, "query.txt"), "w", encoding="utf-8") as f:
        f.write(query)
    with open(os.path.join(out, "memories.jsonl"), "w", encoding="utf-8") as f:
        for i in range(100_000):
            m = {
                "content": memory_text(rng, vocab),
                "category": CATEGORIES[rng.randrange(5)],
                "priority": 0 if i < 15 else 1 + rng.randrange(3),
                "importance": 1 + rng.randrange(5),
                "age_days": rng.randrange(365),
            }
            f.write(json.dumps(m, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "session.jsonl"), "w", encoding="utf-8") as f:
        for m in session(rng, 2000):
            f.write(json.dumps(m, ensure_ascii=False) + "\n")
    extras = {
        "system": "You are a personal assistant. " + sentence(rng, 250),
        "memory_block": "\n".join("- " + sentence(rng, 15) for _ in range(30)),
        "summary": sentence(rng, 300),
        "ring": [{"user": sentence(rng, 20), "assistant": sentence(rng, 80), "thinking": sentence(rng, 30)} for _ in range(50)],
    }
    with open(os.path.join(out, "extras.json"), "w", encoding="utf-8") as f:
        json.dump(extras, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
