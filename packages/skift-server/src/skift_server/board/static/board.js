// The skift board's one script: progressive enhancement only (every page works without it).
// - The sign-in page posts its code at once.
// - Pages with a [data-live] region re-read it when the change stream says something
//   committed (server-sent events from /live; the browser resumes from the last event id
//   after a reconnect). An item whose form the person is filling in is kept as it is.
(function () {
  "use strict";
  var signin = document.querySelector("form[data-autosubmit]");
  if (signin) { signin.submit(); return; }

  var live = document.querySelector("[data-live]");
  var status = document.getElementById("live-status");
  if (!live || !window.EventSource || !status) return;

  function say(text) { status.textContent = text; }

  function busyKeys(root) {
    var keys = new Set();
    root.querySelectorAll("[data-key]").forEach(function (el) {
      var fields = el.querySelectorAll("textarea, input:not([type=hidden])");
      var busy = el.contains(document.activeElement);
      fields.forEach(function (f) { if (f.value) busy = true; });
      if (busy) keys.add(el.getAttribute("data-key"));
    });
    return keys;
  }

  function merge(fresh) {
    var busy = busyKeys(live);
    fresh.querySelectorAll("[data-key]").forEach(function (el) {
      var key = el.getAttribute("data-key");
      if (!busy.has(key)) return;
      var old = live.querySelector('[data-key="' + CSS.escape(key) + '"]');
      if (old) el.replaceWith(old);
    });
    live.replaceChildren.apply(live, Array.prototype.slice.call(fresh.childNodes));
  }

  var pending = null;
  var running = false;
  function refresh() {
    pending = null;
    if (running) { pending = setTimeout(refresh, 100); return; }
    running = true;
    fetch(location.href, { credentials: "same-origin", headers: { "x-board-live": "1" } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelector("[data-live]");
        if (fresh) { merge(fresh); say("Updated " + new Date().toLocaleTimeString()); }
      })
      .catch(function () { say("Could not update; retrying on the next change"); })
      .finally(function () { running = false; });
  }

  var after = document.body.getAttribute("data-cursor") || "";
  var source = new EventSource("/live" + (after ? "?after=" + encodeURIComponent(after) : ""));
  source.addEventListener("change", function () {
    if (!pending) pending = setTimeout(refresh, 80);
  });
  source.addEventListener("open", function () { say("Live"); });
  source.addEventListener("error", function () { say("Reconnecting…"); });
})();
