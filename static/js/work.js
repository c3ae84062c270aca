/* The worker's page: keys, focus after htmx swaps, the instructions, the answer widget's set-up.
 *
 * Each answer widget's behaviour is its own script (static/js/widgets/<name>.js, chosen by the task's answer
 * kind, tasks_data/kinds.py), registered here with CluesWork.widget(name, {init, key}) for the elements with
 * data-widget="<name>": init(root) sets one up; key(e, root) sees the page's keys first and returns true
 * when it took one.
 */
(function () {
  "use strict";

  function $(root, sel) { return root.querySelector(sel); }
  function $$(root, sel) { return Array.prototype.slice.call(root.querySelectorAll(sel)); }
  function num(el, name) { return parseInt(el.getAttribute(name), 10); }
  function isField(el) { // where typed keys belong to the element (a radio button is not one)
    return !!el && (el.isContentEditable || /^(TEXTAREA|SELECT)$/.test(el.tagName) ||
      (el.tagName === "INPUT" && !/^(radio|checkbox)$/.test(el.type)));
  }
  function isControl(el) {
    return !!el && (isField(el) || /^(BUTTON|A|SUMMARY)$/.test(el.tagName));
  }
  function quoted(text) { return "\u201c" + text + "\u201d"; }
  function say(root, text) {
    var status = $(root, "[data-status]");
    if (status) { status.textContent = text; }
    var row = $(root, "[data-touch-text]");
    if (row && text) { row.textContent = text; }
  }

  var widgets = {};
  window.CluesWork = {
    $: $, $$: $$, num: num, quoted: quoted, say: say, isField: isField, isControl: isControl,
    widget: function (name, behaviour) {
      widgets[name] = behaviour;
      init(document); // a widget already on the page (this script may come after the first set-up)
    }
  };

  /* ------------------------------------------------------------ keys */

  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || isField(e.target) || e.repeat) { return; }
    var stage = document.getElementById("stage");
    if (!stage) { return; }
    if (isField(document.activeElement)) { return; }
    // A key may come between an htmx swap and htmx:load: set the new widget up first.
    $$(stage, "[data-widget]").forEach(function (w) { if (!w.dataset.ready && w.parentNode) { init(w.parentNode); } });
    var widget = $(stage, "[data-widget]");
    var behaviour = widget && widgets[widget.getAttribute("data-widget")];
    if (behaviour && behaviour.key && widget.dataset.ready && behaviour.key(e, widget)) { return; }
    var next = $(stage, '[data-role="next"]');
    if (next && e.key === "Enter" && !isControl(e.target)) {
      e.preventDefault();
      next.click();
      return;
    }
    var undo = $(stage, '[data-role="undo"]');
    if (undo && (e.key === "u" || e.key === "U") && !e.shiftKey && !isControl(e.target)) {
      e.preventDefault();
      undo.click();
    }
  });

  /* ------------------------------------------------------------ common */

  // The instructions stay as the worker left them (open or closed) on every item and feedback page: a cookie, so
  // that the server renders them that way (no flash after each swap). Only the worker's own toggle (a click or a
  // key on the summary) writes it: "toggle" events also come when the page opens or closes them.
  document.addEventListener("click", function (e) {
    var summary = e.target.closest ? e.target.closest("details[data-remember] > summary") : null;
    if (!summary) { return; }
    var details = summary.parentNode;
    setTimeout(function () {
      document.cookie = "clues_instructions=" + (details.open ? "open" : "closed") +
        "; path=/; max-age=31536000; SameSite=Lax";
    }, 0);
  });

  function copy(button) {
    var target = document.querySelector(button.getAttribute("data-copy"));
    if (!target) { return; }
    var text = target.value !== undefined ? target.value : target.textContent;
    var done = function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {});
    } else {
      var range = document.createRange();
      range.selectNodeContents(target);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      try { document.execCommand("copy"); done(); } catch (err) { /* the text stays selected */ }
    }
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest ? e.target.closest("[data-copy]") : null;
    if (button) { copy(button); }
  });

  function init(scope) {
    $$(scope, "[data-widget]").forEach(function (w) {
      var behaviour = widgets[w.getAttribute("data-widget")];
      if (behaviour && !w.dataset.ready) { w.dataset.ready = "1"; behaviour.init(w); }
    });
    // Until the worker chooses, instructions start open, except on a phone where they would hide the text.
    if (document.cookie.indexOf("clues_instructions=") < 0 && window.matchMedia("(max-width: 640px)").matches) {
      $$(scope, "details[data-remember][open]").forEach(function (d) { d.open = false; });
    }
    $$(scope, "[data-percent]").forEach(function (bar) {
      bar.style.width = Math.max(0, Math.min(100, parseInt(bar.getAttribute("data-percent"), 10) || 0)) + "%";
    });
    $$(scope, "[data-auto-redirect]").forEach(function (el) {
      if (el.dataset.ready) { return; }
      el.dataset.ready = "1";
      setTimeout(function () { window.location.assign(el.getAttribute("data-auto-redirect")); }, 1500);
    });
    $$(scope, "form[data-autosubmit]").forEach(function (form) {
      if (form.dataset.ready) { return; }
      form.dataset.ready = "1";
      setTimeout(function () { form.submit(); }, 1500);
    });
  }

  /* ------------------------------------------------------------ the part's clock */

  // The server says how many seconds the part has left as it made the page (data-seconds-left): the page counts
  // down from them on its own monotonic clock (a device's time of day may be wrong), shows the warning and the
  // offer to end the part once data-warn-seconds are left, and when the time is up loads the stage again: the
  // server ends the part there and shows the code. One timer for the page; each swapped stage brings its own figure.
  function clockText(seconds) {
    var whole = Math.max(0, Math.ceil(seconds - 1e-3));
    var h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), s = whole % 60;
    var two = function (n) { return (n < 10 ? "0" : "") + n; };
    return h ? h + ":" + two(m) + ":" + two(s) : m + ":" + two(s);
  }
  function startClock(el) {
    if (el.dataset.ends) { return; }
    el.dataset.ends = String(performance.now() + 1000 * parseFloat(el.getAttribute("data-seconds-left")));
  }
  function tick() {
    var el = document.querySelector("[data-countdown]");
    if (!el) { return; }
    startClock(el);
    var left = (parseFloat(el.dataset.ends) - performance.now()) / 1000;
    var shown = $(el, '[data-role="clock"]');
    if (shown) { shown.textContent = clockText(left); }
    if (el.hidden && left <= parseFloat(el.getAttribute("data-warn-seconds"))) { el.hidden = false; }
    if (left > 0 || el.dataset.over) { return; }
    el.dataset.over = "1";
    el.hidden = false;
    var note = $(el, '[data-role="clock-note"]');
    if (note) { note.textContent = "The time for this part has passed. Your answers are kept: your code is on its way."; }
    var stage = document.getElementById("stage");
    if (stage) { $$(stage, "form button").forEach(function (b) { b.disabled = true; }); }
    // A moment after the deadline (the server's clock, not this one, decides): the server ends the part.
    setTimeout(function () {
      if (window.htmx && document.body.contains(el)) {
        window.htmx.ajax("GET", el.getAttribute("data-refresh"), { target: "#stage", swap: "outerHTML" });
      }
    }, 1500);
  }
  setInterval(tick, 250);

  // Buttons of a form in flight are disabled: a double click or key repeat sends one answer.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    if (form && form.tagName === "FORM") {
      $$(form, "button").forEach(function (b) { b.disabled = true; });
    }
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var form = e.detail.elt;
    if (!e.detail.successful && form && document.body.contains(form)) {
      $$(form, "button").forEach(function (b) { b.disabled = false; });
      var w = $(form, "[data-widget]");
      var code = e.detail.xhr ? e.detail.xhr.status : 0;  // 0: no response at all
      if (w) {
        say(w, code === 0 ? "The server could not be reached. Your answer was not sent: please try again."
          : code === 503 ? "The server is busy for a moment. Your answer was not saved: please try again in a few seconds."
          : "The server failed (error " + code + "). Your answer was not saved: please try again; if it happens " +
            "again, tell the researcher.");
      }
    }
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    var stage = document.getElementById("stage");
    if (!stage || !e.detail.elt || e.detail.elt.id !== "stage") { return; }
    var active = document.activeElement;
    if (active && active !== document.body && stage.contains(active)) { return; } // already working here
    focusStage(stage);
    window.scrollTo({ top: 0 });
  });
  // The page's first control of interest gets the focus without scrolling (an autofocus attribute would scroll
  // the feedback's verdict out of view to reach the Next button): Enter then acts on it.
  function focusStage(stage) {
    var target = $(stage, "[data-autofocus]") || $(stage, "h1[tabindex]");
    if (target) { target.focus({ preventScroll: true }); }
    showGold(stage);
  }
  // The feedback's text scrolls inside its own bounded pane (site.css): the pane, never the page, is scrolled so
  // that the correct answer (else the worker's) sits in its upper third, with the verdict still in view.
  function showGold(stage) {
    Array.prototype.forEach.call(stage.querySelectorAll("[data-gold-pane]"), function (pane) {
      var mark = pane.querySelector("mark.gold") || pane.querySelector("mark.mine");
      if (!mark || pane.scrollHeight <= pane.clientHeight) { return; }
      var at = mark.getBoundingClientRect().top - pane.getBoundingClientRect().top;
      pane.scrollTop += at - pane.clientHeight / 3;
    });
  }
  function firstLoad() {
    init(document);
    var stage = document.getElementById("stage");
    var active = document.activeElement;
    if (stage && (!active || active === document.body)) { focusStage(stage); }
  }
  document.addEventListener("htmx:load", function (e) { init(e.detail.elt); });
  // A key or a click may reach a freshly swapped widget before htmx:load: set it up first (capture phase).
  ["pointerdown", "keydown", "focusin", "click"].forEach(function (type) {
    document.addEventListener(type, function (e) {
      var widget = e.target && e.target.closest ? e.target.closest("[data-widget]") : null;
      if (widget && !widget.dataset.ready && widget.parentNode) { init(widget.parentNode); }
    }, true);
  });
  if (document.readyState !== "loading") { firstLoad(); } else { document.addEventListener("DOMContentLoaded", firstLoad); }

  // A page restored from the back-forward cache may show a stale item: fetch the current one.
  window.addEventListener("pageshow", function (e) {
    if (e.persisted) { window.location.reload(); }
  });
})();
