"""The official OpenAI Python client against `evolve serve` (run by tests/api/run.sh).

What a program written for OpenAI sees when it points `base_url` at Evolve: completions
streamed and not, sessions carried by a header or a body field, the model list, errors
raised as the client's own exception types, and the `evolve` turn record next to the
OpenAI fields. The model behind the server is tests/fake-llm with `--echo`: every
answer is `echo: ` and the turn's input, so the assertions can name the exact text.

The server's token (`$EVOLVE_HOME/serve.token`) is the client's API key, as an OpenAI key
would be; a wrong key is the client's AuthenticationError.

Usage: EVOLVE_URL=http://127.0.0.1:PORT EVOLVE_TOKEN=… python openai_client.py
Prints one line per check and exits non-zero when any fails.
"""

import json
import os
import sys
import traceback
import urllib.request

import openai
from openai import OpenAI

URL = os.environ["EVOLVE_URL"].rstrip("/")
TOKEN = os.environ["EVOLVE_TOKEN"]
# No retries: a 409 or 5xx must show up as the error it is, not be hidden by a retry.
client = OpenAI(base_url=URL + "/v1", api_key=TOKEN, max_retries=0, timeout=60)


def get_json(path):
    """A GET on the Evolve API itself (what the client library has no call for)."""
    req = urllib.request.Request(URL + path, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def test_a_wrong_key_is_an_authentication_error():
    wrong = OpenAI(base_url=URL + "/v1", api_key=TOKEN[:-1] + "x", max_retries=0, timeout=60)
    for call in (wrong.models.list, lambda: wrong.chat.completions.create(
            model="evolve", messages=[{"role": "user", "content": "hi"}])):
        try:
            call()
        except openai.AuthenticationError as e:
            assert e.status_code == 401, e
        else:
            raise AssertionError("a wrong key was accepted")


def ask(text, **kw):
    return client.chat.completions.create(
        model="evolve",
        messages=[
            {"role": "system", "content": "ignored: the session has its own"},
            {"role": "user", "content": text},
        ],
        **kw,
    )


def test_models_lists_evolve():
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert "evolve" in ids, ids
    assert all(m.object == "model" and m.owned_by == "evolve" for m in models.data), models


def test_a_completion_is_an_openai_object_with_the_turn_record():
    c = ask("hello there")
    assert c.object == "chat.completion", c
    assert c.choices[0].message.role == "assistant"
    assert c.choices[0].message.content == "echo: hello there", c.choices[0].message.content
    assert c.choices[0].finish_reason == "stop"
    assert c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens > 0, c.usage
    # The extension field: pydantic keeps unknown fields in model_extra.
    record = c.model_extra["evolve"]
    # The reply is carried once, in the message; the record holds the rest of the turn.
    assert record["turn"] == 1 and "reply" not in record, record
    assert record["session"].startswith("s"), record
    assert record["tools"] == [] and record["needs_person"] is False, record


def test_the_session_id_comes_back_in_a_header():
    raw = client.chat.completions.with_raw_response.create(
        model="evolve", messages=[{"role": "user", "content": "which session?"}]
    )
    sid = raw.headers.get("x-evolve-session")
    c = raw.parse()
    assert sid and c.model_extra["evolve"]["session"] == sid, (sid, c.model_extra)


def test_a_stream_is_chunks_that_add_up_to_the_answer():
    text, roles, finish, usage = [], [], None, None
    with client.chat.completions.with_streaming_response.create(
        model="evolve",
        messages=[{"role": "user", "content": "stream me a fairly long sentence please"}],
        stream=True,
    ) as resp:
        assert resp.headers.get("content-type", "").startswith("text/event-stream"), resp.headers
        sid = resp.headers.get("x-evolve-session")
        chunks = list(resp.parse())
    for chunk in chunks:
        assert chunk.object == "chat.completion.chunk", chunk
        delta = chunk.choices[0].delta
        if delta.role:
            roles.append(delta.role)
        if delta.content:
            text.append(delta.content)
        if chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
            usage = chunk.usage
    assert "".join(text) == "echo: stream me a fairly long sentence please", text
    assert len(text) > 1, "the answer arrives in pieces"
    assert roles == ["assistant"], roles
    assert finish == "stop" and usage and usage.completion_tokens > 0, (finish, usage)
    assert sid, "the stream names its session"


def test_sessions_continue_by_header_and_by_body_field():
    first = ask("my name is Ada")
    sid = first.model_extra["evolve"]["session"]
    second = ask("who am I?", extra_headers={"X-Evolve-Session": sid})
    assert second.model_extra["evolve"]["session"] == sid
    assert second.model_extra["evolve"]["turn"] == 2, second.model_extra
    third = ask("and again?", extra_body={"session": sid})
    assert third.model_extra["evolve"]["session"] == sid
    assert third.model_extra["evolve"]["turn"] == 3, third.model_extra
    # A stream continues the session too.
    stream = ask("streamed fourth", stream=True, extra_headers={"X-Evolve-Session": sid})
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert streamed == "echo: streamed fourth", streamed
    # The session holds every turn once, not the clients' copies of the history.
    contents = [m["content"] for m in get_json(f"/v1/sessions/{sid}/messages")["data"]]
    assert contents == [
        "my name is Ada",
        "echo: my name is Ada",
        "who am I?",
        "echo: who am I?",
        "and again?",
        "echo: and again?",
        "streamed fourth",
        "echo: streamed fourth",
    ], contents
    assert get_json(f"/v1/sessions/{sid}/turns/3")["reply"] == "echo: and again?"


def test_an_unknown_session_is_not_found():
    for kw in ({"extra_headers": {"X-Evolve-Session": "snope"}}, {"extra_body": {"session": "snope"}}):
        try:
            ask("hi", **kw)
        except openai.NotFoundError as e:
            assert e.status_code == 404 and e.type == "not_found_error", (e.status_code, e.body)
            assert "snope" in e.message, e.message
        else:
            raise AssertionError(f"no error for an unknown session ({kw})")


def test_bad_bodies_are_bad_requests():
    cases = [
        {"messages": [{"role": "system", "content": "no user message"}]},
        {"messages": [{"role": "user", "content": "   "}]},
        {"messages": [{"role": "user", "content": "x"}], "stream": "yes"},
    ]
    for body in cases:
        for stream in (False, True):
            try:
                client.chat.completions.create(
                    model="evolve",
                    messages=body["messages"],
                    extra_body={k: v for k, v in body.items() if k != "messages"},
                    **({"stream": True} if stream and "stream" not in body else {}),
                )
            except openai.BadRequestError as e:
                assert e.type == "invalid_request_error" and e.message, e.body
            else:
                raise AssertionError(f"no error for {body} (stream={stream})")


def test_content_parts_are_read_as_text():
    c = client.chat.completions.create(
        model="evolve",
        messages=[{"role": "user", "content": [{"type": "text", "text": "parts"}, {"type": "text", "text": "work"}]}],
    )
    assert c.choices[0].message.content == "echo: parts\nwork", c.choices[0].message.content


def main():
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    failed = []
    for name, fn in tests:
        try:
            fn()
            print(f"ok    {name}")
        except Exception:
            failed.append(name)
            print(f"FAIL  {name}")
            traceback.print_exc()
    print(f"openai {openai.__version__}: {len(tests) - len(failed)}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
