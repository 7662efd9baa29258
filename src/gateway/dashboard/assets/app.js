// The hermes dashboard's one script: times in the viewer's zone, and the overview kept live
// from the daemon's server-sent events.
"use strict";

function localTimes(root) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) t.textContent = d.toLocaleString();
  }
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  const live = document.querySelector("[data-events]");
  if (live && window.EventSource) {
    const events = new EventSource(live.dataset.events);
    events.onmessage = (e) => { live.innerHTML = e.data; localTimes(live); };
  }
});
