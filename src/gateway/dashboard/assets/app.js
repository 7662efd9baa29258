// The hermes dashboard's one script: times in the viewer's zone, the overview kept live from the
// daemon's server-sent events, and the chat page's answers streamed in as they are written.
"use strict";

function localTimes(root) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) t.textContent = d.toLocaleString();
  }
}

function bubble(log, role, text) {
  const div = document.createElement("div");
  div.className = "bubble " + role;
  const body = document.createElement("div");
  body.className = "text";
  body.textContent = text;
  div.appendChild(body);
  log.appendChild(div);
  div.scrollIntoView({ block: "end" });
  return body;
}

// One server-sent event ("event: …" and "data: …" lines) of the API's stream.
function handle(raw, log, answer) {
  let name = "message";
  const data = [];
  for (const line of raw.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  const text = data.join("\n");
  if (!text || text === "[DONE]") return;
  if (name === "hermes.note") {
    const note = bubble(log, "note", text);
    const link = document.createElement("a");
    link.href = "/approvals";
    link.textContent = " Answer it under Approvals.";
    note.appendChild(link);
    return;
  }
  let chunk;
  try { chunk = JSON.parse(text); } catch (e) { return; }
  if (chunk.error) {
    bubble(log, "note error", chunk.error.message || "the agent did not answer");
    return;
  }
  const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
  if (delta && delta.content) {
    answer.textContent += delta.content;
    answer.parentElement.scrollIntoView({ block: "end" });
  }
}

function chat(form) {
  const log = document.getElementById("chat-log");
  const field = form.querySelector("textarea");
  const button = form.querySelector("button");
  field.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const said = field.value.trim();
    if (!said) return;
    const params = new URLSearchParams(new FormData(form));
    params.set("stream", "1");
    const hint = document.getElementById("chat-empty");
    if (hint) hint.remove();
    bubble(log, "user", said);
    field.value = "";
    button.disabled = true;
    const answer = bubble(log, "assistant", "");
    answer.parentElement.classList.add("streaming");
    try {
      const r = await fetch(form.action, { method: "POST", body: params });
      if (!r.ok) {
        answer.parentElement.remove();
        bubble(log, "note error", (await r.text()).trim() || ("the dashboard answered " + r.status));
        return;
      }
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          handle(buffer.slice(0, end), log, answer);
          buffer = buffer.slice(end + 2);
        }
      }
      if (buffer.trim()) handle(buffer, log, answer);
    } catch (err) {
      bubble(log, "note error", "The connection broke: " + err.message);
    } finally {
      answer.parentElement.classList.remove("streaming");
      if (!answer.textContent) answer.parentElement.remove();
      button.disabled = false;
      field.focus();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  const live = document.querySelector("[data-events]");
  if (live && window.EventSource) {
    const events = new EventSource(live.dataset.events);
    events.onmessage = (e) => { live.innerHTML = e.data; localTimes(live); };
  }
  const form = document.getElementById("chat-form");
  if (form && window.fetch && window.TextDecoder) chat(form);
  const log = document.getElementById("chat-log");
  if (log && log.lastElementChild) log.lastElementChild.scrollIntoView({ block: "end" });
});
