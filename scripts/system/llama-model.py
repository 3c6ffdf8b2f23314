#!/usr/bin/env python3
"""Writes a tiny random-weight llama GGUF (vocab 512, dim 64, 2 layers, ~0.3 MB).

Runs inside the sid root (python3-gguf, python3-numpy). The text it generates is noise; the
point is a real llama-server speaking the real protocols. Deterministic: a fixed seed.
Usage: llama-model.py OUT.gguf
"""
import sys

import numpy as np
import gguf

out = sys.argv[1]
rng = np.random.default_rng(7)
VOCAB, DIM, LAYERS, HEADS, FF, CTX = 512, 64, 2, 4, 128, 2048

w = gguf.GGUFWriter(out, "llama")
w.add_name("pynchy-tiny")
w.add_context_length(CTX)
w.add_embedding_length(DIM)
w.add_block_count(LAYERS)
w.add_feed_forward_length(FF)
w.add_head_count(HEADS)
w.add_head_count_kv(HEADS)
w.add_rope_dimension_count(DIM // HEADS)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

# SPM vocabulary with byte fallback: specials, 256 byte tokens, ChatML markers, then words.
T = gguf.TokenType
tokens, scores, types = [], [], []
def tok(text, kind, score=0.0):
    tokens.append(text.encode("utf-8")); scores.append(score); types.append(kind)
tok("<unk>", T.UNKNOWN); tok("<s>", T.CONTROL); tok("</s>", T.CONTROL)
for b in range(256):
    tok("<0x%02X>" % b, T.BYTE)
tok("<|im_start|>", T.CONTROL); tok("<|im_end|>", T.CONTROL)
words = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
words += [str(d) for d in range(10)] + [".", ",", "!", "?", "'", "-", ":", ";"]
pieces = ["\u2581" + x for x in words] + words
syll = ["the", "and", "ing", "er", "on", "at", "en", "re", "in", "an", "is", "it", "to", "of", "he", "lo", "hi", "ok"]
pieces += ["\u2581" + s for s in syll] + syll
i = 0
while len(tokens) < VOCAB:
    p = pieces[i] if i < len(pieces) else "\u2581w%d" % i
    if p.encode("utf-8") not in tokens:
        tok(p, T.NORMAL, -float(i))
    i += 1
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(tokens.index(b"<|im_end|>"))
w.add_unk_token_id(0)
w.add_add_bos_token(False)
w.add_chat_template(
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

def t(name, *shape, norm=False):
    a = np.ones(shape, dtype=np.float32) if norm else rng.normal(0, 0.05, size=shape).astype(np.float32)
    w.add_tensor(name, a if norm else a.astype(np.float16))

t("token_embd.weight", VOCAB, DIM)
for l in range(LAYERS):
    p = "blk.%d." % l
    t(p + "attn_norm.weight", DIM, norm=True)
    t(p + "attn_q.weight", DIM, DIM)
    t(p + "attn_k.weight", DIM, DIM)
    t(p + "attn_v.weight", DIM, DIM)
    t(p + "attn_output.weight", DIM, DIM)
    t(p + "ffn_norm.weight", DIM, norm=True)
    t(p + "ffn_gate.weight", FF, DIM)
    t(p + "ffn_up.weight", FF, DIM)
    t(p + "ffn_down.weight", DIM, FF)
t("output_norm.weight", DIM, norm=True)
t("output.weight", VOCAB, DIM)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(out)
