"""The official `openai` Python client (from PyPI) against hermes' HTTP API, for its tests.

Usage: openai_client.py BASE_URL KEY STEP...   each STEP a JSON object:
  {"do": "complete", "messages": [...], "model": "hermes", "user": "...", "stream": false}
  {"do": "models"}
  {"do": "respond", "input": "...", "previous_from": K, "conversation": "...", "stream": false}
  {"do": "retrieve", "id_from": K}     (K: the index of an earlier step whose id to use)
Prints one JSON line per step: the answer's text and usage, the model ids, or the error's class
name and status code.
"""
import json
import sys

import openai

base_url, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=60)


results = []


def respond(step):
    kwargs = {"model": step.get("model", "hermes"), "input": step["input"]}
    if "previous_from" in step:
        kwargs["previous_response_id"] = results[step["previous_from"]]["id"]
    if "conversation" in step:
        kwargs["conversation"] = step["conversation"]
    if step.get("stream"):
        deltas, kinds, final = "", [], None
        with client.responses.stream(**kwargs) as stream:
            for event in stream:
                kinds.append(event.type)
                if event.type == "response.output_text.delta":
                    deltas += event.delta
            final = stream.get_final_response()
        return {"id": final.id, "text": final.output_text, "deltas": deltas, "events": kinds,
                "status": final.status}
    r = client.responses.create(**kwargs)
    return {"id": r.id, "text": r.output_text, "status": r.status,
            "usage": r.usage.model_dump() if r.usage else None}


def run(step):
    if step["do"] == "models":
        return {"models": sorted(m.id for m in client.models.list())}
    if step["do"] == "respond":
        return respond(step)
    if step["do"] == "retrieve":
        r = client.responses.retrieve(results[step["id_from"]]["id"])
        return {"id": r.id, "text": r.output_text, "status": r.status}
    kwargs = {"model": step.get("model", "hermes"), "messages": step["messages"]}
    if "user" in step:
        kwargs["user"] = step["user"]
    if step.get("stream"):
        text, usage, finish, chunks = "", None, None, 0
        stream = client.chat.completions.create(
            stream=True, stream_options={"include_usage": True}, **kwargs
        )
        for chunk in stream:
            chunks += 1
            if chunk.usage is not None:
                usage = chunk.usage.model_dump()
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
        return {"text": text, "usage": usage, "finish": finish, "chunks": chunks}
    r = client.chat.completions.create(**kwargs)
    return {
        "text": r.choices[0].message.content,
        "usage": r.usage.model_dump() if r.usage else None,
        "finish": r.choices[0].finish_reason,
        "id": r.id,
    }


for raw in sys.argv[3:]:
    try:
        out = run(json.loads(raw))
    except openai.APIStatusError as e:
        out = {"error": type(e).__name__, "status": e.status_code, "message": str(e)}
    results.append(out)
    print(json.dumps(out), flush=True)
