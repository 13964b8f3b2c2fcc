// The live view's updates: the server sends the live part of the page,
// rendered as the page renders it, each time it changes. Without this
// script (or EventSource) a reload shows the same.
"use strict";
(function () {
  var live = document.getElementById("live");
  if (!live || !window.EventSource) return;
  var es = new EventSource(live.getAttribute("data-stream"));
  es.addEventListener("live", function (ev) {
    live.innerHTML = JSON.parse(ev.data).html;
    live.setAttribute("data-updated", String(Date.now()));
  });
  es.addEventListener("error", function () {
    live.setAttribute("data-stale", "true");
  });
  es.addEventListener("open", function () {
    live.removeAttribute("data-stale");
  });
})();
