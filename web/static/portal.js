// Progressive enhancement for the Herald portal. Every page works without
// this file; it only makes times local, secrets copyable and replay progress
// live. Loaded as an external file because the Content-Security-Policy
// allows no inline script.
"use strict";

(function () {
  // Times: the server writes UTC; show the viewer's own zone and keep UTC in
  // the tooltip.
  var fmt = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
  });
  function localizeTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) { el.textContent = fmt.format(d); }
    });
  }

  // Copy to clipboard: buttons are hidden until this script shows them.
  function enableCopy(root) {
    root.querySelectorAll("button[data-copy]").forEach(function (btn) {
      var target = document.getElementById(btn.getAttribute("data-copy"));
      if (!target || !navigator.clipboard) { return; }
      btn.hidden = false;
      btn.addEventListener("click", function () {
        navigator.clipboard.writeText(target.textContent.trim()).then(function () {
          btn.textContent = "Copied";
          setTimeout(function () { btn.textContent = "Copy"; }, 2000);
        }, function () {
          btn.textContent = "Copy failed";
        });
      });
    });
  }

  // Replay progress: poll the JSON progress URL until the replay completes.
  function followProgress(root) {
    var box = root.querySelector("[data-progress-url]");
    if (!box) { return; }
    var url = box.getAttribute("data-progress-url");
    var bar = box.querySelector("progress");
    function set(name, value) {
      var el = box.querySelector('[data-field="' + name + '"]');
      if (el) { el.textContent = String(value); }
    }
    function tick() {
      fetch(url, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
        .then(function (p) {
          bar.max = Math.max(p.total, 1);
          bar.value = p.total === 0 ? (p.completed ? 1 : 0) : p.done;
          bar.textContent = p.percent + "%";
          set("percent", p.percent);
          set("done", p.done);
          set("total", p.total);
          set("enqueued", p.enqueued);
          set("state", p.completed ? "finished" : "running");
          if (!p.completed) { setTimeout(tick, 1000); }
        })
        .catch(function () { setTimeout(tick, 3000); });
    }
    tick();
  }

  function init() {
    localizeTimes(document);
    enableCopy(document);
    followProgress(document);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
